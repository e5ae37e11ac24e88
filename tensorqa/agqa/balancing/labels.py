"""Temporal-change labels (semantics §d step 1) and the order in which they give up questions.

Labels: ``same`` (0) / ``different`` (1), a localized question whose ``direct_group`` has a direct
question with the same / another answer; ``no direct`` (2), a localized question without one; ``no
temporal`` (3), an unlocalized question. :func:`label_removals` takes a bucket's k questions by
equalizing same and different, trimming toward no direct, then no temporal, then evenly."""

from __future__ import annotations

import numpy as np

from tensorqa.agqa.balancing.runs import CHUNK, run_starts
from tensorqa.agqa.balancing.waterfill import waterfill_rows

LABELS: tuple[str, ...] = ("same", "different", "no direct", "no temporal")
SAME, DIFFERENT, NO_DIRECT, NO_TEMPORAL = range(4)


PART_ROWS = 1 << 23  # candidates per partition of the join (bounds its extra memory)


def temporal_labels(group_hash: np.ndarray, is_direct: np.ndarray, localized: np.ndarray,
                    answer: np.ndarray, has_group: np.ndarray | None = None, part_rows: int | None = None) -> np.ndarray:
    """int8[n] label per question. group_hash: uint64[n] hash of ``direct_group``; is_direct, localized:
    bool[n]; answer: int[n]; has_group: bool[n] (False: empty ``direct_group``, never matched).

    A sort-based join: candidates are packed as ``hash prefix | not-direct bit | row`` and sorted, so
    each run of equal prefixes starts with its direct question; the full hash is compared before a
    match, and runs mixing groups (rare) are resolved by a second pass over their rows. Parts of about
    ``part_rows`` candidates (by hash) bound the extra memory."""
    n = len(group_hash)
    labels = np.full(n, NO_TEMPORAL, np.int8)
    if n == 0:
        return labels
    is_direct = np.asarray(is_direct, bool)
    localized = np.asarray(localized, bool)
    grouped = np.ones(n, bool) if has_group is None else np.asarray(has_group, bool)
    labels[localized] = NO_DIRECT
    cand = grouped & (is_direct | localized)
    m = int(np.count_nonzero(cand))
    parts = max(1, -(-m // (part_rows or PART_ROWS)))
    for part in range(parts):  # groups partitioned by hash: each part joins on its own
        _label_part(labels, cand, group_hash, is_direct, localized, answer, part, parts)
    return labels


def _label_part(labels, cand, group_hash, is_direct, localized, answer, part: int, parts: int) -> None:
    n = len(labels)
    row_bits = max(1, int(n - 1).bit_length())
    prefix_bits = 64 - row_bits - 1
    row_mask, shift = np.uint64((1 << row_bits) - 1), np.uint64(row_bits + 1)
    chunks = []
    for a in range(0, n, CHUNK):  # hash prefix | not-direct bit | row, built slice by slice
        rows = np.flatnonzero(cand[a:a + CHUNK]) + a
        if parts > 1:
            rows = rows[(group_hash[rows] % np.uint64(parts)) == np.uint64(part)]
        key = (group_hash[rows] >> np.uint64(64 - prefix_bits)) << shift
        key |= (~is_direct[rows]).astype(np.uint64) << np.uint64(row_bits)
        key |= rows.astype(np.uint64)
        chunks.append(key)
    key = np.concatenate(chunks)
    del chunks
    if len(key) == 0:
        return
    key.sort()
    starts = run_starts(key, shift)
    first = (key[starts] & row_mask).astype(np.int64)
    first_hash, first_direct = group_hash[first], is_direct[first]
    first_ans = np.where(first_direct, answer[first], -1)
    mixed_runs = []
    for a in range(0, len(key), CHUNK):
        rows = (key[a:a + CHUNK] & row_mask).astype(np.int64)
        run = np.searchsorted(starts, np.arange(a, a + len(rows)), side="right") - 1
        mine = group_hash[rows]
        direct = first_direct[run]
        ok = direct & (mine == first_hash[run]) & localized[rows]
        labels[rows[ok]] = np.where(answer[rows[ok]] == first_ans[run[ok]], SAME, DIFFERENT)
        mixed_runs.append(np.unique(run[direct & (mine != first_hash[run])]))
    # prefix collisions: rows of a run whose direct has another full hash; rare, so resolved by a
    # dictionary over those runs' rows only
    bad = np.unique(np.concatenate(mixed_runs))
    if len(bad):
        ends = np.r_[starts[1:], len(key)]
        sel = np.concatenate([np.arange(starts[r], ends[r]) for r in bad])
        rows = (key[sel] & row_mask).astype(np.int64)
        direct_ans: dict[int, int] = {}
        for r in rows[is_direct[rows]]:
            direct_ans.setdefault(int(group_hash[r]), int(answer[r]))
        for r in rows[localized[rows]]:
            got = direct_ans.get(int(group_hash[r]))
            labels[r] = NO_DIRECT if got is None else (SAME if got == int(answer[r]) else DIFFERENT)


def label_removals(counts: np.ndarray, remove: np.ndarray) -> np.ndarray:
    """Questions to remove per label for many buckets: counts int64[B, 4] (LABELS order), remove
    int64[B] (clipped to the bucket) -> int64[B, 4], in the module docstring's order."""
    counts = np.asarray(counts, np.int64)
    out = np.zeros_like(counts)
    k_all = np.clip(np.asarray(remove, np.int64), 0, counts.sum(axis=1))
    rows = np.flatnonzero(k_all)
    if len(rows) == 0:
        return out
    # fast path: a bucket with one non-empty label loses everything from that label
    single = (counts[rows] > 0).sum(axis=1) == 1
    if single.any():
        r1 = rows[single]
        out[r1, np.argmax(counts[r1] > 0, axis=1)] = k_all[r1]
        rows = rows[~single]
        if len(rows) == 0:
            return out
    x, k = counts[rows], k_all[rows]
    removed = np.zeros_like(x)
    stages = (
        ((SAME, DIFFERENT), np.minimum(x[:, SAME], x[:, DIFFERENT])),  # equalize same and different
        ((SAME, DIFFERENT), None),                                     # trim toward no direct
        ((SAME, DIFFERENT, NO_DIRECT), None),                          # ... toward no temporal
        ((SAME, DIFFERENT, NO_DIRECT, NO_TEMPORAL), 0),                # then evenly
    )
    for cols, floor in stages:
        cols = list(cols)
        if floor is None:  # the label just after the stage's columns is the level to trim toward
            floor = x[:, cols[-1] + 1]
        excess = np.maximum(x[:, cols] - np.reshape(floor, (-1, 1)), 0)
        take = np.minimum(k, excess.sum(axis=1))
        busy = np.flatnonzero(take)
        if len(busy) == 0:
            continue
        r = waterfill_rows(excess[busy], take[busy])
        x[np.ix_(busy, cols)] -= r
        removed[np.ix_(busy, cols)] += r
        k = k - take
        if not k.any():
            break
    out[rows] = removed
    return out
