"""Scalar twins of the window filters (``engine/primitives/filter.py``): bool vectors over objects [O],
relations [R] or actions [A] (``relate``: bool[O, R])."""

from __future__ import annotations

import numpy as np

from tensorqa.engine.primitives.registry import register
from tensorqa.engine.scalar.video import ScalarVideo, Window
from tensorqa.scenes.vocab import vocab


@register("relate", backend="scalar")
def relate(video: ScalarVideo, w: Window) -> np.ndarray:
    return video.rel[w.frames].any(0)


@register("relations_present", backend="scalar")
def relations_present(video: ScalarVideo, w: Window) -> np.ndarray:
    return video.rel[w.frames].any((0, 1))


@register("objects_present", backend="scalar")
def objects_present(video: ScalarVideo, w: Window) -> np.ndarray:
    return video.obj[w.frames].any(0)


@register("contacted", backend="scalar")
def contacted(video: ScalarVideo, w: Window, rule: str) -> np.ndarray:
    return video.contact(rule)[w.frames].any(0)


@register("actions_in", backend="scalar")
def actions_in(video: ScalarVideo, w: Window) -> np.ndarray:
    out = np.zeros(vocab().num_actions, bool)
    frames = set(w.frames)
    for inst in video.instances:
        if frames.intersection(inst.frames):
            out[inst.cls] = True
    return out


@register("present_objects", backend="scalar")
def present_objects(video: ScalarVideo) -> np.ndarray:
    return (video.obj.any(0) | video.rel.any((0, 2))) if video.num_frames else np.zeros(video.obj.shape[1], bool)


@register("present_relations", backend="scalar")
def present_relations(video: ScalarVideo) -> np.ndarray:
    return video.rel.any((0, 1)) if video.num_frames else np.zeros(video.rel.shape[2], bool)
