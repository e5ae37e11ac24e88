"""First / last: episodes of a relation (objFirst / objLast, their Choose forms) and the first /
last action of a window (actFirst / actLast, actWhatAfterAll / actWhatBefore).

Everything reads frame scans (``scans.py``) at window edges. Windows may be in either layout
([B, W] or flat [V]); [*L] below stands for the window dimensions.
"""

from __future__ import annotations

import math

import torch

from tensorqa.scenes.batch import SceneBatch
from tensorqa.engine.primitives.localize import AFTER, BEFORE, VIDEO, Windows, real_instances
from tensorqa.engine.primitives.registry import register
from tensorqa.engine.primitives.scans import any_between, next_from, prefix_count, prev_before, read_each, read_rows


# -- objFirst / objLast / Choose ----------------------------------------------------------------------
def object_runs(x: torch.Tensor, video: torch.Tensor, start: torch.Tensor, stop: torch.Tensor, forward: bool
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(hit int64, end int32, usable bool) [*L, *X] for x bool[B, F, *X] and windows [start, stop) int64[*L]:
    the first (forward) or last keyframe of the window where x holds, where that run stops (the nearest
    keyframe past it without x), and whether both lie in the window."""
    s, e = (t.reshape(*t.shape, *[1] * (x.dim() - 2)) for t in (start, stop))
    if forward:
        hit = read_rows(next_from(x), video, start).long()
        end = read_each(next_from(~x), video, hit)
        return hit, end, (hit < e) & (end < e)
    hit = read_rows(prev_before(x), video, stop).long()
    end = read_each(prev_before(~x), video, hit)
    return hit, end, (hit >= s) & (end >= s)


def first_stretch(occurs: torch.Tensor, video: torch.Tensor, start: torch.Tensor, stop: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """objFirst's stretch (f0, g, ok) [*L, R]: f0 the first keyframe of the window with relation r, g the first
    after it without r, ok both in the window."""
    f0, g, ok = object_runs(occurs, video, start, stop, True)
    return f0, g.long(), ok


def last_stretch(occurs: torch.Tensor, video: torch.Tensor, start: torch.Tensor, stop: torch.Tensor,
                 semantics) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """objLast's stretch (lo, last, ok) [*L, R]: last the last keyframe of the window with r, g the nearest
    earlier one without it (ok: both in the window), lo = max(g - obj_last_extra_keyframes, start)."""
    last, g, ok = object_runs(occurs, video, start, stop, False)
    return torch.maximum(g.long() - semantics.obj_last_extra_keyframes, start[..., None]), last, ok


def _episode(stretch, rel: torch.Tensor, windows: Windows) -> tuple[torch.Tensor, torch.Tensor]:
    """(objects bool[*L, O, R] seen over the keyframes [lo, hi] of each stretch, defined bool[*L, R])."""
    lo, hi, ok = stretch
    defined = windows.valid[..., None] & ok
    objects = any_between(prefix_count(rel), windows.video, lo[..., None, :], (hi + 1)[..., None, :])
    return objects & defined[..., None, :], defined


@register("first_episode", aliases=("IterateUntil",))
def first_episode(occurs: torch.Tensor, rel: torch.Tensor, windows: Windows, semantics=None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """occurs bool[B, F, R], rel bool[B, F, O, R] -> (objects bool[*L, O, R] over objFirst's stretch [f0, g]
    (through the stopping keyframe g, where r is absent), defined bool[*L, R]). ``semantics`` is unread; it
    lets the two episodes swap."""
    return _episode(first_stretch(occurs, windows.video, windows.start, windows.stop), rel, windows)


@register("last_episode")
def last_episode(occurs: torch.Tensor, rel: torch.Tensor, windows: Windows, semantics) -> tuple[torch.Tensor, torch.Tensor]:
    """As :func:`first_episode`, over objLast's stretch [lo, last]."""
    return _episode(last_stretch(occurs, windows.video, windows.start, windows.stop, semantics), rel, windows)


@register("choose_episode", aliases=("Choose",))
def choose_episode(rel: torch.Tensor, windows: Windows, forward: bool, semantics) -> tuple[torch.Tensor, torch.Tensor]:
    """The Choose rule (objFirstChoose / objLastChoose / objWhatChoose; twin: scalar ``choose_stretch``) for
    every ordered pair: rel bool[B, F, K, R] -> (pick bool[*L, R, K, K]: the row object is the answer, else the
    column one; defined, the same shape). An object picked although not found means neither was found."""
    hit, end, usable = object_runs(rel, windows.video, windows.start, windows.stop, forward)
    usable = usable & windows.valid[..., None, None]
    # positions fit in int16 (F < 32768), which halves the traffic of the pairwise comparisons
    hit, end = hit.to(torch.int16), end.to(torch.int16)
    return choose_pairs(hit.transpose(-1, -2), end.transpose(-1, -2), usable.transpose(-1, -2), forward, semantics)


def choose_pairs(hit: torch.Tensor, end: torch.Tensor, usable: torch.Tensor, forward: bool, semantics
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """The pairwise half of :func:`choose_episode`: (hit, end, usable) [..., K] -> (pick, defined)
    bool[..., K, K] (rows: first object, columns: second)."""
    h1, h2 = hit[..., :, None], hit[..., None, :]
    e1, e2 = end[..., :, None], end[..., None, :]
    # backward, positions compare the other way round
    before_or_at, before = (torch.le, torch.lt) if forward else (torch.ge, torch.gt)
    pick = before_or_at(h1, h2)  # the first object holds at the pair's first hit
    # the other object shows up in the chosen stretch [hit, stop] (or [hit, stop))
    inside = before_or_at if semantics.choose_stretch_includes_stop else before
    other_in_1, other_in_2 = inside(h2, e1), inside(h1, e2)
    ok_1 = usable[..., :, None] & ~other_in_1
    ok_2 = usable[..., None, :] & ~other_in_2
    return pick, torch.where(pick, ok_1, ok_2)


# -- actFirst / actLast / actWhat -----------------------------------------------------------------------
def _unique_instance(cand: torch.Tensor, key: torch.Tensor, cls: torch.Tensor, largest: bool
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """(class, defined) [*L]: the candidate (cand bool[*L, N]) with the smallest (largest) key, if only one."""
    if cand.shape[-1] == 0:  # a batch without action instances
        return _only_instance(cand, cls)
    k = torch.where(cand, key, -math.inf if largest else math.inf)
    best = k.amax(-1, keepdim=True) if largest else k.amin(-1, keepdim=True)
    return _only_instance(cand & (k == best), cls)


def _only_instance(winners: torch.Tensor, cls: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(class, defined) [*L] of the single True instance of winners bool[*L, N]."""
    defined = winners.sum(-1) == 1
    if winners.shape[-1] == 0:
        return torch.zeros(defined.shape, dtype=torch.long, device=defined.device), defined
    n = winners.to(torch.uint8).argmax(-1, keepdim=True)
    return cls.expand_as(winners).gather(-1, n)[..., 0], defined


class _Edges:
    """Per-window facts the action primitives share: instance tables per window, keyframe times."""

    def __init__(self, batch: SceneBatch, act: torch.Tensor, windows: Windows):
        v = windows.video
        self.F = batch.frame_mask.shape[1]
        self.v, self.s, self.e = v, windows.start, windows.stop
        self.secs = batch.frame_secs[v]  # [*L or broadcastable, F]
        self.nf = batch.frame_mask.sum(1)[v]
        self.real = real_instances(batch)[v]  # [*, N]
        self.start, self.end, self.cls = batch.inst_start[v], batch.inst_end[v], batch.inst_cls[v]
        self.act_counts = prefix_count(act)  # [B, F + 1, A]
        self.valid = windows.valid & (windows.stop > windows.start) & (self.F > 0)

    def time(self, pos: torch.Tensor) -> torch.Tensor:
        """float32[*L]: time of keyframe positions (clamped)."""
        return self.secs.expand(*pos.shape, self.F).gather(-1, pos.clamp(0, max(self.F - 1, 0))[..., None])[..., 0] \
            if self.F else torch.zeros(pos.shape, device=pos.device)

    def classes_between(self, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
        """int64[*L]: how many action classes go on at some keyframe of [lo, hi)."""
        seen = (read_rows(self.act_counts, self.v, hi) - read_rows(self.act_counts, self.v, lo)) > 0
        return seen.sum(-1)

    def first_start_time(self, first: torch.Tensor, semantics) -> torch.Tensor:
        """float32[*L]: actFirst / actWhatAfterAll's t: time of keyframe ``first`` minus the slack,
        0 when it is the video's first keyframe."""
        secs = self.time(first)
        slack = torch.tensor(semantics.act_first_slack_s, dtype=secs.dtype, device=secs.device)
        return torch.where(first == 0, torch.zeros_like(secs), secs - slack)


@register("act_first")
def act_first(batch: SceneBatch, act: torch.Tensor, windows: Windows, semantics) -> tuple[torch.Tensor, torch.Tensor]:
    """actFirst (§b.1): act bool[B, F, A] -> (class int64[*L], defined bool[*L]), the instance
    starting first at or after t; undefined when W is empty, its first ``act_window_s`` show more
    than one class, no single instance starts first, or at most one ends at or after t."""
    x = _Edges(batch, act, windows)
    s, e = x.s, x.e
    secs0 = x.time(s)
    limit = secs0 + torch.tensor(semantics.act_window_s, dtype=secs0.dtype, device=secs0.device)
    # the scan over W stops at the first keyframe later than the limit
    late = windows.mask & (x.secs > limit[..., None])
    cut = torch.where(late.any(-1), late.to(torch.uint8).argmax(-1), e) if x.F else e
    seen = x.classes_between(s, cut)
    t = x.first_start_time(s, semantics)
    cand = x.real & (x.start >= t[..., None])
    cls, unique = _unique_instance(cand, x.start.expand_as(cand), x.cls, largest=False)
    many = (x.real & (x.end >= t[..., None])).sum(-1) > 1  # §b.1: more than one instance ends at or after t
    return cls, x.valid & (seen <= 1) & unique & many


@register("act_last")
def act_last(batch: SceneBatch, act: torch.Tensor, windows: Windows, semantics) -> tuple[torch.Tensor, torch.Tensor]:
    """actLast (§b.1): the instance ending last before t, the time of W's last keyframe; the
    mirror of :func:`act_first` (its last ``act_window_s``, at least two candidates with t = +inf
    at the video's end)."""
    x = _Edges(batch, act, windows)
    s, e = x.s, x.e
    last = e - 1
    secs_l = x.time(last)
    limit = secs_l - torch.tensor(semantics.act_window_s, dtype=secs_l.dtype, device=secs_l.device)
    scan_from = s + 1 if semantics.act_last_scan_skips_window_start else s
    pos = torch.arange(x.F, device=s.device)
    scanned = (pos >= scan_from[..., None]) & (pos < e[..., None])
    early = scanned & (x.secs < limit[..., None])
    cut = torch.where(early.any(-1), x.F - 1 - early.flip(-1).to(torch.uint8).argmax(-1), scan_from - 1) if x.F else s
    seen = x.classes_between(cut + 1, e)
    # t: +inf at the video's last keyframe is what the generator means; its answer rule uses the
    # keyframe's time there (act_last_video_end_is_last_keyframe), its candidate count does not
    t_meant = torch.where(last == x.nf - 1, torch.full_like(secs_l, math.inf), secs_l)
    t = secs_l if semantics.act_last_video_end_is_last_keyframe else t_meant
    cand = x.real & (x.end < t[..., None])
    cls, unique = _unique_instance(cand, x.end.expand_as(cand), x.cls, largest=True)
    many = (x.real & (x.end < t_meant[..., None])).sum(-1) > 1  # §b.1: more than one candidate
    return cls, x.valid & (seen <= 1) & unique & many


@register("act_what")
def act_what(batch: SceneBatch, act: torch.Tensor, windows: Windows, semantics) -> tuple[torch.Tensor, torch.Tensor]:
    """actWhatAfterAll (video / after: the one instance ending at or after actFirst's t) and
    actWhatBefore (before: the one ending before W's last keyframe, +inf at the video's end), one
    program told apart by the window's word; the edge keyframe shows at most one class."""
    x = _Edges(batch, act, windows)
    s, e = x.s, x.e
    word = windows.word
    after_all = (word == VIDEO) | (word == AFTER)
    before = word == BEFORE
    last = e - 1
    edge = torch.where(before, last, s)
    quiet = x.classes_between(edge, edge + 1) <= 1
    t_after = x.first_start_time(s, semantics)
    secs_l = x.time(last)
    t_before = torch.where(last == x.nf - 1, torch.full_like(secs_l, math.inf), secs_l)
    cand = x.real & torch.where(before[..., None], x.end < t_before[..., None], x.end >= t_after[..., None])
    cls, one = _only_instance(cand, x.cls)
    return cls, x.valid & (after_all | before) & quiet & one
