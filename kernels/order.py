"""Kernel twin of ``primitives/order.py``'s ``side_of`` (relTime / objTime).

For every anchor action k and every x (relation or object) the torch twin reads a prefix-count
table int32[B, F + 1, X] at six positions: x occurs before / during / after the anchor's compare
windows. Packed, each side is ``occurs[b, :, x] & range_bits(lo, hi) != 0`` on a word or two.
Grid evaluation calls it with occurs bool[B, F, Kr] (relTime) or bool[B, F, Ko] (objTime) and
the compare windows of the present actions [B, K].
"""

from __future__ import annotations

import torch

from tensorqa.engine.primitives import order as torch_order
from tensorqa.engine.primitives.localize import CompareWindows
from tensorqa.engine.primitives.registry import register
from tensorqa.kernels import runtime
from tensorqa.kernels.bits import any_in, pack_frames
from tensorqa.kernels.runtime import jit

tl = None  # triton.language, set by runtime.bind() before a kernel compiles or runs


@jit
def side_of_kernel(occ_ptr, first_ptr, last_ptr, before_stop_ptr, after_start_ptr, single_ptr, nf_ptr,
                   side_ptr, defined_ptr, N, K, X, NW, BN: tl.constexpr, BX: tl.constexpr):
    """side int64[B, K, X] (0 before / 1 after) and defined uint8[B, K, X] for BN rows n = (video
    b, anchor k) = b * K + k and BX columns x; occ int64[B, NW, X], compare windows [B, K]
    (int64; single uint8), nf int64[B]."""
    n = (tl.program_id(0) * BN + tl.arange(0, BN)).to(tl.int64)
    x = tl.program_id(1) * BX + tl.arange(0, BX)
    nok = n < N
    ok = nok[:, None] & (x[None, :] < X)
    b = n // K
    first = tl.load(first_ptr + n, mask=nok, other=0)[:, None]
    last = tl.load(last_ptr + n, mask=nok, other=0)[:, None]
    before_stop = tl.load(before_stop_ptr + n, mask=nok, other=0)[:, None]
    after_start = tl.load(after_start_ptr + n, mask=nok, other=0)[:, None]
    single = tl.load(single_ptr + n, mask=nok, other=0)[:, None] != 0
    nf = tl.load(nf_ptr + b, mask=nok, other=0)[:, None]
    words = occ_ptr + b[:, None] * NW * X + x[None, :]
    during = any_in(words, X, first, last + 1, NW, ok)
    before = any_in(words, X, first * 0, before_stop, NW, ok)
    after = any_in(words, X, after_start, nf, NW, ok)
    defined = single & ~during & (before != after)
    side = tl.where(before, 0, 1).to(tl.int64)
    out = n[:, None] * X + x[None, :]
    tl.store(side_ptr + out, side, mask=ok)
    tl.store(defined_ptr + out, defined.to(tl.uint8), mask=ok)


@register("side_of", backend="kernel")
def side_of(occurs: torch.Tensor, cw: CompareWindows, num_frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Kernel twin of :func:`tensorqa.engine.primitives.order.side_of`.

    occurs: bool[B, F, X]; cw: compare windows of anchors [B, K]; num_frames: int64[B].
    Returns (side int64[B, K, X]: 0 before / 1 after, defined bool[B, K, X]).
    """
    twin = torch_order.side_of
    if occurs.dtype != torch.bool or occurs.dim() != 3 or cw.first.dim() != 2 or cw.single.dtype != torch.bool:
        return twin(occurs, cw, num_frames)
    B, F, X = occurs.shape
    K = cw.first.shape[1]
    edges = (cw.first, cw.last, cw.before_stop, cw.after_start, cw.single)
    if any(t.shape != (B, K) for t in edges) or num_frames.shape != (B,) or num_frames.is_floating_point() \
            or 0 in (B, F, X, K) or not runtime.launchable(occurs, num_frames, *edges):
        return twin(occurs, cw, num_frames)
    runtime.bind()
    first, last, before_stop, after_start = (t.long().contiguous() for t in edges[:4])
    single = cw.single.contiguous().view(torch.uint8)
    side = torch.empty(B, K, X, dtype=torch.int64, device=occurs.device)
    defined = torch.empty(B, K, X, dtype=torch.bool, device=occurs.device)
    BX = runtime.block(X, runtime.row_elements(128))
    BN = runtime.block(B * K, runtime.tile_elements() // BX)
    side_of_kernel[(-(-(B * K) // BN), -(-X // BX))](
        pack_frames(occurs), first, last, before_stop, after_start, single, num_frames.long().contiguous(),
        side, defined.view(torch.uint8), B * K, K, X, -(-F // 64), BN=BN, BX=BX)
    return side, defined
