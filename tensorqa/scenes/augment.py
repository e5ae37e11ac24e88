"""AGQA's scene-graph augmentation (AGQA paper §3.1, docs/reference/agqa_semantics.md §c.4), one
switchable rule per function, turning raw scenes into the augmented graphs AGQA's generator assumes:

1. ``merge_synonyms``    fold synonym classes (towel -> blanket) and their actions into one.
2. ``adjust_boundaries`` overlapping instances of one class become one; an action that runs into the
                         next by at most ``overlap_margin`` s is cut (our reading of AGQA's clean-up).
3. ``verb_relations``    an action with verb v and object o puts v's relation and the contact it
                         implies (tidying -> touching) on o at each of its keyframes, o annotated.
4. ``entailments``       entailed relations, closed transitively (carrying => holding => touching).
5. ``prune_single_object`` (dataset level) AG relations seen with one object class only are removed;
                         verb relations are exempt (their object is fixed by their action).

Attention relations stay in the store; ``AugmentConfig.exclude_attention`` tells templates not to use them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.vocab import vocab


@dataclass(frozen=True)
class AugmentConfig:
    merge_synonyms: bool = True
    adjust_boundaries: bool = True
    overlap_margin: float = 1.0  # seconds an action may run into the next and still be cut
    verb_relations: bool = True
    entailments: bool = True
    prune_single_object: bool = True
    exclude_attention: bool = True

    def __post_init__(self) -> None:
        if not (math.isfinite(self.overlap_margin) and self.overlap_margin >= 0):
            raise TensorQAError(f"--overlap-margin must be a number of seconds >= 0, got {self.overlap_margin}")

    def to_dict(self) -> dict:
        return asdict(self)


def merge_synonyms(scene: VideoScene) -> VideoScene:
    """Fold synonym object classes and actions into their targets (vocab ``merged_into``)."""
    v = vocab()
    target = np.array(v.object_merged_into)
    src = np.nonzero(target != np.arange(v.num_objects))[0]
    rel, obj = scene.rel.copy(), scene.obj.copy()
    for s in src:  # three synonym classes; merging is an OR into the target column
        rel[:, target[s]] |= rel[:, s]
        obj[:, target[s]] |= obj[:, s]
        rel[:, s] = False
        obj[:, s] = False
    cls = np.array(v.action_merged_into)[scene.inst_cls] if scene.num_instances else scene.inst_cls
    merged = replace(scene, rel=rel, obj=obj, inst_cls=cls).sorted()
    return _drop_duplicate_instances(merged)


def _drop_duplicate_instances(scene: VideoScene) -> VideoScene:
    """Remove instances identical in class, start and end (merging can create them)."""
    if scene.num_instances < 2:
        return scene
    key = np.stack([scene.inst_cls.astype(np.float64), scene.inst_start, scene.inst_end], 1)
    keep = np.ones(scene.num_instances, bool)
    keep[1:] = np.any(key[1:] != key[:-1], axis=1)  # sorted by (start, end, class): duplicates adjacent
    return replace(scene, inst_cls=scene.inst_cls[keep], inst_start=scene.inst_start[keep], inst_end=scene.inst_end[keep])


def adjust_boundaries(scene: VideoScene, overlap_margin: float = 1.0) -> VideoScene:
    """Merge overlapping instances of one class; cut an action that runs into the next by at most
    ``overlap_margin`` seconds so that it ends just before the next one starts."""
    s = scene.sorted()
    cls, start, end = list(s.inst_cls), list(s.inst_start.astype(np.float64)), list(s.inst_end.astype(np.float64))
    # 1. overlapping (or touching) instances of the same class -> their union
    merged: list[list[float]] = []
    for c, a, b in sorted(zip(cls, start, end), key=lambda t: (t[0], t[1], t[2])):
        if merged and merged[-1][0] == c and a <= merged[-1][2]:
            merged[-1][2] = max(merged[-1][2], b)
        else:
            merged.append([c, a, b])
    merged.sort(key=lambda t: (t[1], t[2], t[0]))
    # 2. an instance whose end falls at most `overlap_margin` after the start of a later-starting,
    #    later-ending instance is cut to end before it (the later action has clearly begun)
    eps = 1e-3
    for i, (ci, ai, bi) in enumerate(merged):
        for cj, aj, bj in merged[i + 1:]:
            if ai < aj and bi < bj and 0 <= bi - aj <= overlap_margin and aj - eps > ai:
                bi = min(bi, aj - eps)
        merged[i][2] = bi
    if not merged:
        return s
    arr = np.array(merged, dtype=np.float64)
    return replace(s, inst_cls=arr[:, 0].astype(np.int64), inst_start=arr[:, 1], inst_end=arr[:, 2]).sorted()


def verb_relations(scene: VideoScene) -> VideoScene:
    """At each keyframe of an action with an object, add its verb relation and implied contact."""
    v = vocab()
    if scene.num_instances == 0 or scene.num_frames == 0:
        return scene
    verb = np.array(v.action_verb)[scene.inst_cls]
    objc = np.array(v.action_object)[scene.inst_cls]
    has_obj = objc >= 0
    # The merged synonym targets: an action whose object was folded (towel) relates to the target
    objc = np.where(has_obj, np.array(v.object_merged_into)[np.maximum(objc, 0)], -1)
    inside = (scene.frame_secs[None, :] >= scene.inst_start[:, None]) & (scene.frame_secs[None, :] <= scene.inst_end[:, None])
    rel, obj = scene.rel.copy(), scene.obj.copy()
    for cols in (np.array(v.verb_relation)[verb], np.array(v.verb_implies)[verb]):
        ok = has_obj & (cols >= 0)
        n_idx, f_idx = np.nonzero(inside & ok[:, None])
        rel[f_idx, objc[n_idx], cols[n_idx]] = True
        obj[f_idx, objc[n_idx]] = True
    return replace(scene, rel=rel, obj=obj)


def entailments(scene: VideoScene) -> VideoScene:
    """Close relations under the entailment table (``Vocab.entailment_closure``)."""
    closure = vocab().entailment_closure().astype(np.float32)  # [R, R]
    rel = (scene.rel.astype(np.float32) @ closure) > 0
    return replace(scene, rel=rel)


def augment_scene(scene: VideoScene, config: AugmentConfig = AugmentConfig()) -> VideoScene:
    """Apply the per-video rules (1-4) in AGQA's order."""
    s = scene.sorted()
    if config.merge_synonyms:
        s = merge_synonyms(s)
    if config.adjust_boundaries:
        s = adjust_boundaries(s, config.overlap_margin)
    if config.verb_relations:
        s = verb_relations(s)
    if config.entailments:
        s = entailments(s)
    return s


def relation_object_counts(scene: VideoScene) -> np.ndarray:
    """int64[O, R]: keyframes at which each (object, relation) pair holds."""
    return scene.rel.sum(0, dtype=np.int64)


def single_object_relations(counts: np.ndarray) -> np.ndarray:
    """bool[R]: AG (non-verb) relations seen with at most one object class in ``counts`` [O, R]."""
    v = vocab()
    objects_per_relation = (counts > 0).sum(0)
    is_verb = np.array(v.relation_kinds) == "verb"
    return (objects_per_relation <= 1) & ~is_verb


def prune_relations(scene: VideoScene, pruned: np.ndarray) -> VideoScene:
    """Clear the relations marked in ``pruned`` bool[R]."""
    if not pruned.any():
        return scene
    rel = scene.rel.copy()
    rel[:, :, pruned] = False
    return replace(scene, rel=rel)
