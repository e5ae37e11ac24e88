"""Scalar twins of ``side_of`` (relTime / objTime) and ``act_order`` (actTime), ``engine/primitives/order.py``."""

from __future__ import annotations

import numpy as np

from tensorqa.engine.primitives.registry import register
from tensorqa.engine.scalar.video import NoAnswer, ScalarVideo, Switches
from tensorqa.scenes.vocab import NO_OBJECT, vocab

Windows = tuple[list[int], list[int], list[int]]


@register("side_of", backend="scalar")
def side_of(occurs: np.ndarray, windows: Windows) -> str:
    """``occurs``: bool[F], the relation / object at each keyframe."""
    before, during, after = windows
    if occurs[during].any():
        raise NoAnswer("compare: it occurs during the action")
    b, a = bool(occurs[before].any()), bool(occurs[after].any())
    if b == a:
        raise NoAnswer("compare: it occurs on both sides" if b else "compare: it does not occur")
    return "before" if b else "after"


@register("act_order", backend="scalar")
def act_order(video: ScalarVideo, sem: Switches, x: int, windows: Windows) -> str:
    before, during, after = windows
    xs = video.instances_of(x)
    if len(xs) != 1:
        raise NoAnswer(f"actTime: {vocab().action_phrases[x]!r} has {len(xs)} instances, not one")
    inner = xs[0].frames
    if all(f in during for f in inner):
        raise NoAnswer("actTime: the action lies within the other")
    if all(f in before for f in inner):
        if _persists(video, sem, x, after):
            raise NoAnswer("actTime: the action's relation persists after the other")
        return "before"
    if all(f in after for f in inner):
        if _persists(video, sem, x, before):
            raise NoAnswer("actTime: the action's relation persists before the other")
        return "after"
    raise NoAnswer("actTime: the actions overlap")


def _persists(video: ScalarVideo, sem: Switches, x: int, frames: list[int]) -> bool:
    """actTime's persistence check: x's (object, verb relation) occurs in one of ``frames``."""
    if not sem.act_time_persistence_check:
        return False
    voc = vocab()
    o = voc.action_object[x]
    r = voc.verb_relation[voc.action_verb[x]]
    if o == NO_OBJECT or r < 0:
        return False
    return bool(video.rel[frames, o, r].any()) if frames else False
