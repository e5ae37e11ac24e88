"""One video as plain lists and small arrays for the scalar twins, and the "no answer" signal.

Keyframes are sorted by frame number; a window is a list of keyframe positions; an instance's
keyframes are those with start <= secs <= end (float32, as ``SceneBatch.inst_frames``), and
instances without any are left out, as in AGQA's graph. Instances are ordered by (start, end, class).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.engine.primitives.filter import ANY_PRESENT, interaction_relations
from tensorqa.scenes.batch import SceneBatch, VideoScene

# a benchmark's semantic switches, read by attribute (AGQA's: ``agqa.semantics.Semantics``)
Switches = Any


@dataclass(frozen=True)
class Undefined:
    """The program has no answer on this video (the question would not be generated). Falsy."""

    reason: str

    def __bool__(self) -> bool:
        return False


class NoAnswer(Exception):
    """Raised by a scalar twin when the answer is undefined; the executor turns it into :class:`Undefined`."""


@dataclass(frozen=True)
class Entity:
    kind: str  # "object" or "action"
    index: int


@dataclass
class Instance:
    cls: int
    start: np.float32
    end: np.float32
    frames: list[int]  # keyframe positions, ascending


@dataclass
class Window:
    kind: str  # "video", "before", "after", "while", "between"
    frames: list[int]  # keyframe positions, ascending


def one(found, what: str) -> int:
    """The single element of ``found`` (a set, or a bool vector's true positions), else no answer."""
    items = found if isinstance(found, set) else set(np.flatnonzero(found).tolist())
    if len(items) != 1:
        raise NoAnswer(f"{len(items)} candidate {what}s, not one")
    return int(next(iter(items)))


class ScalarVideo:
    """One video's keyframes and instances (positions index the sorted keyframes)."""

    def __init__(self, scene: VideoScene):
        s = scene.sorted()
        self.video_id = s.video_id
        self.num_frames = s.num_frames
        self.frame_ids = [int(x) for x in s.frame_ids]
        self.secs = [np.float32(x) for x in s.frame_secs]
        self.rel = np.asarray(s.rel, bool)  # [F, O, R]
        self.obj = np.asarray(s.obj, bool)  # [F, O]
        self.instances: list[Instance] = []
        for n in range(s.num_instances):
            start, end = np.float32(s.inst_start[n]), np.float32(s.inst_end[n])
            frames = [f for f in range(self.num_frames) if start <= self.secs[f] <= end]
            if frames:  # an instance without keyframes is not in AGQA's graph
                self.instances.append(Instance(int(s.inst_cls[n]), start, end, frames))
        self._contact: dict[str, np.ndarray] = {}

    def instances_of(self, cls: int) -> list[Instance]:
        return [i for i in self.instances if i.cls == cls]

    def classes_at(self, f: int) -> set[int]:
        return {i.cls for i in self.instances if f in i.frames}

    def relation_occurs(self, f: int, r: int) -> bool:
        return bool(self.rel[f, :, r].any())

    def contact(self, rule: str) -> np.ndarray:
        """bool[F, O]: at keyframe f the person interacts with object o under ``rule`` (§c.1)."""
        if rule not in self._contact:
            relations = interaction_relations(rule)
            self._contact[rule] = self.obj.copy() if rule == ANY_PRESENT else self.rel[:, :, relations].any(-1)
        return self._contact[rule]


def scene_of(source, video_id: str | None) -> VideoScene:
    """The one scene ``source`` (a VideoScene, SceneBatch, mapping or SceneStore) holds for ``video_id``."""
    if isinstance(source, VideoScene):
        if video_id is not None and video_id != source.video_id:
            raise TensorQAError(f"run_program: scene is video {source.video_id!r}, not {video_id!r}")
        return source
    if video_id is None:
        raise TensorQAError("run_program: a video_id is needed to pick a video from the source")
    if isinstance(source, SceneBatch):
        if video_id not in source.video_ids:
            raise TensorQAError(f"run_program: no video {video_id!r} in the batch")
        return source[source.video_ids.index(video_id)].scenes()[0]
    if isinstance(source, Mapping):
        if video_id not in source:
            raise TensorQAError(f"run_program: no video {video_id!r} in the mapping")
        return source[video_id]
    if hasattr(source, "scene"):  # SceneStore (imported lazily: it needs h5py)
        return source.scene(video_id)
    raise TensorQAError(f"run_program: cannot read videos from a {type(source).__name__}")
