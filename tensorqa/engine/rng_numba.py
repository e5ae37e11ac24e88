"""The numba front-end of :mod:`tensorqa.engine.rng` (imported only where numba is installed).

A kernel takes a stream's root, ``rng.derive_int(seed, stream)``, as a uint64 argument and folds its
key words with :func:`fold`; every operand is uint64 (numba turns mixed int64/uint64 arithmetic into
float64).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tensorqa.engine.rng import MIX1, MIX2


@njit(cache=True, inline="always")
def mix64(x):
    """splitmix64's finalizer on a uint64."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(MIX1)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(MIX2)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, inline="always")
def fold(h, word):
    """``mix64(h ^ word)``: one key word folded into a hash (word: any integer, taken as uint64)."""
    return mix64(np.uint64(h) ^ np.uint64(word))


@njit(cache=True, inline="always")
def unit(h):
    """float64 in (0, 1) from the top 53 bits."""
    return (np.float64(np.uint64(h) >> np.uint64(11)) + 0.5) / 9007199254740992.0


@njit(cache=True, inline="always")
def below(h, n):
    """int64 in [0, n) from the top 32 bits (n < 2**32)."""
    return np.int64(((np.uint64(h) >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))
