"""Scalar twins of the episode and action-edge primitives (``engine/primitives/first_last.py``) for one
video; the Choose rule tests "or" whatever the printed XOR says, as AGQA's solver."""

from __future__ import annotations

import math

import numpy as np

from tensorqa.engine.primitives.registry import register
from tensorqa.engine.scalar.video import NoAnswer, ScalarVideo, Window, Switches


def _objects_over(video: ScalarVideo, frames: list[int], r: int) -> np.ndarray:
    return video.rel[frames, :, r].any(0) if frames else np.zeros(video.rel.shape[1], bool)


def episode_stretch(video: ScalarVideo, sem: Switches, w: Window, r: int, forward: bool) -> list[int]:
    """The keyframes of relation r's first (forward) or last (backward) stretch in W: the evidence
    rule of objFirst / objLast, which the grounding of their records reads too."""
    frames = w.frames
    occurs = [video.relation_occurs(f, r) for f in frames]
    if True not in occurs:
        raise NoAnswer(f"{'first' if forward else 'last'}: the relation does not occur in the window")
    at, end = _run(occurs, forward)
    if end is None:
        raise NoAnswer("first: the relation lasts to the end of the window" if forward
                       else "last: the relation holds from the start of the window")
    return frames[at:end + 1] if forward else frames[max(end - sem.obj_last_extra_keyframes, 0):at + 1]


def _run(occurs: list[bool], forward: bool, at: int | None = None) -> tuple[int, int | None]:
    """(at, end): the first (forward) or last position where ``occurs`` holds (unless given), and the nearest
    position from there on (backward: back) where it does not, None if none."""
    if at is None:
        at = occurs.index(True) if forward else len(occurs) - 1 - occurs[::-1].index(True)
    steps = range(at, len(occurs)) if forward else range(at, -1, -1)
    return at, next((j for j in steps if not occurs[j]), None)


@register("first_episode", backend="scalar")
def first_episode(video: ScalarVideo, sem: Switches, w: Window, r_stretch: int, r_objects: int) -> np.ndarray:
    return _objects_over(video, episode_stretch(video, sem, w, r_stretch, True), r_objects)


@register("last_episode", backend="scalar")
def last_episode(video: ScalarVideo, sem: Switches, w: Window, r_stretch: int, r_objects: int) -> np.ndarray:
    return _objects_over(video, episode_stretch(video, sem, w, r_stretch, False), r_objects)


def choose_stretch(video: ScalarVideo, sem: Switches, w: Window, o1: int, o2: int, r: int,
                   forward: bool) -> tuple[int, list[int]]:
    """(chosen object, keyframes of its stretch): the evidence rule of objFirstChoose /
    objLastChoose, which the grounding of their records reads too."""
    rel, frames = video.rel, w.frames
    hits = [bool(rel[f, o1, r] or rel[f, o2, r]) for f in frames]
    if True not in hits:
        raise NoAnswer("choose: the relation holds with neither object in the window")
    at, _ = _run(hits, forward)
    item = o1 if rel[frames[at], o1, r] else o2
    _, end = _run([bool(rel[f, item, r]) for f in frames], forward, at)
    if end is None:
        raise NoAnswer("choose: the chosen object's stretch does not end inside the window")
    keep_stop = sem.choose_stretch_includes_stop
    if forward:
        return item, frames[at:end + 1] if keep_stop else frames[at:end]
    return item, frames[end:at + 1] if keep_stop else frames[end + 1:at + 1]


@register("choose_episode", backend="scalar")
def choose_episode(video: ScalarVideo, sem: Switches, w: Window, o1: int, o2: int, r: int, forward: bool) -> int:
    item, group = choose_stretch(video, sem, w, o1, o2, r, forward)
    seen = _objects_over(video, group, r)
    if seen[o1] and seen[o2]:
        raise NoAnswer("choose: the stretch has both objects")
    return item


def _classes_until(video: ScalarVideo, frames: list[int], past) -> set[int]:
    """The action classes at ``frames`` in order, up to the first keyframe whose time is ``past`` the limit."""
    seen: set[int] = set()
    for f in frames:
        if past(video.secs[f]):
            break
        seen |= video.classes_at(f)
    return seen


def _first_time(video: ScalarVideo, sem: Switches, f0: int) -> np.float32:
    if f0 == 0:
        return np.float32(0.0)
    return video.secs[f0] - np.float32(sem.act_first_slack_s)


@register("act_first", backend="scalar")
def act_first(video: ScalarVideo, sem: Switches, w: Window) -> int:
    if not w.frames:
        raise NoAnswer("actFirst: the window has no keyframe")
    f0 = w.frames[0]
    limit = video.secs[f0] + np.float32(sem.act_window_s)
    seen = _classes_until(video, w.frames, lambda secs: secs > limit)
    if len(seen) > 1:
        raise NoAnswer(f"actFirst: {len(seen)} actions within the first seconds of the window")
    t = _first_time(video, sem, f0)
    candidates = [i for i in video.instances if i.start >= t]
    if not candidates:
        raise NoAnswer("actFirst: no action starts in the window")
    earliest = min(i.start for i in candidates)
    firsts = [i for i in candidates if i.start == earliest]
    if len(firsts) != 1:
        raise NoAnswer(f"actFirst: {len(firsts)} actions start first")
    if sum(i.end >= t for i in video.instances) < 2:
        raise NoAnswer("actFirst: not more than one instance ends at or after t")
    return firsts[0].cls


@register("act_last", backend="scalar")
def act_last(video: ScalarVideo, sem: Switches, w: Window) -> int:
    if not w.frames:
        raise NoAnswer("actLast: the window has no keyframe")
    fl = w.frames[-1]
    limit = video.secs[fl] - np.float32(sem.act_window_s)
    scanned = w.frames[1:] if sem.act_last_scan_skips_window_start else w.frames
    seen = _classes_until(video, scanned[::-1], lambda secs: secs < limit)
    if len(seen) > 1:
        raise NoAnswer(f"actLast: {len(seen)} actions within the last seconds of the window")
    # the generator means t = +inf at the video's last keyframe; its answer uses the keyframe's
    # time there (act_last_video_end_is_last_keyframe), its "more than one candidate" rule does not
    t_meant = math.inf if fl == video.num_frames - 1 else video.secs[fl]
    t = video.secs[fl] if sem.act_last_video_end_is_last_keyframe else t_meant
    candidates = [i for i in video.instances if i.end < t]
    if not candidates:
        raise NoAnswer("actLast: no action ends in the window")
    latest = max(i.end for i in candidates)
    lasts = [i for i in candidates if i.end == latest]
    if len(lasts) != 1:
        raise NoAnswer(f"actLast: {len(lasts)} actions end last")
    if sum(i.end < t_meant for i in video.instances) < 2:
        raise NoAnswer("actLast: not more than one candidate instance")
    return lasts[0].cls


@register("act_what", backend="scalar")
def act_what(video: ScalarVideo, sem: Switches, w: Window) -> int:
    if not w.frames:
        raise NoAnswer("actWhat: the window has no keyframe")
    if w.kind in ("video", "after"):  # actWhatAfterAll
        f0 = w.frames[0]
        if len(video.classes_at(f0)) > 1:
            raise NoAnswer("actWhatAfterAll: several actions at the window's first keyframe")
        t = _first_time(video, sem, f0)
        candidates = [i for i in video.instances if i.end >= t]
    elif w.kind == "before":  # actWhatBefore
        fl = w.frames[-1]
        if len(video.classes_at(fl)) > 1:
            raise NoAnswer("actWhatBefore: several actions at the window's last keyframe")
        t = math.inf if fl == video.num_frames - 1 else video.secs[fl]
        candidates = [i for i in video.instances if i.end < t]
    else:
        raise NoAnswer(f"no AGQA template asks what they did with a {w.kind} window")
    if len(candidates) != 1:
        raise NoAnswer(f"{len(candidates)} candidate action instances, not one")
    return candidates[0].cls
