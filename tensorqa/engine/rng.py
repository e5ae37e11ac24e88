"""Seeded hashing: the one home of the reproducibility contract.

Every seeded choice in tensorqa is a pure function of (seed, stream, key words), never of a batch,
device or shard: ::

    h = mix64(seed * GOLDEN + stream)          # the stream's root
    h = mix64(h ^ word) for each key word      # folded in order

``mix64`` is splitmix64's finalizer, a bijection of 64-bit words. ``unit(h)`` turns a hash into a
float64 in (0, 1) from its top 53 bits; ``below(h, n)`` into an integer in [0, n) from its top 32.
The same functions exist for Python ints (``*_int``), numpy uint64 arrays (no suffix), torch int64
tensors (``*_torch``: two's-complement words, logical shifts, any device) and numba
(:mod:`tensorqa.engine.rng_numba`); ``tests/engine/test_rng.py`` holds golden values all four meet.

A stream is a named constant of :data:`STREAMS`; a new seeded choice takes a new name there.
"""

from __future__ import annotations

import numpy as np

GOLDEN = 0x9E3779B97F4A7C15
MIX1, MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # splitmix64's multipliers
_MASK = (1 << 64) - 1

# every seeded choice of the package, by name (the values are part of the output contract)
STREAMS = {
    "agqa.frame": 1,  # which of a template's wordings a question takes
    "agqa.reference": 2,  # which object references of a kind a video keeps
    "foils": 3,  # caption/foil candidates, draws and order (sub-keyed by phenomenon)
    "clevr.draw": 4,  # a CLEVR template's parameter draws
    "clevr.text": 5,  # a CLEVR question's synonyms, variant and optional parts
    "balance.strings": 6,  # the multipliers of the string hash that balancing and splits group by
}


# -- Python ints -----------------------------------------------------------------------------------

def mix64_int(x: int) -> int:
    """splitmix64's finalizer on a Python int (64-bit wrapping)."""
    x &= _MASK
    x = ((x ^ (x >> 30)) * MIX1) & _MASK
    x = ((x ^ (x >> 27)) * MIX2) & _MASK
    return x ^ (x >> 31)


def derive_int(seed: int, stream: str, *words: int) -> int:
    """The hash of (seed, stream, words...) as a Python int in [0, 2**64)."""
    h = mix64_int((seed & _MASK) * GOLDEN + STREAMS[stream])
    for w in words:
        h = mix64_int(h ^ (w & _MASK))
    return h


def below_int(h: int, n: int) -> int:
    """An int in [0, n) from the top 32 bits of ``h`` (n < 2**32)."""
    return ((h >> 32) * n) >> 32


# -- numpy -----------------------------------------------------------------------------------------

def mix64(x) -> np.ndarray:
    """splitmix64's finalizer on uint64 arrays (wrapping arithmetic); returns a new array."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(MIX1)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(MIX2)
    return x ^ (x >> np.uint64(31))


def derive(seed: int, stream: str, *words) -> np.ndarray:
    """uint64 hashes of (seed, stream, words...); the words broadcast (any integer arrays)."""
    h = np.uint64(mix64_int((seed & _MASK) * GOLDEN + STREAMS[stream]))
    for w in words:
        h = mix64(h ^ np.asarray(w).astype(np.uint64))
    return np.asarray(h, dtype=np.uint64)


def unit(h) -> np.ndarray:
    """float64 in (0, 1) from the top 53 bits of uint64 hashes."""
    return ((np.asarray(h, dtype=np.uint64) >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


def below(h, n) -> np.ndarray:
    """int64 in [0, n) from the top 32 bits of uint64 hashes (n int or integer array, n < 2**32)."""
    with np.errstate(over="ignore"):
        top = np.asarray(h, dtype=np.uint64) >> np.uint64(32)
        return ((top * np.asarray(n).astype(np.uint64)) >> np.uint64(32)).astype(np.int64)


def sequence(seed: int, stream: str, count: int) -> np.ndarray:
    """uint64[count]: the first ``count`` hashes of a stream (``derive(seed, stream, i)``)."""
    return derive(seed, stream, np.arange(count, dtype=np.uint64))


# -- torch -----------------------------------------------------------------------------------------

def _signed(c: int) -> int:
    return c - (1 << 64) if c >= 1 << 63 else c


def _shr(x, s: int):
    """Logical right shift of int64 words."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def mix64_torch(x):
    """``mix64`` on torch int64 tensors holding the words in two's complement (any device)."""
    x = (x ^ _shr(x, 30)) * _signed(MIX1)
    x = (x ^ _shr(x, 27)) * _signed(MIX2)
    return x ^ _shr(x, 31)


def derive_torch(seed: int, stream: str, *words):
    """``derive`` on torch: int64 tensors (two's complement of the uint64 hashes); words broadcast."""
    import torch

    h0 = _signed(mix64_int((seed & _MASK) * GOLDEN + STREAMS[stream]))
    h = None
    for w in words:
        w = torch.as_tensor(w, dtype=torch.int64)
        h = mix64_torch((w ^ h0) if h is None else (h ^ w))
    return torch.tensor(h0, dtype=torch.int64) if h is None else h


def unit_torch(h):
    """float64 in (0, 1) from the top 53 bits (torch)."""
    import torch

    return (_shr(h, 11).to(torch.float64) + 0.5) / float(1 << 53)


def below_torch(h, n):
    """int64 in [0, n) from the top 32 bits (torch; n < 2**31)."""
    return (_shr(h, 32) * n) >> 32
