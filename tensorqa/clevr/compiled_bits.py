"""Object sets as int64 words (object i = bit i) for the compiled CLEVR engine: bit counts and
selection (LLVM intrinsics), the grid's hashes, a block's scene bits, a scene's present keys, and
small sorts. Used by ``compiled`` (generation) and ``compiled_records`` (records)."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from tensorqa.clevr.constants import NUM_KEYS

K = NUM_KEYS  # filter keys (keys.all_keys)
_M32 = 0xFFFFFFFF


@intrinsic
def _ctpop(typingctx, x):
    """LLVM's ctpop on an int64 (one POPCNT where the CPU has it)."""
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), [ir.IntType(64)]),
                                            "llvm.ctpop.i64")
        return builder.call(fn, args)

    return types.int64(types.int64), codegen


@intrinsic
def _cttz(typingctx, x):
    """LLVM's cttz on an int64 (trailing zeros; x > 0)."""
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), [ir.IntType(64), ir.IntType(1)]),
                                            "llvm.cttz.i64")
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 1)])

    return types.int64(types.int64), codegen


@njit(cache=True, inline="always")
def popcount(x):
    """Set bits of a non-negative int64."""
    return _ctpop(np.int64(x))


@njit(cache=True, inline="always")
def lowest_bit(x):
    """Index of the lowest set bit of x > 0."""
    return _cttz(np.int64(x))


@intrinsic
def _pdep(typingctx, x, mask):
    """x86 BMI2's PDEP on int64: the low bits of x deposited at the set bits of mask."""
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), [ir.IntType(64)] * 2),
                                            "llvm.x86.bmi.pdep.64")
        return builder.call(fn, args)

    return types.int64(types.int64, types.int64), codegen


def fast_pdep() -> bool:
    """Whether numba compiles for this machine's CPU (no ``NUMBA_CPU_NAME`` or ``NUMBA_CPU_FEATURES``)
    and it runs PDEP as one instruction: x86 with BMI2, but not AMD before Zen 3 (microcode, hundreds
    of cycles)."""
    import platform

    from llvmlite import binding as llvm
    from numba.core import config

    if config.CPU_NAME or config.CPU_FEATURES or platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        name, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features()
    except RuntimeError:
        return False
    return bool(features.get("bmi2")) and not name.startswith(("znver1", "znver2", "bdver", "btver"))


@njit(cache=True, inline="always")
def select_bit_halving(x, r):
    """Index of the r-th (from 0) set bit of x (r < popcount(x)), by halving: six popcounts."""
    pos = 0
    for width in (32, 16, 8, 4, 2, 1):
        low = x & ((np.int64(1) << width) - 1)
        c = popcount(low)
        if r >= c:
            r -= c
            x = (x >> width) & ((np.int64(1) << (64 - width)) - 1)
            pos += width
        else:
            x = low
    return pos


@njit(cache=True, inline="always")
def select_bit_pdep(x, r):
    """:func:`select_bit_halving` in two instructions: bit r deposited at x's r-th set bit (PDEP)."""
    return _cttz(_pdep(np.int64(1) << r, x))


# the r-th set bit of a word: the key draws' last step (generation 4-5 % faster with PDEP)
select_bit = select_bit_pdep if fast_pdep() else select_bit_halving


@njit(cache=True, inline="always")
def _mix(x):
    """``grid._mix``: a 32-bit finalizer on int64 (products wrap; the low 32 bits are exact)."""
    x = x & _M32
    x = x ^ (x >> 16)
    x = (x * 0x85EBCA6B) & _M32
    x = x ^ (x >> 13)
    x = (x * 0xC2B2AE35) & _M32
    return x ^ (x >> 16)


@njit(cache=True, inline="always")
def scene_hash(seed, scene):
    """The part of :func:`uniform`'s hash that a scene's draws share."""
    return _mix(_mix(np.int64(seed)) ^ scene)


@njit(cache=True, inline="always")
def uniform_in(h_scene, tid, draw, node):
    """:func:`uniform` from the scene's :func:`scene_hash`."""
    h = _mix(_mix(h_scene ^ (tid * 1009 + node)) ^ draw)
    return (np.float64(h) + 0.5) / 4294967296.0


@njit(cache=True, inline="always")
def uniform(seed, scene, tid, draw, node):
    """``grid.Block.uniforms`` for one row: float64 in (0, 1)."""
    return uniform_in(scene_hash(seed, scene), tid, draw, node)


@njit(cache=True, nogil=True)
def scene_bits(attrs, nobj, relcode, nvals):
    """Object sets of a block as int64 bits, from attrs int64[B, N, 4], nobj int64[B] (objects 0..n-1
    are real) and relcode uint8[B, N, N] (bit r: j is relation r of i, the store's ``rel_bits``):
    (maskbits [B], relbits [B, N, 4] (the objects j that are relation r of i), attrbits [B, 4, 8]
    (objects with value v of attribute a), keybits [B, K] (objects each filter key matches, in
    keys.all_keys' order))."""
    B, N = attrs.shape[0], attrs.shape[1]
    maskbits = np.zeros(B, np.int64)
    relbits = np.zeros((B, N, 4), np.int64)
    attrbits = np.zeros((B, 4, 8), np.int64)
    keybits = np.zeros((B, K), np.int64)
    ext = np.zeros((4, 9), np.int64)
    for b in range(B):
        n = nobj[b]
        for i in range(n):
            bit = np.int64(1) << i
            maskbits[b] |= bit
            for a in range(4):
                attrbits[b, a, attrs[b, i, a]] |= bit
            for j in range(n):
                c = relcode[b, i, j]
                for r in range(4):
                    if (c >> r) & 1:
                        relbits[b, i, r] |= np.int64(1) << j
        for a in range(4):
            ext[a, 0] = maskbits[b]
            for v in range(nvals[a]):
                ext[a, v + 1] = attrbits[b, a, v]
        k = 0  # keys.all_keys' order: size slowest, each attribute's "unspecified" (the whole scene) first
        for v0 in range(nvals[0] + 1):
            x0 = ext[0, v0]
            for v1 in range(nvals[1] + 1):
                x1 = x0 & ext[1, v1]
                for v2 in range(nvals[2] + 1):
                    x2 = x1 & ext[2, v2]
                    for v3 in range(nvals[3] + 1):
                        keybits[b, k] = x2 & ext[3, v3]
                        k += 1
    return maskbits, relbits, attrbits, keybits


@njit(cache=True)
def scene_keys(keybits_b, present, pk, pkbits, pkscnt):
    """The keys that match some object, in key order: their indices, object bits and counts; marks
    ``present``. Returns how many."""
    n = 0
    for k in range(K):
        bits = keybits_b[k]
        present[k] = bits != 0
        if bits != 0:
            pk[n], pkbits[n], pkscnt[n] = k, bits, popcount(bits)
            n += 1
    return n


@njit(cache=True, inline="always")
def absent_keys(ct, present, ct_allowed, absent):
    """absent[ct]: the keys that class table ``ct`` allows and that match no object of the scene."""
    n = 0
    for k in range(K):
        if not present[k] and ct_allowed[ct, k]:
            absent[ct, n] = k
            n += 1


@njit(cache=True, inline="always")
def key_index(params, kp_row, kpa_row):
    """The key of a filter node's params (unspecified: -1), size slowest as keys.all_keys."""
    v0, v1, v2, v3 = -1, -1, -1, -1
    for i in range(4):
        p = kp_row[i]
        if p < 0:
            continue
        a, val = kpa_row[i], params[p]
        if a == 0:
            v0 = val
        elif a == 1:
            v1 = val
        elif a == 2:
            v2 = val
        else:
            v3 = val
    return (((v0 + 1) * 9 + (v1 + 1)) * 3 + (v2 + 1)) * 4 + (v3 + 1)


@njit(cache=True)
def stable_order(use, order, bucket):
    """``np.argsort(use, kind="stable")`` into ``order`` (a counting sort: use counts are small)."""
    hi = use.max() + 1
    if hi + 1 > bucket.shape[0]:
        order[:] = np.argsort(use, kind="mergesort")
        return
    bucket[:hi + 1] = 0
    for t in range(use.shape[0]):
        bucket[use[t] + 1] += 1
    for u in range(1, hi + 1):
        bucket[u] += bucket[u - 1]
    for t in range(use.shape[0]):
        order[bucket[use[t]]] = t
        bucket[use[t]] += 1
