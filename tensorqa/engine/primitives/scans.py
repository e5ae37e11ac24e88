"""Scans over the keyframe axis, computed once per batch and read at window edges.

* ``next_from(x)[b, k]``   = first position >= k where x holds (F when none),
* ``prev_before(x)[b, k]`` = last position < k where x holds (-1 when none),
* ``prefix_count(x)[b, k]`` = number of positions < k where x holds,

each int32[B, F + 1, *X] for x bool[B, F, *X]: per-window questions become gathers at the
window's edges (no [windows, F, ...] tensor), for either window layout (``Windows.video``
broadcasts against the positions).
"""

from __future__ import annotations

import math

import numpy as np
import torch

INDEX = torch.int32  # frame positions and counts in scan tables (F < 2^31)


def _suffix_min(y: torch.Tensor, doubling: bool | None = None) -> torch.Tensor:
    """Minimum over positions >= k along dim 1. On CPUs, Hillis-Steele doubling (log2(F)
    elementwise minima, several times faster there than ``cummin`` along an inner dimension); on
    accelerators one ``cummin`` scan kernel instead of 2 log2(F) launches. Either way exact."""
    if not (y.device.type == "cpu" if doubling is None else doubling):
        return y.flip(1).cummin(1).values.flip(1)
    n, k = y.shape[1], 1
    while k < n:
        y[:, :n - k] = torch.minimum(y[:, :n - k], y[:, k:])
        k *= 2
    return y


def _prefix_max(y: torch.Tensor, doubling: bool | None = None) -> torch.Tensor:
    """Maximum over positions <= k along dim 1, as ``_suffix_min``."""
    if not (y.device.type == "cpu" if doubling is None else doubling):
        return y.cummax(1).values
    n, k = y.shape[1], 1
    while k < n:
        y[:, k:] = torch.maximum(y[:, k:], y[:, :n - k])
        k *= 2
    return y


def _positions(x: torch.Tensor, fill: int, sentinel_first: bool) -> torch.Tensor:
    """int32[B, F + 1, *X]: each position where x bool[B, F, *X] holds, else ``fill``; one ``fill`` row added."""
    B, F = x.shape[:2]
    pos = torch.arange(F, dtype=INDEX, device=x.device).reshape(1, F, *([1] * (x.dim() - 2)))
    idx = torch.where(x, pos, fill).to(INDEX)
    sentinel = torch.full((B, 1, *x.shape[2:]), fill, dtype=INDEX, device=x.device)
    return torch.cat([sentinel, idx] if sentinel_first else [idx, sentinel], 1)


def next_from(x: torch.Tensor) -> torch.Tensor:
    """int32[B, F + 1, *X]: first position >= k where ``x`` bool[B, F, *X] holds; F if none."""
    return _suffix_min(_positions(x, x.shape[1], False))


def prev_before(x: torch.Tensor) -> torch.Tensor:
    """int32[B, F + 1, *X]: last position < k where ``x`` bool[B, F, *X] holds; -1 if none."""
    return _prefix_max(_positions(x, -1, True))


def prefix_count(x: torch.Tensor) -> torch.Tensor:
    """int32[B, F + 1, *X]: number of positions < k where ``x`` bool[B, F, *X] holds."""
    zero = torch.zeros((x.shape[0], 1, *x.shape[2:]), dtype=INDEX, device=x.device)
    return torch.cat([zero, x.cumsum(1, dtype=INDEX)], 1)


def read_rows(table: torch.Tensor, video: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """[*L, *X]: ``table[video, pos]``, a [B, F + 1, *X] table read at one (clamped) position per window; video,
    pos int64 broadcastable to L (e.g. [B, 1] and [B, W], or [V] and [V])."""
    return table[video, pos.clamp(0, table.shape[1] - 1)]


def read_each(table: torch.Tensor, video: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """``table[video, pos[..., x], x]``: a [B, F + 1, *X] table read at one position per window
    and element. pos: int64[*L, *X] (broadcastable; X may be size-1 there), video broadcastable to
    L. Returns [*L, *X]."""
    X = table.shape[2:]
    n = math.prod(X)
    lead = pos.shape[:pos.dim() - len(X)]
    lead = np.broadcast_shapes(lead, video.shape)  # torch's imports sympy on first use (~0.5 s)
    p = pos.expand(*lead, *X).reshape(*lead, n).clamp(0, table.shape[1] - 1)
    flat = table.reshape(table.shape[0], table.shape[1], n)
    cols = torch.arange(n, device=table.device)
    return flat[video[..., None], p, cols].reshape(*lead, *X)


def any_between(counts: torch.Tensor, video: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """bool[*L, *X]: x holds somewhere in [lo, hi), from ``prefix_count(x)`` [B, F + 1, *X]; lo, hi
    int64[*L, *X] per element (broadcastable), video broadcastable to L."""
    return (read_each(counts, video, hi) - read_each(counts, video, lo)) > 0
