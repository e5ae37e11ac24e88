"""Frame sets as bit words: a keyframe mask bool[..., F] becomes int64[..., ceil(F / 64)], keyframe
f at bit f % 64 of word f // 64 (bits past F are 0).

With frames packed, the frame-set questions of the primitives are a few word operations: "x holds
somewhere in [lo, hi)" is ``words & range_bits(lo, hi) != 0``, "the first keyframe >= s where x
holds" is the lowest set bit of ``words & bits_from(s)``, and a window of 60 keyframes is one word.

Host side (torch): :func:`pack_frames`, :func:`unpack_frames`, :func:`num_words`.
Device side (Triton): the packer :func:`pack_kernel`, and the device functions the kernel
modules share: :func:`bits_from`, :func:`range_bits`, :func:`lowest_bit`, :func:`highest_bit`,
:func:`first_set`, :func:`last_set`, :func:`any_in` — plain functions marked for ``triton.jit``
(see ``runtime``), callable only from kernels.
"""

from __future__ import annotations

import math

import torch

from tensorqa.kernels import runtime
from tensorqa.kernels.runtime import jit

tl = None  # triton.language, set by runtime.bind() before a kernel compiles or runs

WORD_BITS = 64


def num_words(num_frames: int) -> int:
    """Words holding ``num_frames`` bits."""
    return -(-num_frames // WORD_BITS)


def _as_pfx(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, tuple[int, ...], tuple[int, ...]]:
    """x viewed as [P, F, X] around axis ``dim`` (contiguous), with the leading and trailing shapes."""
    dim = dim % x.dim()
    lead, tail = tuple(x.shape[:dim]), tuple(x.shape[dim + 1:])
    return x.contiguous().reshape(math.prod(lead), x.shape[dim], math.prod(tail)), lead, tail


def pack_frames_torch(x: torch.Tensor) -> torch.Tensor:
    """Torch packing (the twin of the Triton packer): x bool[P, F, X] -> int64[P, ceil(F/64), X]."""
    P, F, X = x.shape
    nw = num_words(F)
    if nw * WORD_BITS != F:
        x = torch.cat([x, x.new_zeros(P, nw * WORD_BITS - F, X)], 1)
    shifts = torch.arange(WORD_BITS, device=x.device)[:, None]
    # distinct powers of two: their sum is their OR (bit 63 wraps to the sign, as it should)
    return (x.reshape(P, nw, WORD_BITS, X).long() << shifts).sum(2)


def pack_frames(x: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """Pack the keyframe axis ``dim`` of a bool tensor into int64 words.

    x: bool[*lead, F, *tail] -> int64[*lead, ceil(F / 64), *tail]. Runs the Triton packer where
    kernels run (``runtime.launchable``), torch elsewhere; both give the same words.
    """
    flat, lead, tail = _as_pfx(x, dim)
    if runtime.launchable(flat) and flat.numel() > 0:
        words = _pack_triton(flat)
    else:
        words = pack_frames_torch(flat)
    return words.reshape(*lead, words.shape[1], *tail)


def unpack_frames(words: torch.Tensor, num_frames: int, dim: int = 1) -> torch.Tensor:
    """Inverse of :func:`pack_frames`: int64[*lead, W, *tail] -> bool[*lead, num_frames, *tail]."""
    flat, lead, tail = _as_pfx(words, dim)
    P, nw, X = flat.shape
    shifts = torch.arange(WORD_BITS, device=words.device)[:, None]
    bits = ((flat[:, :, None, :] >> shifts) & 1).bool().reshape(P, nw * WORD_BITS, X)[:, :num_frames]
    return bits.reshape(*lead, num_frames, *tail)


def _pack_triton(x: torch.Tensor) -> torch.Tensor:
    """x bool[P, F, X] (contiguous) -> int64[P, W, X] with the Triton packer."""
    runtime.bind()
    P, F, X = x.shape
    nw = num_words(F)
    out = torch.empty(P, nw, X, dtype=torch.int64, device=x.device)
    # a tile is BP rows x BX columns x 64 bits: wide rows fill it with BX, masks (X = 1) with BP
    budget = runtime.tile_elements() // WORD_BITS
    BX = runtime.block(X, min(budget, runtime.row_elements(64)))
    BP = runtime.block(P, budget // BX)
    grid = (-(-P // BP), nw, -(-X // BX))
    pack_kernel[grid](x.view(torch.uint8), out, P, F, X, nw, BP=BP, BX=BX)
    return out


# --------------------------------------------------------------------------------------------------
# Triton device functions and the packer (plain functions until runtime.bind wraps them)
# --------------------------------------------------------------------------------------------------

@jit
def pack_kernel(x_ptr, out_ptr, P, F, X, NW, BP: tl.constexpr, BX: tl.constexpr):
    """out[p, w, x] = OR over i < 64 of x[p, 64 w + i, x] << i, for a BP x BX tile of (p, x);
    x uint8[P, F, X]. The 64 bits of a word are loaded as one [BP, BX, 64] tile and folded in
    halves (OR-ing pairs of lanes) six times; Triton's ``sum`` would do, but it is a jitted library
    function bound to the mode Triton was imported in (see ``runtime``)."""
    p = (tl.program_id(0) * BP + tl.arange(0, BP)).to(tl.int64)[:, None, None]
    w = tl.program_id(1)
    c = (tl.program_id(2) * BX + tl.arange(0, BX))[None, :, None]
    i = tl.arange(0, 64)[None, None, :]
    f = w * 64 + i
    ok = (p < P) & (c < X)
    v = tl.load(x_ptr + (p * F + f) * X + c, mask=ok & (f < F), other=0).to(tl.int64) << i.to(tl.int64)
    a, b = tl.split(tl.reshape(v, (BP, BX, 32, 2)))
    a, b = tl.split(tl.reshape(a | b, (BP, BX, 16, 2)))
    a, b = tl.split(tl.reshape(a | b, (BP, BX, 8, 2)))
    a, b = tl.split(tl.reshape(a | b, (BP, BX, 4, 2)))
    a, b = tl.split(tl.reshape(a | b, (BP, BX, 2, 2)))
    a, b = tl.split(tl.reshape(a | b, (BP, BX, 1, 2)))
    word = tl.reshape(a | b, (BP, BX))
    p2 = tl.reshape(p, (BP, 1))
    c2 = tl.reshape(c, (1, BX))
    tl.store(out_ptr + (p2 * NW + w) * X + c2, word, mask=(p2 < P) & (c2 < X))


@jit
def bits_from(n):
    """int64: the bits at positions >= n of a word (all for n <= 0, none for n >= 64)."""
    k = tl.minimum(tl.maximum(n, 0), 63).to(tl.int64)
    ones = tl.full(k.shape, -1, tl.int64)
    return tl.where(n >= 64, 0, ones << k)


@jit
def range_bits(lo, hi):
    """int64: the bits at positions [lo, hi) of a word (positions relative to the word)."""
    return bits_from(lo) & ~bits_from(hi)


@jit
def lowest_bit(m):
    """int32: position of the lowest set bit of m int64 (m != 0): isolate it, then read its
    position off six masks (bit i of the position is set when the bit lies in mask i)."""
    b = m & (-m)
    p = tl.where((b & -4294967296) != 0, 32, 0)  # 0xFFFFFFFF00000000
    p += tl.where((b & -281470681808896) != 0, 16, 0)  # 0xFFFF0000FFFF0000
    p += tl.where((b & -71777214294589696) != 0, 8, 0)  # 0xFF00FF00FF00FF00
    p += tl.where((b & -1085102592571150096) != 0, 4, 0)  # 0xF0F0F0F0F0F0F0F0
    p += tl.where((b & -3689348814741910324) != 0, 2, 0)  # 0xCCCCCCCCCCCCCCCC
    p += tl.where((b & -6148914691236517206) != 0, 1, 0)  # 0xAAAAAAAAAAAAAAAA
    return p


@jit
def highest_bit(m):
    """int32: position of the highest set bit of m int64 (m != 0), by halving. Triton's >> on
    int64 is arithmetic; the sign copies it drags in sit above the half still examined, and are
    only there when that half's top bit is set anyway."""
    p = tl.full(m.shape, 0, tl.int32)
    t = m >> 32
    c = t != 0
    p += tl.where(c, 32, 0)
    m = tl.where(c, t, m)
    t = m >> 16
    c = t != 0
    p += tl.where(c, 16, 0)
    m = tl.where(c, t, m)
    t = m >> 8
    c = t != 0
    p += tl.where(c, 8, 0)
    m = tl.where(c, t, m)
    t = m >> 4
    c = t != 0
    p += tl.where(c, 4, 0)
    m = tl.where(c, t, m)
    t = m >> 2
    c = t != 0
    p += tl.where(c, 2, 0)
    m = tl.where(c, t, m)
    t = m >> 1
    p += tl.where(t != 0, 1, 0)
    return p


@jit
def first_set(words_ptr, stride, lo, F, NW, mask, INVERT: tl.constexpr):
    """int32: the first position p in [lo, F) whose bit is set (clear, with INVERT) in the words
    at ``words_ptr + w * stride`` (w < NW), or F where there is none. The pointer tile, lo and the
    load mask ``mask`` all have the tile's shape."""
    found = tl.full(lo.shape, 0, tl.int1)
    pos = tl.full(lo.shape, 0, tl.int32) + F
    for w in range(0, NW):
        word = tl.load(words_ptr + w * stride, mask=mask, other=0)
        if INVERT:
            word = ~word
        m = word & range_bits(lo - w * 64, F - w * 64)
        hit = (m != 0) & ~found
        pos = tl.where(hit, w * 64 + lowest_bit(m), pos)
        found = found | hit
    return pos


@jit
def last_set(words_ptr, stride, hi, NW, mask, INVERT: tl.constexpr):
    """int32: the last position p < hi whose bit is set (clear, with INVERT) in the words at
    ``words_ptr + w * stride``, or -1 where there is none. hi <= F: with INVERT the bits past F
    read as set. The pointer tile, hi and ``mask`` have the tile's shape."""
    pos = tl.full(hi.shape, -1, tl.int32)
    for w in range(0, NW):
        word = tl.load(words_ptr + w * stride, mask=mask, other=0)
        if INVERT:
            word = ~word
        m = word & ~bits_from(hi - w * 64)
        pos = tl.where(m != 0, w * 64 + highest_bit(m), pos)
    return pos


@jit
def any_in(words_ptr, stride, lo, hi, NW, mask):
    """bool: some position of [lo, hi) has its bit set in the words at ``words_ptr + w * stride``.
    ``mask`` (loads) has the tile's full shape; lo and hi broadcast against it."""
    acc = tl.full(mask.shape, 0, tl.int64)
    for w in range(0, NW):
        word = tl.load(words_ptr + w * stride, mask=mask, other=0)
        acc = acc | (word & range_bits(lo - w * 64, hi - w * 64))
    return acc != 0
