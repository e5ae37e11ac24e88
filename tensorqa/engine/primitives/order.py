"""Order of events around an action (docs/reference/agqa_semantics.md §a.2 compare windows): actTime, relTime,
objTime. Answers are 0 = "before", 1 = "after".

Side tests are prefix-count differences over the keyframe axis: "x occurs in [lo, hi)" for every
(anchor, x) at once, no [B, K, F, X] tensor.
"""

from __future__ import annotations

import torch
from einops import rearrange, repeat

from tensorqa.scenes.batch import SceneBatch
from tensorqa.scenes.vocab import NO_OBJECT, vocab
from tensorqa.engine.primitives.scans import any_between, prefix_count
from tensorqa.engine.primitives.localize import CompareWindows, class_instances
from tensorqa.engine.primitives.registry import register

BEFORE_ANSWER, AFTER_ANSWER = 0, 1


@register("side_of", aliases=("Compare",))
def side_of(occurs: torch.Tensor, cw: CompareWindows, num_frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """relTime / objTime: on which side of the anchors (compare windows [B, K]) x occurs, occurs bool[B, F, X]
    (a relation, or an object interacted with); num_frames int64[B]. Returns (side int64[B, K, X]: 0 before /
    1 after, defined bool[B, K, X]: one anchor instance, x not during it, x on exactly one side)."""
    counts = prefix_count(occurs)
    video = torch.arange(occurs.shape[0], device=occurs.device)[:, None]
    zero = torch.zeros_like(cw.first)[..., None]
    nf = num_frames[:, None, None].expand_as(zero)
    during = any_between(counts, video, cw.first[..., None], cw.last[..., None] + 1)
    before = any_between(counts, video, zero, cw.before_stop[..., None])
    after = any_between(counts, video, cw.after_start[..., None], nf)
    defined = cw.single[..., None] & ~during & (before != after)
    return torch.where(before, BEFORE_ANSWER, AFTER_ANSWER), defined


def action_relation_frames(batch: SceneBatch, ids: torch.Tensor) -> torch.Tensor:
    """bool[B, F, K]: action class ids[b, k]'s (object, verb relation) pair holds at keyframe f
    (False for actions without an object or without a verb relation; actTime's persistence check)."""
    v = vocab()
    obj_of = torch.tensor(v.action_object, device=ids.device)
    rel_of = torch.tensor([v.verb_relation[x] for x in v.action_verb], device=ids.device)
    safe = ids.clamp(min=0)
    o, r = obj_of[safe], rel_of[safe]  # [B, K]
    usable = (ids >= 0) & (o != NO_OBJECT) & (r >= 0)
    F, R = batch.rel.shape[1], batch.rel.shape[3]
    col = repeat(o.clamp(min=0) * R + r.clamp(min=0), "b k -> b f k", f=F)  # (o, r) on the flat (o r) axis
    return rearrange(batch.rel, "b f o r -> b f (o r)").gather(2, col) & usable[:, None, :] & batch.frame_mask[:, :, None]


@register("act_order")
def act_order(batch: SceneBatch, ids: torch.Tensor, cw: CompareWindows, semantics) -> tuple[torch.Tensor, torch.Tensor]:
    """actTime for every ordered pair (x = row class, anchor = column class) of ``ids`` [B, K] -> (side
    int64[B, K, K]: 0 before / 1 after, defined bool[B, K, K]: one instance each, x's keyframes not all within
    the anchor's and all on one side, and with ``act_time_persistence_check`` x's (object, verb) relation not
    on the anchor's other side)."""
    ci = class_instances(batch, ids)
    x_first, x_last = ci.first_kf0[:, :, None], ci.last_kf0[:, :, None]  # rows: x
    a_first, a_last = ci.first_kf0[:, None, :], ci.last_kf0[:, None, :]  # columns: anchor
    single = cw.single[:, :, None] & cw.single[:, None, :]
    within = (x_first >= a_first) & (x_last <= a_last)
    before = x_last < cw.before_stop[:, None, :]
    after = x_first >= cw.after_start[:, None, :]
    if semantics.act_time_persistence_check:
        # x's counts [B, F + 1, K(x)] read at the anchor's window edges [B, K(anchor), 1], then rows x, columns anchor
        counts = prefix_count(action_relation_frames(batch, ids))
        video = torch.arange(ids.shape[0], device=ids.device)[:, None]
        nf, zero = batch.frame_mask.sum(1)[:, None, None], torch.zeros_like(cw.before_stop)[:, :, None]
        persists_after = any_between(counts, video, cw.after_start[:, :, None], nf).transpose(1, 2)
        persists_before = any_between(counts, video, zero, cw.before_stop[:, :, None]).transpose(1, 2)
    else:
        persists_after = persists_before = torch.zeros_like(within)
    ok_before = before & ~persists_after
    ok_after = ~before & after & ~persists_before
    defined = single & ~within & (ok_before | ok_after)
    return torch.where(before, BEFORE_ANSWER, AFTER_ANSWER), defined
