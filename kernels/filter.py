"""Kernel twins of ``primitives/filter.py``: what is present within each window.

All five primitives there reduce to ``window_any(windows, facts)``: does fact x hold at some
keyframe of window w? With the keyframe axis packed into words (``bits.pack_frames``) that is
``(facts[b, :, x] & window_words[w]) != 0`` over a word or two, instead of the torch twin's
float matmul over F (padded windows) or prefix-count gathers (flat windows). Grid evaluation
calls them as

* ``relate(rel [B, F, Ko, Kr], windows [B, W])``: the window x object x relation contraction every
  object-relation template reads (``GridContext.relate``), X = Ko * Kr;
* ``contacted`` / ``relations_present`` / ``actions_in`` on the flat rows [V] (objExists /
  objWhatGeneral, relExists, actExists), X = O, R or A.

Padded windows are read from their masks (packed per call), flat windows from their
``[start, stop)`` ranges, exactly as the torch twin reads them.
"""

from __future__ import annotations

import math

import torch

from tensorqa.engine.primitives import filter as torch_filter
from tensorqa.engine.primitives.localize import Windows
from tensorqa.engine.primitives.registry import register
from tensorqa.scenes.batch import SceneBatch
from tensorqa.kernels import runtime
from tensorqa.kernels.bits import pack_frames, range_bits
from tensorqa.kernels.runtime import jit

tl = None  # triton.language, set by runtime.bind() before a kernel compiles or runs


@jit
def window_any_kernel(facts_ptr, rows_ptr, video_ptr, start_ptr, stop_ptr, out_ptr, L, W, X, NW,
                      RANGES: tl.constexpr, BL: tl.constexpr, BX: tl.constexpr):
    """out[l, x] = OR over words w of (facts[b, w, x] & row_words(l, w)) != 0, for a BL x BX tile.

    facts int64[B, NW, X]. RANGES: row l is keyframes [start[l], stop[l]) of video video[l];
    else row l is the mask words rows int64[L, NW] of video l // W. out: uint8[L, X].
    """
    l = tl.program_id(0) * BL + tl.arange(0, BL)
    x = tl.program_id(1) * BX + tl.arange(0, BX)
    lok = l < L
    l64 = l.to(tl.int64)
    if RANGES:
        b = tl.load(video_ptr + l64, mask=lok, other=0)
        lo = tl.load(start_ptr + l64, mask=lok, other=0)
        hi = tl.load(stop_ptr + l64, mask=lok, other=0)
    else:
        b = l64 // W
    ok = lok[:, None] & (x[None, :] < X)
    ptr = facts_ptr + b[:, None] * NW * X + x[None, :]
    acc = tl.full((BL, BX), 0, tl.int64)
    for w in range(0, NW):
        word = tl.load(ptr + w * X, mask=ok, other=0)
        if RANGES:
            sel = range_bits(lo - w * 64, hi - w * 64)
        else:
            sel = tl.load(rows_ptr + l64 * NW + w, mask=lok, other=0)
        acc = acc | (word & sel[:, None])
    tl.store(out_ptr + l64[:, None] * X + x[None, :], (acc != 0).to(tl.uint8), mask=ok)


def _launch(facts: torch.Tensor, L: int, W: int, rows=None, video=None, start=None, stop=None) -> torch.Tensor:
    """facts words int64[B, NW, X] -> bool[L, X] (see ``window_any_kernel``)."""
    runtime.bind()
    _, NW, X = facts.shape
    out = torch.empty(L, X, dtype=torch.bool, device=facts.device)
    BX = runtime.block(X, runtime.row_elements(256))
    BL = runtime.block(L, runtime.tile_elements() // BX)
    ranges = rows is None
    dummy = facts  # unused pointer arguments of the other mode
    window_any_kernel[(-(-L // BL), -(-X // BX))](
        facts, dummy if ranges else rows, video if ranges else dummy, start if ranges else dummy,
        stop if ranges else dummy, out.view(torch.uint8), L, W, X, NW, RANGES=ranges, BL=BL, BX=BX)
    return out


def window_any(windows: "Windows | torch.Tensor", facts: torch.Tensor) -> torch.Tensor:
    """Kernel twin of :func:`tensorqa.engine.primitives.filter.window_any` (same arguments, same result):
    bool[B, W, *X] (or [V, *X] for flat windows): the fact holds at some keyframe of the window."""
    twin = torch_filter.window_any
    if facts.dtype != torch.bool or facts.dim() < 2:
        return twin(windows, facts)
    B, F = facts.shape[:2]
    tail = facts.shape[2:]
    X = math.prod(tail)
    if isinstance(windows, Windows) and windows.flat:
        video, start, stop = windows.video, windows.start, windows.stop
        L = start.shape[0]
        if not (video.shape == start.shape == stop.shape == (L,)) or 0 in (B, F, X, L) \
                or not runtime.launchable(facts, video, start, stop):
            return twin(windows, facts)
        words = pack_frames(facts.reshape(B, F, X))
        out = _launch(words, L, 1, video=video.long().contiguous(), start=start.long().contiguous(),
                      stop=stop.long().contiguous())
        return out.reshape(L, *tail)
    mask = windows if isinstance(windows, torch.Tensor) else windows.mask
    if mask.dtype != torch.bool or mask.dim() != 3 or mask.shape[0] != B or mask.shape[2] != F \
            or 0 in (B, F, X, mask.shape[1]) or not runtime.launchable(facts, mask):
        return twin(windows, facts)
    W = mask.shape[1]
    rows = pack_frames(mask, dim=2).reshape(B * W, -1)  # [B * W, NW]
    out = _launch(pack_frames(facts.reshape(B, F, X)), B * W, W, rows=rows)
    return out.reshape(B, W, *tail)


@register("relate", backend="kernel")
def relate(rel: torch.Tensor, windows: Windows) -> torch.Tensor:
    """Kernel twin of :func:`tensorqa.engine.primitives.filter.relate`: bool[B, W, O, R] ([V, O, R] for
    flat windows) from rel bool[B, F, O, R]."""
    return window_any(windows, rel)


@register("relations_present", backend="kernel")
def relations_present(batch: SceneBatch, windows: Windows) -> torch.Tensor:
    """Kernel twin of :func:`tensorqa.engine.primitives.filter.relations_present`: bool[B, W, R]."""
    return window_any(windows, torch_filter._frames_ok(batch, torch_filter.any_along(batch.rel, 2)))


@register("objects_present", backend="kernel")
def objects_present(batch: SceneBatch, windows: Windows) -> torch.Tensor:
    """Kernel twin of :func:`tensorqa.engine.primitives.filter.objects_present`: bool[B, W, O]."""
    return window_any(windows, torch_filter._frames_ok(batch, batch.obj))


@register("contacted", backend="kernel")
def contacted(batch: SceneBatch, windows: Windows, rule: str) -> torch.Tensor:
    """Kernel twin of :func:`tensorqa.engine.primitives.filter.contacted`: bool[B, W, O]."""
    return window_any(windows, torch_filter.interacted_frames(batch, rule))


@register("actions_in", backend="kernel")
def actions_in(batch: SceneBatch, windows: Windows) -> torch.Tensor:
    """Kernel twin of :func:`tensorqa.engine.primitives.filter.actions_in`: bool[B, W, A]."""
    return window_any(windows, torch_filter._frames_ok(batch, batch.act))
