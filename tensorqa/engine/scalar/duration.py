"""Scalar twins of ``superlative`` and ``length_compare`` (``engine/primitives/duration.py``)."""

from __future__ import annotations

import numpy as np

from tensorqa.engine.primitives.registry import register
from tensorqa.engine.scalar.video import NoAnswer, ScalarVideo, Switches
from tensorqa.scenes.vocab import vocab


@register("superlative", backend="scalar")
def superlative(video: ScalarVideo, sem: Switches, longest: bool) -> int:
    margin = np.float32(sem.duration_margin_s)
    insts = sorted(video.instances, key=lambda i: i.end - i.start, reverse=longest)
    if len(insts) < 2:
        raise NoAnswer("longest/shortest: fewer than two action instances")
    top, second = insts[0], insts[1]
    gap = abs((top.end - top.start) - (second.end - second.start))
    if not gap > margin:
        raise NoAnswer("longest/shortest: the top two lengths are within the margin")
    return top.cls


@register("length_compare", backend="scalar")
def length_compare(video: ScalarVideo, sem: Switches, a: int, b: int, longest: bool) -> int:
    lengths = []
    for x in (a, b):
        insts = video.instances_of(x)
        if len(insts) != 1:
            raise NoAnswer(f"length compare: {vocab().action_phrases[x]!r} has {len(insts)} instances, not one")
        lengths.append(insts[0].end - insts[0].start)
    la, lb = lengths
    if not abs(la - lb) > np.float32(sem.duration_margin_s):
        raise NoAnswer("length compare: the lengths are within the margin")
    return (a if la > lb else b) if longest else (a if la < lb else b)
