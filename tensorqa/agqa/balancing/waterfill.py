"""Water-filling: spread a cut over groups by lowering the largest first (AGQA's way of spreading
removals, §d steps 1 and 5). :func:`waterfill` serves many parents at once, :func:`waterfill_rows`
a few columns per row. Both are exact integer solutions; ties keep the extra unit on the larger,
then earlier member (``waterfill``) or take it from the earlier column (``waterfill_rows``)."""

from __future__ import annotations

import numpy as np


def waterfill(sizes: np.ndarray, parent: np.ndarray, cut: np.ndarray) -> np.ndarray:
    """int64[n] removals (0 <= removed <= sizes) so that parent p loses ``min(cut[p], its total)``:
    sizes int64[n] >= 0, parent int64[n] in 0..P-1, cut int64[P] (<= 0: none)."""
    sizes = np.asarray(sizes, np.int64)
    parent = np.asarray(parent, np.int64)
    n = len(sizes)
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort((np.arange(n), -sizes, parent))  # by parent, largest first, then index
    x, par = sizes[order], parent[order]
    new_seg = np.r_[True, par[1:] != par[:-1]]
    starts = np.flatnonzero(new_seg)
    seg = np.cumsum(new_seg) - 1
    pos = np.arange(n) - starts[seg]
    csum = np.cumsum(x)
    prefix = csum - (csum - x)[starts][seg]                 # sum of the top pos+1 members
    nxt = np.r_[x[1:], 0]
    nxt[np.r_[new_seg[1:], True]] = 0                       # after a segment's last member: level 0
    cost = prefix - (pos + 1) * nxt                         # lower the top pos+1 to the next size
    c = np.asarray(cut, np.int64)[par]
    m = np.add.reduceat((cost < c).astype(np.int64), starts) + 1   # members lowered per parent
    seg_len = np.diff(np.r_[starts, n])
    everything = m > seg_len
    m_c = np.minimum(m, seg_len)
    top = prefix[starts + m_c - 1]                          # their current total
    rest = np.maximum(top - np.maximum(cut, 0)[par[starts]], 0)
    q, r = rest // m_c, rest % m_c
    lowered = pos < m_c[seg]
    level = q[seg] + (pos < r[seg])
    new = np.where(lowered, level, x)
    new[everything[seg]] = 0
    removed = np.empty(n, np.int64)
    removed[order] = x - new
    return removed


def waterfill_rows(x: np.ndarray, cut: np.ndarray) -> np.ndarray:
    """Per row, remove ``min(cut, row sum)`` units, lowering the largest columns first: x int64[R, L]
    (L small), cut int64[R] -> int64[R, L], what removing one unit at a time from the largest (earliest)
    column gives. Only the final level is computed; columns are clipped to level + 1 and the earliest
    at level + 1 drop the remaining units."""
    x = np.asarray(x, np.int64)
    R, L = x.shape
    if R == 0:
        return np.zeros((R, L), np.int64)
    c = np.minimum(np.clip(cut, 0, None), x.sum(axis=1))
    xs = _sorted_desc(x)
    prefix = np.cumsum(xs, axis=1)
    nxt = np.concatenate([xs[:, 1:], np.zeros((R, 1), np.int64)], axis=1)
    cost = prefix - np.arange(1, L + 1)[None, :] * nxt       # lower the top j+1 to the next size
    m = np.minimum((cost < c[:, None]).sum(axis=1) + 1, L)   # columns lowered
    top = prefix[np.arange(R), m - 1]
    q = (top - c) // m                                        # they end at q or q + 1
    y = np.minimum(x, (q + 1)[:, None])
    extra = y.sum(axis=1) - (x.sum(axis=1) - c)               # columns that go on down to q
    at_top = (y == (q + 1)[:, None]) & (x >= (q + 1)[:, None])
    drop = at_top & (np.cumsum(at_top, axis=1) <= extra[:, None])
    return x - y + drop


def _sorted_desc(x: np.ndarray) -> np.ndarray:
    """Each row sorted largest first, by a compare-exchange network over the columns (numpy's
    per-row sort is slow for millions of rows of a few columns)."""
    cols = [x[:, j].copy() for j in range(x.shape[1])]
    for i in range(len(cols)):
        for j in range(len(cols) - 1 - i):
            hi = np.maximum(cols[j], cols[j + 1])
            cols[j + 1] = np.minimum(cols[j], cols[j + 1])
            cols[j] = hi
    return np.stack(cols, axis=1)
