"""Runs of equal high bits in a sorted uint64 key array, found slice by slice (bounded memory)."""

from __future__ import annotations

import numpy as np

CHUNK = 1 << 22  # elements per streamed slice of a large array


def run_starts(keys: np.ndarray, shift: np.uint64) -> np.ndarray:
    """int64 positions where ``keys >> shift`` changes in a sorted ``keys`` (0 included)."""
    out = [np.zeros(1, np.int64)]
    for a in range(0, len(keys) - 1, CHUNK):
        hi = keys[a:a + CHUNK + 1] >> shift
        out.append(np.flatnonzero(hi[1:] != hi[:-1]) + a + 1)
    return np.concatenate(out)
