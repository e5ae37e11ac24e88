"""CLEVR's image_index of many stored file names at once (compiled): the digits between the last '_'
and the last '.' of each fixed-width, NUL-padded name. Loaded by ``static_store`` on first use, so
that packing and the torch engine need no numba."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def plain_image_indices(names):
    """names uint8[S, W] (fixed-width, NUL-padded) -> (int64[S] indices, bool[S] plain): plain where
    the field is 1 to 18 ASCII digits; the others are left to ``image_index_of`` (its cases and errors)."""
    S, W = names.shape
    out = np.zeros(S, np.int64)
    plain = np.ones(S, np.bool_)
    for s in range(S):
        n = W
        while n > 0 and names[s, n - 1] == 0:
            n -= 1
        stop = n
        for i in range(n - 1, -1, -1):
            if names[s, i] == 46:  # '.'
                stop = i
                break
        start = 0
        for i in range(stop - 1, -1, -1):
            if names[s, i] == 95:  # '_'
                start = i + 1
                break
        if stop - start < 1 or stop - start > 18:
            plain[s] = False
            continue
        v = np.int64(0)
        for i in range(start, stop):
            c = names[s, i]
            if c < 48 or c > 57:
                plain[s] = False
                break
            v = v * 10 + (c - 48)
        out[s] = v
    return out, plain
