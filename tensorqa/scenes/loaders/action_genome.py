"""Action Genome annotations (``object_bbox_and_relationship.pkl``, ``person_bbox.pkl``) plus the
Charades CSVs -> raw :class:`VideoScene` per video (AG relations only; no verbs, no entailments).

Layout (``JingweiJ/ActionGenome`` README): ``{'VIDEO.mp4/FRAME.png': [object dict]}`` with ``class``,
``bbox``, ``attention_relationship`` / ``spatial_relationship`` / ``contacting_relationship`` (names
with or without underscores), ``visible`` and ``metadata['set']``; ``person_bbox.pkl``'s keys say
which keyframes exist. Choices: keyframes are the union of both pickles' keys; invisible objects
contribute nothing (the person cannot be seen relating to them); keyframe time = frame / fps (24 unless
given: AGQA's graphs show secs ~ frame / 24); actions are the CSV's intervals; the split is AG's
``metadata['set']`` where an object carries it, else the CSV's.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence, Union

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.limits import MAX_FRAME, MAX_KEYFRAMES, MAX_SECONDS, EntryBudget, check_name, shown
from tensorqa.scenes.loaders.safe_pickle import load_bounded, load_untrusted
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.vocab import vocab
from tensorqa.scenes.loaders.charades import SPLITS, CharadesVideo, read_charades_csv

PathLike = Union[str, os.PathLike]

DEFAULT_FPS = 24.0
OBJECTS_FILE = "object_bbox_and_relationship.pkl"
PERSON_FILE = "person_bbox.pkl"
# AG relation list field -> the relation kind its names must have
RELATION_FIELDS = {
    "attention_relationship": "attention",
    "spatial_relationship": "spatial",
    "contacting_relationship": "contact",
}


def read_pickle(path: PathLike, expected: type, what: str):
    """Unpickle an annotation file with the restricted unpickler (a crafted file runs nothing)."""
    data = load_untrusted(path, what)
    if not isinstance(data, expected):
        raise TensorQAError(f"{path}: {what} must be a {expected.__name__}, found {type(data).__name__}")
    return data


@dataclass
class _VideoAcc:
    """Everything gathered for one video while scanning the pickles (frame numbers, not positions)."""

    frames: set = field(default_factory=set)
    rel_f: list = field(default_factory=list)
    rel_o: list = field(default_factory=list)
    rel_r: list = field(default_factory=list)
    obj_f: list = field(default_factory=list)
    obj_o: list = field(default_factory=list)
    split: str | None = None


def _parse_key(key, path: Path) -> tuple[str, int]:
    """``'46GP8.mp4/000031.png'`` -> ``('46GP8', 31)``; the video id is a valid name and the frame
    number fits int32."""
    if isinstance(key, str):
        video_file, sep, frame_file = key.partition("/")
        stem = frame_file.rsplit(".", 1)[0]
        if sep and video_file and stem.isascii() and stem.isdigit():
            video_id = check_name(video_file.rsplit(".", 1)[0], f"{path}: key {shown(key, 80)}", "video id")
            if len(stem) > 10 or int(stem) > MAX_FRAME:
                raise TensorQAError(f"{path}: key {shown(key, 80)}: frame number {stem:.20} is past {MAX_FRAME:,}")
            return video_id, int(stem)
    raise TensorQAError(f"{path}: key {shown(key, 80)} is not 'VIDEO.mp4/FRAME.png'")


class _Names:
    """AG name -> vocabulary index, memoized (the real pickle repeats a few dozen names ~2M times):
    the hot loop reads ``objects`` / ``relations[field]`` and calls the methods on a miss."""

    def __init__(self, path: Path):
        self.path = path
        self.objects: dict = {}
        self.relations: dict = {f: {} for f in RELATION_FIELDS}

    def object(self, name, key) -> int:
        try:
            index = vocab().object_index(name)
        except (TensorQAError, TypeError):
            raise TensorQAError(f"{self.path}: {key}: unknown object class {shown(name)}") from None
        self.objects[name] = index
        return index

    def relation(self, field_name: str, name, key) -> int:
        v = vocab()
        kind = RELATION_FIELDS[field_name]
        try:
            index = v.relation_index(name.replace("_", ""))  # 'in_front_of' -> 'infrontof'
        except (TensorQAError, AttributeError, TypeError):
            index = -1
        if index < 0 or v.relation_kinds[index] != kind:
            raise TensorQAError(f"{self.path}: {key}: unknown {kind} relation {shown(name)} in {field_name}")
        self.relations[field_name][name] = index
        return index


def _scan_objects(annotations: dict, path: Path, videos: dict[str, _VideoAcc]) -> None:
    names = _Names(path)
    budget = EntryBudget(path, path.stat().st_size, "Action Genome object annotation")
    object_cache = names.objects
    relation_caches = tuple(names.relations.items())
    for key, objects in annotations.items():
        video_id, frame = _parse_key(key, path)
        acc = videos.setdefault(video_id, _VideoAcc())
        acc.frames.add(frame)
        if not isinstance(objects, (list, tuple)):
            raise TensorQAError(f"{path}: {key}: expected a list of object dicts, found {type(objects).__name__}")
        budget.spend(len(objects))
        for item in objects:
            if not isinstance(item, dict) or "class" not in item:
                raise TensorQAError(f"{path}: {key}: object entry {shown(item)} is not a dict with a 'class'")
            cls = item["class"]
            try:
                o = object_cache[cls]
            except (KeyError, TypeError):
                o = names.object(cls, key)
            metadata = item.get("metadata")
            split = metadata.get("set") if isinstance(metadata, dict) else None
            if split is not None and split != acc.split:
                if split not in SPLITS:
                    raise TensorQAError(f"{path}: {key}: metadata set {shown(split)} is not 'train' or 'test'")
                if acc.split is not None:
                    raise TensorQAError(f"{path}: {key}: video {video_id!r} is in both 'train' and 'test'")
                acc.split = split
            if not item.get("visible", True):
                continue  # out of view: AG keeps the entry but nothing is seen of the object
            acc.obj_f.append(frame)
            acc.obj_o.append(o)
            n = len(acc.rel_r)
            for field_name, cache in relation_caches:
                listed = item.get(field_name) or ()
                if not isinstance(listed, (list, tuple)):
                    raise TensorQAError(f"{path}: {key}: {field_name} is a list of relation names, "
                                        f"found {type(listed).__name__}")
                budget.spend(len(listed))
                for name in listed:
                    try:
                        acc.rel_r.append(cache[name])
                    except (KeyError, TypeError):
                        acc.rel_r.append(names.relation(field_name, name, key))
            n = len(acc.rel_r) - n
            acc.rel_f.extend([frame] * n)
            acc.rel_o.extend([o] * n)


def _scene(video_id: str, acc: _VideoAcc, charades: CharadesVideo, fps: float) -> VideoScene:
    if len(acc.frames) > MAX_KEYFRAMES:
        raise TensorQAError(f"video {video_id!r}: {len(acc.frames):,} keyframes in Action Genome; "
                            f"a video holds at most {MAX_KEYFRAMES:,}")
    frame_ids = np.array(sorted(acc.frames), dtype=np.int64)
    if len(frame_ids) and not frame_ids[-1] / fps <= MAX_SECONDS:
        raise TensorQAError(f"video {video_id!r}: frame {frame_ids[-1]} at {fps} fps lies past {MAX_SECONDS:,} s")
    return VideoScene.from_lists(video_id, frame_ids, frame_ids / fps, (acc.rel_f, acc.rel_o, acc.rel_r),
                                 (acc.obj_f, acc.obj_o), charades.actions, acc.split or charades.split)


def load_action_genome(
    ag_dir: PathLike,
    charades_csvs: PathLike | Iterable[PathLike] | Sequence[CharadesVideo],
    fps: float | None = None,
) -> list[VideoScene]:
    """Raw scenes of every video annotated in Action Genome, ordered by video id.

    ag_dir: folder holding ``object_bbox_and_relationship.pkl`` and ``person_bbox.pkl``.
    charades_csvs: the Charades CSV path(s), or rows already read with ``read_charades_csv``;
        every AG video must appear there (its action instances come from it).
    fps: keyframe time = frame number / fps; default 24.

    Scenes as :class:`VideoScene` (AG relations only)."""
    fps = DEFAULT_FPS if fps is None else float(fps)
    if not (math.isfinite(fps) and fps > 0):
        raise TensorQAError(f"fps must be a positive number, not {fps!r}")
    ag_dir = Path(ag_dir)
    objects_path, person_path = ag_dir / OBJECTS_FILE, ag_dir / PERSON_FILE
    return load_bounded([objects_path, person_path], "Action Genome", _load, ag_dir, charades_csvs, fps)


def _load(ag_dir: Path, charades_csvs, fps: float) -> list[VideoScene]:
    objects_path, person_path = ag_dir / OBJECTS_FILE, ag_dir / PERSON_FILE
    annotations = read_pickle(objects_path, dict, "Action Genome object annotation")
    persons = read_pickle(person_path, dict, "Action Genome person box")

    rows = list(charades_csvs) if not isinstance(charades_csvs, (str, os.PathLike)) else [charades_csvs]
    if not (rows and all(isinstance(r, CharadesVideo) for r in rows)):
        rows = read_charades_csv(rows)
    charades = {r.video_id: r for r in rows}

    videos: dict[str, _VideoAcc] = {}
    for key in persons:
        video_id, frame = _parse_key(key, person_path)
        videos.setdefault(video_id, _VideoAcc()).frames.add(frame)
    _scan_objects(annotations, objects_path, videos)

    missing = sorted(set(videos) - set(charades))
    if missing:
        more = f" (+{len(missing) - 5} more)" if len(missing) > 5 else ""
        listed = ", ".join(repr(m) for m in missing[:5])
        raise TensorQAError(f"{ag_dir}: video(s) {listed}{more} are in Action Genome but not in the Charades CSVs")
    return [_scene(video_id, videos[video_id], charades[video_id], fps) for video_id in sorted(videos)]
