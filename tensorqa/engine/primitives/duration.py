"""Durations (§b.1 length templates, f9): lengths ``end - start`` in float32 seconds over the
instances with keyframes; they must differ by MORE than ``semantics.duration_margin_s``.
"""

from __future__ import annotations

import math

import torch

from tensorqa.scenes.batch import SceneBatch
from tensorqa.engine.primitives.localize import class_instances, real_instances
from tensorqa.engine.primitives.registry import register


def instance_lengths(batch: SceneBatch) -> torch.Tensor:
    """float32[B, N]: end - start of each instance, in seconds."""
    return batch.inst_end - batch.inst_start


def _margin(semantics, like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(semantics.duration_margin_s, dtype=like.dtype, device=like.device)


@register("superlative", aliases=("Superlative",))
def superlative(batch: SceneBatch, longest: bool, semantics) -> tuple[torch.Tensor, torch.Tensor]:
    """actLongest / actShortest: (class int64[B] of the longest (shortest) instance, defined bool[B]: at least
    two instances, and the top two lengths differ by more than the margin)."""
    real = real_instances(batch)
    lengths = instance_lengths(batch)
    B, N = lengths.shape
    if N < 2:
        return torch.zeros(B, dtype=torch.long, device=lengths.device), torch.zeros(B, dtype=torch.bool, device=lengths.device)
    fill = -math.inf if longest else math.inf
    ranked, order = torch.where(real, lengths, fill).sort(dim=1, descending=longest, stable=True)
    top, second = ranked[:, 0], ranked[:, 1]
    gap = (top - second) if longest else (second - top)
    defined = (real.sum(1) >= 2) & (gap > _margin(semantics, gap))
    return batch.inst_cls.gather(1, order[:, :1])[:, 0], defined


@register("length_compare")
def length_compare(batch: SceneBatch, ids: torch.Tensor, longest: bool, semantics) -> tuple[torch.Tensor, torch.Tensor]:
    """Every ordered pair of classes ``ids`` int64[B, K] (-1 = none) -> (winner int64[B, K, K]: the longer
    (shorter) of row class a and column class b, defined: one instance each, lengths differ by more than the margin)."""
    ci = class_instances(batch, ids)
    length = instance_lengths(batch).gather(1, ci.first_inst) if ids.shape[1] and batch.inst_cls.shape[1] \
        else torch.zeros(ids.shape, dtype=batch.inst_end.dtype, device=ids.device)
    la, lb = length[:, :, None], length[:, None, :]
    single = ci.count == 1
    defined = single[:, :, None] & single[:, None, :] & ((la - lb).abs() > _margin(semantics, la))
    first_wins = (la > lb) if longest else (la < lb)
    a, b = ids[:, :, None], ids[:, None, :]
    return torch.where(first_wins, a, b), defined
