"""Kernel twins of ``primitives/first_last.py``: objFirst / objLast episodes and the Choose rule.

The torch twins build frame-scan tables (``scans.next_from`` / ``prev_before`` / ``prefix_count``,
int32[B, F + 1, Ko, Kr] each, made with log2(F) passes) and gather from them at window edges.
With keyframes packed into words the same questions are bit operations on one or two words per
(window, object, relation): "first keyframe >= s where r holds" is the lowest set bit of
``occurs & bits_from(s)``, "where the run stops" the lowest clear bit after it, "r's objects over
the stretch [a, b)" is ``rel & range_bits(a, b) != 0``. Nothing of size [.., F, ..] is written
besides the packed words.

Grid evaluation calls them on the flat window rows [V] (``GridContext.flat``) with rel
bool[B, F, Ko, Kr]: ``first_episode`` / ``last_episode`` for objFirst / objLast and their verify
forms (results [V, Ko, Kr]), ``choose_episode`` for the three Choose templates, the largest grids
of the catalogue ([V, Kr, Ko, Ko]), whose pairwise rule the choose kernel applies in the same pass.
"""

from __future__ import annotations

import numpy as np
import torch

from tensorqa.engine.primitives import first_last as torch_first_last
from tensorqa.engine.primitives.localize import Windows
from tensorqa.engine.primitives.registry import register
from tensorqa.kernels import runtime
from tensorqa.kernels.bits import any_in, first_set, last_set, pack_frames
from tensorqa.kernels.runtime import jit

tl = None  # triton.language, set by runtime.bind() before a kernel compiles or runs


# --------------------------------------------------------------------------------------------------
# Triton kernels
# --------------------------------------------------------------------------------------------------

@jit
def episode_kernel(occ_ptr, rel_ptr, video_ptr, start_ptr, stop_ptr, valid_ptr, objects_ptr, defined_ptr,
                   L, F, O, R, NW, extra, FORWARD: tl.constexpr, BL: tl.constexpr, BO: tl.constexpr,
                   BR: tl.constexpr):
    """objFirst (FORWARD) / objLast stretches for BL window rows l x BR relations r, all O objects.

    occ int64[B, NW, R], rel int64[B, NW, O, R] (packed keyframes); video, start, stop int64[L],
    valid uint8[L]. Writes defined uint8[L, R] and objects uint8[L, O, R] (tile [BL, BO, BR]).
    """
    l = tl.program_id(0) * BL + tl.arange(0, BL)
    r = tl.program_id(1) * BR + tl.arange(0, BR)
    lok = l < L
    l64 = l.to(tl.int64)
    ok = lok[:, None] & (r[None, :] < R)  # [BL, BR]
    b = tl.load(video_ptr + l64, mask=lok, other=0)[:, None]
    s = tl.load(start_ptr + l64, mask=lok, other=0)[:, None]
    e = tl.load(stop_ptr + l64, mask=lok, other=0)[:, None]
    valid = tl.load(valid_ptr + l64, mask=lok, other=0)[:, None] != 0
    occ = occ_ptr + b * NW * R + r[None, :]
    zero = tl.full((BL, BR), 0, tl.int32)
    if FORWARD:
        # first keyframe >= s with r, then the first keyframe from there without it
        f0 = first_set(occ, R, zero + tl.minimum(tl.maximum(s, 0), F), F, NW, ok, False)
        g = first_set(occ, R, f0, F, NW, ok, True)
        defined = valid & (f0 < e) & (g < e)
        lo = f0
        hi = g + 1  # the stretch runs through the stopping keyframe g
    else:
        # last keyframe < e with r, then the nearest earlier keyframe without it
        last = last_set(occ, R, zero + tl.minimum(tl.maximum(e, 0), F), NW, ok, False)
        g = last_set(occ, R, tl.minimum(tl.maximum(last, 0), F), NW, ok, True)
        defined = valid & (last >= s) & (g >= s)
        lo = tl.maximum(g - extra, s)
        hi = last + 1
    tl.store(defined_ptr + l64[:, None] * R + r[None, :], defined.to(tl.uint8), mask=ok)
    # r's objects over the stretch: tile [BL, BO, BR]
    o = tl.arange(0, BO)[None, :, None]
    ok3 = ok[:, None, :] & (o < O)
    rel = rel_ptr + (b * NW * O)[:, :, None] * R + o * R + r[None, None, :]
    hit = any_in(rel, O * R, lo[:, None, :], hi[:, None, :], NW, ok3)
    out = (l64[:, None, None] * O + o) * R + r[None, None, :]
    tl.store(objects_ptr + out, (hit & defined[:, None, :]).to(tl.uint8), mask=ok3)


@jit
def choose_kernel(rel_ptr, video_ptr, start_ptr, stop_ptr, valid_ptr, pick_ptr, defined_ptr, N, F, K, R, NW,
                  FORWARD: tl.constexpr, KEEP_STOP: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The Choose rule for a block of BN cells n = (window row l, relation r) = l * R + r and every
    ordered pair of the K candidate objects: pick / defined uint8[L, R, K, K] from rel
    int64[B, NW, K, R]."""
    n = (tl.program_id(0) * BN + tl.arange(0, BN)).to(tl.int64)
    k = tl.arange(0, BK)
    nok = n < N
    l = n // R
    r = (n % R)[:, None]
    ok = nok[:, None] & (k[None, :] < K)  # tiles [BN, BK]: cell x object
    b = tl.load(video_ptr + l, mask=nok, other=0)[:, None]
    s = tl.load(start_ptr + l, mask=nok, other=0)[:, None]
    e = tl.load(stop_ptr + l, mask=nok, other=0)[:, None]
    valid = tl.load(valid_ptr + l, mask=nok, other=0)[:, None] != 0
    words = rel_ptr + b * NW * K * R + k[None, :] * R + r
    zero = tl.full((BN, BK), 0, tl.int32)
    if FORWARD:
        # each object's first keyframe in W with r, and where that run stops
        hit = first_set(words, K * R, zero + tl.minimum(tl.maximum(s, 0), F), F, NW, ok, False)
        end = first_set(words, K * R, hit, F, NW, ok, True)
        usable = (hit < e) & (end < e)
    else:
        # its last keyframe in W with r, and the nearest earlier keyframe without it
        hit = last_set(words, K * R, zero + tl.minimum(tl.maximum(e, 0), F), NW, ok, False)
        end = last_set(words, K * R, tl.minimum(tl.maximum(hit, 0), F), NW, ok, True)
        usable = (hit >= s) & (end >= s)
    usable = usable & valid
    # pairs [BN, BK (first object), BK (second object)], as primitives.first_last.choose_pairs
    h1 = hit[:, :, None]
    h2 = hit[:, None, :]
    e1 = end[:, :, None]
    e2 = end[:, None, :]
    if FORWARD:
        pick = h1 <= h2
        if KEEP_STOP:
            other_in_1 = h2 <= e1
            other_in_2 = h1 <= e2
        else:
            other_in_1 = h2 < e1
            other_in_2 = h1 < e2
    else:
        pick = h1 >= h2
        if KEEP_STOP:
            other_in_1 = h2 >= e1
            other_in_2 = h1 >= e2
        else:
            other_in_1 = h2 > e1
            other_in_2 = h1 > e2
    ok_1 = usable[:, :, None] & ~other_in_1
    ok_2 = usable[:, None, :] & ~other_in_2
    defined = tl.where(pick, ok_1, ok_2)
    k1 = k[None, :, None]
    k2 = k[None, None, :]
    off = (n[:, None, None] * K + k1) * K + k2
    out_ok = nok[:, None, None] & (k1 < K) & (k2 < K)
    tl.store(pick_ptr + off, pick.to(tl.uint8), mask=out_ok)
    tl.store(defined_ptr + off, defined.to(tl.uint8), mask=out_ok)


# --------------------------------------------------------------------------------------------------
# Wrappers (the registry's "kernel" implementations)
# --------------------------------------------------------------------------------------------------

def _rows(windows: Windows) -> tuple[tuple[int, ...], torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The window dimensions L (either layout) and video, start, stop int64[nL], valid bool[nL]."""
    L = np.broadcast_shapes(windows.video.shape, windows.start.shape, windows.stop.shape, windows.valid.shape)
    flat = [t.expand(L).reshape(-1).contiguous() for t in (windows.video, windows.start, windows.stop)]
    return tuple(L), *(t.long() for t in flat), windows.valid.expand(L).reshape(-1).contiguous()


def _episode(occurs: torch.Tensor, rel: torch.Tensor, windows: Windows, forward: bool, extra: int):
    """Shared body of the two episode wrappers; None when the torch twin must answer."""
    if occurs.dtype != torch.bool or rel.dtype != torch.bool or occurs.dim() != 3 or rel.dim() != 4:
        return None
    B, F, R = occurs.shape
    O = rel.shape[2]
    if rel.shape[:2] != (B, F) or rel.shape[3] != R or 0 in (B, F, R, O):
        return None
    try:
        L, video, start, stop, valid = _rows(windows)
    except RuntimeError:  # shapes that do not broadcast: the twin raises its own error
        return None
    n = video.shape[0]
    if n == 0 or not runtime.launchable(occurs, rel, video, start, stop, valid):
        return None
    runtime.bind()
    NW = -(-F // 64)
    occ_words = pack_frames(occurs)  # [B, NW, R]
    rel_words = pack_frames(rel)  # [B, NW, O, R]
    objects = torch.empty(n, O, R, dtype=torch.bool, device=rel.device)
    defined = torch.empty(n, R, dtype=torch.bool, device=rel.device)
    budget = runtime.tile_elements()
    BO = runtime.next_pow2(O)  # the object axis lives in one tile
    BR = runtime.block(R, budget // BO)
    BL = runtime.block(n, budget // (BO * BR))
    episode_kernel[(-(-n // BL), -(-R // BR))](
        occ_words, rel_words, video, start, stop, valid.view(torch.uint8), objects.view(torch.uint8),
        defined.view(torch.uint8), n, F, O, R, NW, int(extra), FORWARD=forward, BL=BL, BO=BO, BR=BR)
    return objects.reshape(*L, O, R), defined.reshape(*L, R)


@register("first_episode", backend="kernel")
def first_episode(occurs: torch.Tensor, rel: torch.Tensor, windows: Windows, semantics=None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Kernel twin of :func:`tensorqa.engine.primitives.first_last.first_episode`.

    occurs: bool[B, F, R]; rel: bool[B, F, O, R]. Returns (objects bool[*L, O, R], defined
    bool[*L, R])."""
    out = _episode(occurs, rel, windows, True, 0)
    return torch_first_last.first_episode(occurs, rel, windows, semantics) if out is None else out


@register("last_episode", backend="kernel")
def last_episode(occurs: torch.Tensor, rel: torch.Tensor, windows: Windows, semantics
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Kernel twin of :func:`tensorqa.engine.primitives.first_last.last_episode`.

    occurs: bool[B, F, R]; rel: bool[B, F, O, R]. Returns (objects bool[*L, O, R], defined
    bool[*L, R])."""
    out = _episode(occurs, rel, windows, False, semantics.obj_last_extra_keyframes)
    return torch_first_last.last_episode(occurs, rel, windows, semantics) if out is None else out


@register("choose_episode", backend="kernel")
def choose_episode(rel: torch.Tensor, windows: Windows, forward: bool, semantics) -> tuple[torch.Tensor, torch.Tensor]:
    """Kernel twin of :func:`tensorqa.engine.primitives.first_last.choose_episode`.

    rel: bool[B, F, K, R]. Returns (pick bool[*L, R, K, K], defined bool[*L, R, K, K])."""
    twin = torch_first_last.choose_episode
    if rel.dtype != torch.bool or rel.dim() != 4:
        return twin(rel, windows, forward, semantics)
    B, F, K, R = rel.shape
    try:
        L, video, start, stop, valid = _rows(windows)
    except RuntimeError:
        return twin(rel, windows, forward, semantics)
    n = video.shape[0]
    if 0 in (B, F, K, R, n) or not runtime.launchable(rel, video, start, stop, valid):
        return twin(rel, windows, forward, semantics)
    runtime.bind()
    NW = -(-F // 64)
    words = pack_frames(rel)  # [B, NW, K, R]
    pick = torch.empty(n, R, K, K, dtype=torch.bool, device=rel.device)
    defined = torch.empty_like(pick)
    BK = runtime.next_pow2(K)  # the candidate objects live in one tile (pairs: BK x BK)
    BN = runtime.block(n * R, runtime.tile_elements() // (BK * BK))
    choose_kernel[(-(-(n * R) // BN),)](
        words, video, start, stop, valid.view(torch.uint8), pick.view(torch.uint8), defined.view(torch.uint8),
        n * R, F, K, R, NW, FORWARD=bool(forward), KEEP_STOP=bool(semantics.choose_stretch_includes_stop),
        BN=BN, BK=BK)
    return pick.reshape(*L, R, K, K), defined.reshape(*L, R, K, K)
