"""AGQA's augmented spatio-temporal scene graphs (``AGQA_{train,test}_stsgs.pkl``) -> :class:`VideoScene`.

Layout: docs/reference/agqa.md §2.2. The graph is cyclic (``next``, ``prev``, ``while``): only scalar
fields and a relation vertex's direct ``objects`` are read, no link is followed, nothing is copied.
Choices: a vertex's frame is its id's suffix (``'r7/000031'`` -> 31); verb vertices become verb
relations, the five verbs AG relations carry (drink, eat, hold, lie, sit) those relations
(``vocab().verb_relation``), and a verb vertex without an object sets nothing; invisible object
vertices contribute nothing; the split is the ``split`` argument, else the file name (vertex
``metadata`` is ignored: AGQA's train pickle has frames marked ``'test'``).
"""

from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.limits import MAX_FRAME, MAX_INSTANCES, MAX_KEYFRAMES, MAX_SECONDS, EntryBudget, check_name, shown
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.vocab import vocab
from tensorqa.scenes.loaders.action_genome import read_pickle
from tensorqa.scenes.loaders.charades import REVERSED_POLICIES, SPLITS, split_from_name
from tensorqa.scenes.loaders.safe_pickle import load_bounded

PathLike = Union[str, os.PathLike]

RELATION_TYPES = ("attention", "contact", "spatial", "verb")
ACTION_TYPES = ("action", "act")
_ACTION_ID = re.compile(r"c\d{3}")


@functools.cache
def relation_class_index() -> dict[str, int]:
    """AGQA relation class id (``r1``..``r26``, ``v000``..``v032``) -> relation column."""
    v = vocab()
    index = dict(zip(v.relation_ids, range(v.num_relations)))
    for verb_id, column in zip(v.verb_ids, v.verb_relation):
        if column >= 0:
            index.setdefault(verb_id, column)  # drink/eat/hold/lie/sit -> their AG contact relation
    return index


@dataclass
class _Graph:
    """What one video's vertices say, as flat lists (frame numbers, not positions)."""

    frames: dict = field(default_factory=dict)  # frame number -> secs
    rel_f: list = field(default_factory=list)
    rel_o: list = field(default_factory=list)
    rel_r: list = field(default_factory=list)
    obj_f: list = field(default_factory=list)
    obj_o: list = field(default_factory=list)
    hidden: set = field(default_factory=set)  # (frame, object) of invisible object vertices
    inst: list = field(default_factory=list)  # (class, start, end)


class _Reader:
    def __init__(self, path: Path, reversed_intervals: str):
        self.path = path
        self.budget = EntryBudget(path, path.stat().st_size, "AGQA scene-graph")
        self.reversed_intervals = reversed_intervals
        self.relations = relation_class_index()
        self.vocab = vocab()

    def fail(self, video_id, vertex_id, problem: str):
        raise TensorQAError(f"{self.path}: video {video_id!r} vertex {shown(vertex_id)}: {problem}")

    def frame_of(self, video_id, vertex_id) -> int:
        suffix = vertex_id.rpartition("/")[2] if isinstance(vertex_id, str) else ""
        if not (suffix.isascii() and suffix.isdigit()):
            self.fail(video_id, vertex_id, "id does not end in a frame number")
        if len(suffix) > 10 or int(suffix) > MAX_FRAME:
            self.fail(video_id, vertex_id, f"frame number {suffix:.20} is past {MAX_FRAME:,}")
        return int(suffix)

    def seconds(self, video_id, vertex_id, vertex, key: str) -> float:
        """``vertex[key]`` as seconds: a finite number in 0..MAX_SECONDS (bools are not numbers)."""
        value = vertex.get(key)
        try:
            if isinstance(value, bool):
                raise TypeError
            secs = float(value)
        except (TypeError, ValueError, OverflowError):
            self.fail(video_id, vertex_id, f"'{key}' must be a number of seconds, found {shown(value, 40)}")
        if not (math.isfinite(secs) and 0 <= secs <= MAX_SECONDS):
            self.fail(video_id, vertex_id, f"'{key}' {shown(value, 40)} is not a number of seconds in 0..{MAX_SECONDS:,}")
        return secs

    def object_class(self, video_id, vertex_id, name) -> int:
        # names are 'o17' or an object vertex id 'o17/000031'
        cls = name.partition("/")[0] if isinstance(name, str) else name
        try:
            return self.vocab.object_index(cls)
        except (TensorQAError, TypeError):
            self.fail(video_id, vertex_id, f"unknown object class {shown(name)}")

    def read_video(self, video_id, vertices) -> _Graph:
        if not isinstance(vertices, dict):
            found = type(vertices).__name__
            raise TensorQAError(f"{self.path}: video {video_id!r}: expected a dict of vertices, found {found}")
        g = _Graph()
        self.budget.spend(len(vertices))
        for vertex_id, vertex in vertices.items():
            if not isinstance(vertex, dict):
                self.fail(video_id, vertex_id, f"expected a vertex dict, found {type(vertex).__name__}")
            kind = vertex.get("type")
            if kind == "frame":
                frame = self.frame_of(video_id, vertex_id)
                g.frames[frame] = self.seconds(video_id, vertex_id, vertex, "secs")
            elif kind == "object":
                frame = self.frame_of(video_id, vertex_id)
                o = self.object_class(video_id, vertex_id, vertex.get("class"))
                if vertex.get("visible", True):
                    g.obj_f.append(frame)
                    g.obj_o.append(o)
                else:
                    g.hidden.add((frame, o))
            elif kind in RELATION_TYPES:
                self.read_relation(video_id, vertex_id, vertex, g)
            elif kind in ACTION_TYPES:
                self.read_action(video_id, vertex_id, vertex, g)
            else:
                self.fail(video_id, vertex_id, f"unknown vertex type {shown(kind)}")
        return g

    def read_relation(self, video_id, vertex_id, vertex, g: _Graph) -> None:
        frame = self.frame_of(video_id, vertex_id)
        cls = vertex.get("class")
        r = self.relations.get(cls) if isinstance(cls, str) else None
        if r is None:
            self.fail(video_id, vertex_id, f"unknown {vertex['type']} class {shown(cls)}")
        objects = vertex.get("objects") or ()
        if isinstance(objects, dict):  # {'names': [...], 'vertices': [...]}
            objects = objects.get("vertices") or objects.get("names") or ()
        if not isinstance(objects, (list, tuple)):
            found = type(objects).__name__
            self.fail(video_id, vertex_id, f"'objects' must be a list or a names/vertices dict, found {found}")
        self.budget.spend(len(objects))
        for item in objects:
            # a neighbour vertex: read its class only (its own links lead back into the cycle)
            if isinstance(item, dict):
                if not item.get("visible", True):
                    continue  # out of view (see module docstring)
                name = item.get("class")
            else:
                name = item
            g.rel_f.append(frame)
            g.rel_o.append(self.object_class(video_id, vertex_id, name))
            g.rel_r.append(r)

    def read_action(self, video_id, vertex_id, vertex, g: _Graph) -> None:
        cls = vertex.get("charades") or (vertex_id.partition("/")[0] if isinstance(vertex_id, str) else None)
        if not (isinstance(cls, str) and _ACTION_ID.fullmatch(cls)):
            self.fail(video_id, vertex_id, f"unknown action class {shown(cls)}")
        try:
            a = self.vocab.action_index(cls)
        except TensorQAError:
            self.fail(video_id, vertex_id, f"unknown action class {shown(cls)}")
        start = self.seconds(video_id, vertex_id, vertex, "start")
        end = self.seconds(video_id, vertex_id, vertex, "end")
        if end < start:
            if self.reversed_intervals == "error":
                self.fail(video_id, vertex_id, f"action ends ({end}) before it starts ({start})")
            if self.reversed_intervals == "drop":
                return
            start, end = end, start
        g.inst.append((a, start, end))

    def scene(self, video_id, g: _Graph, split: str) -> VideoScene:
        for count, what, limit in ((len(g.frames), "keyframes", MAX_KEYFRAMES), (len(g.inst), "actions", MAX_INSTANCES)):
            if count > limit:
                raise TensorQAError(f"{self.path}: video {video_id!r}: {count:,} {what}; a video holds at most {limit:,}")
        frame_ids = np.array(sorted(g.frames), dtype=np.int64)
        dangling = (set(g.rel_f) | set(g.obj_f) | {f for f, _ in g.hidden}) - g.frames.keys()
        if dangling:
            raise TensorQAError(
                f"{self.path}: video {video_id!r}: object/relation vertices at frame(s) "
                f"{sorted(dangling)[:5]} that have no frame vertex")
        rel_f, rel_o, rel_r = g.rel_f, g.rel_o, g.rel_r
        if g.hidden:  # relations to an object that is out of view at that frame say nothing
            keep = [(f, o) not in g.hidden for f, o in zip(rel_f, rel_o)]
            rel_f, rel_o, rel_r = ([x for x, k in zip(xs, keep) if k] for xs in (rel_f, rel_o, rel_r))
        secs = np.array([g.frames[f] for f in frame_ids.tolist()], dtype=np.float32)
        return VideoScene.from_lists(video_id, frame_ids, secs, (rel_f, rel_o, rel_r), (g.obj_f, g.obj_o), g.inst, split)


def load_agqa_stsgs(path: PathLike, split: str | None = None, reversed_intervals: str = "swap") -> list[VideoScene]:
    """Scenes of every video in an AGQA stsgs pickle, ordered by video id.

    split: "train" / "test"; default from the file name (``AGQA_train_stsgs.pkl``).
    reversed_intervals: ``"swap"`` | ``"drop"`` | ``"error"`` for action vertices with end < start.
    Scenes as :class:`VideoScene` (AG and verb relations, visible object vertices)."""
    path = Path(path)
    if split is not None:
        if split not in SPLITS:
            raise TensorQAError(f"{path}: split must be 'train' or 'test', not {split!r}")
    else:
        split = split_from_name(path, None)
    if reversed_intervals not in REVERSED_POLICIES:
        raise TensorQAError(f"reversed_intervals must be one of {REVERSED_POLICIES}, not {reversed_intervals!r}")
    return load_bounded([path], "AGQA scene-graph", _load, path, split, reversed_intervals)


def _load(path: Path, split: str, reversed_intervals: str) -> list[VideoScene]:
    data = read_pickle(path, dict, "AGQA scene-graph")
    reader = _Reader(path, reversed_intervals)
    scenes = []
    for video_id in data:  # names first: sorting by str() would expand a shared tuple key
        check_name(video_id, str(path), "video id")
    for video_id in sorted(data):
        scenes.append(reader.scene(video_id, reader.read_video(video_id, data[video_id]), split))
    return scenes
