"""Scalar twins of ``localize`` and ``compare_windows`` (``engine/primitives/localize.py``) for one video."""

from __future__ import annotations

from tensorqa.engine.primitives.registry import register
from tensorqa.engine.scalar.video import NoAnswer, ScalarVideo, Window, Switches
from tensorqa.scenes.vocab import vocab


def _check_localizable(x: int, sem: Switches) -> None:
    if vocab().actions[x] in sem.never_localize:
        raise NoAnswer(f"{vocab().actions[x]} never localizes")


@register("localize", backend="scalar")
def localize(video: ScalarVideo, sem: Switches, kind: str, x: int | None = None, y: int | None = None) -> Window:
    """The window ``kind`` ("video", "before", "after", "while", "between") around action x (and y)."""
    if kind == "video":
        return Window("video", list(range(video.num_frames)))
    if kind == "between":
        return _between(video, sem, x, y)
    _check_localizable(x, sem)
    instances = video.instances_of(x)
    if not instances:
        raise NoAnswer(f"action {vocab().action_phrases[x]!r} does not occur")
    inst = instances[0]
    first, last = inst.frames[0], inst.frames[-1]
    if kind == "before":
        if first == 0:
            raise NoAnswer("before: the action starts at the video's first keyframe")
        stop = first + 1 if sem.localize_before_includes_x else first
        return Window("before", list(range(0, stop)))
    if kind == "after":
        frames = list(range(last + 1, video.num_frames))
        if not frames:
            raise NoAnswer("after: no keyframe after the action")
        return Window("after", frames)
    if kind == "while":
        return Window("while", list(range(first, last + 1)))
    raise ValueError(f"unknown window kind {kind!r}")


def _between(video: ScalarVideo, sem: Switches, x: int, y: int) -> Window:
    if not sem.between_enabled:
        raise NoAnswer("between is switched off")
    _check_localizable(x, sem)
    _check_localizable(y, sem)
    xs, ys = video.instances_of(x), video.instances_of(y)
    if not xs or not ys:
        raise NoAnswer("between: an action does not occur")
    x_inst = xs[-1] if sem.between_x_instance == "last" else xs[0]
    x_last, y_first = x_inst.frames[-1], ys[0].frames[0]
    # frame numbers are ascending with positions, so positions compare like frame numbers
    if x_last >= y_first:
        raise NoAnswer("between: the first action does not end before the second starts")
    frames = list(range(x_last + 1, y_first))
    if not frames:
        raise NoAnswer("between: no keyframe between the actions")
    return Window("between", frames)


@register("compare_windows", backend="scalar")
def compare_windows(video: ScalarVideo, sem: Switches, anchor: int) -> tuple[list[int], list[int], list[int]]:
    """(before, during, after) keyframe positions around the anchor action's only instance."""
    anchors = video.instances_of(anchor)
    if len(anchors) != 1:
        raise NoAnswer(f"compare: {vocab().action_phrases[anchor]!r} has {len(anchors)} instances, not one")
    during = anchors[0].frames
    first, last = during[0], during[-1]
    before = list(range(0, first + 1 if sem.compare_before_includes_x else first))
    after = list(range(last + 1, video.num_frames))
    return before, during, after
