"""Keep a quota of questions per cell, chosen at random, with one sort and no Python loop per question.

The arrays are in priority order (position p: the question whose seeded priority ranks p-th), so
"t random questions of a cell" is its first t positions. Cells are (key, answer, label); a bucket
is (key, answer), the buckets of a key adjacent by answer code."""

from __future__ import annotations

from typing import Callable

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.agqa.balancing.labels import label_removals
from tensorqa.agqa.balancing.runs import CHUNK, run_starts


_BUCKETS = 1 << 18  # buckets per slice of the label arithmetic

# targets(bucket_key int64[B], bucket_answer int64[B], label_counts int64[B, 4]) -> kept int64[B]
Targets = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


PART_ROWS = 1 << 23  # questions per partition of a per-key step (bounds the step's extra memory)


def select_in_cells(alive: np.ndarray, take: np.ndarray, wkey: np.ndarray, key_of_wkey: np.ndarray, n_keys: int,
                    answer: np.ndarray, n_answers: int, label: np.ndarray, targets: Targets,
                    per_key: bool = False, part_rows: int | None = None) -> int:
    """Apply one balancing step in place; returns the number of questions removed.

    alive: bool[n] (priority order), cleared for removed questions; take: bool[n] the questions this
    step looks at; wkey: int32[n] (template, window, local) code, ``key_of_wkey`` int64[W] its step key;
    answer: int32[n]; label: int8[n]. ``per_key``: a key's targets read only its own buckets, so the keys
    are cut into parts of about ``part_rows`` questions (bounded memory, same result)."""
    n = len(alive)
    bits = max(1, int(n - 1).bit_length())
    cell_bits = max(1, int(max(n_keys, 1) * max(n_answers, 1) * 4 - 1).bit_length())
    if bits + cell_bits > 64:
        raise TensorQAError(f"balancing key space too large: {n_keys:,} keys x {n_answers:,} answers x "
                            f"{n:,} questions do not fit one 64-bit sort key; balance fewer questions per pass")
    m = int(np.count_nonzero(take))
    parts = max(1, -(-m // (part_rows or PART_ROWS))) if per_key else 1
    return sum(_select_part(alive, take, wkey, key_of_wkey, answer, n_answers, label, targets, bits, p, parts)
               for p in range(parts))


def _select_part(alive, take, wkey, key_of_wkey, answer, n_answers, label, targets, bits, part, parts) -> int:
    n = len(alive)
    shift = np.uint64(bits)
    chunks = []
    for a in range(0, n, CHUNK):
        idx = np.flatnonzero(take[a:a + CHUNK]) + a
        key = key_of_wkey[wkey[idx]]
        if parts > 1:
            mine = key % parts == part
            idx, key = idx[mine], key[mine]
        cell = (key.astype(np.uint64) * np.uint64(n_answers) + answer[idx].astype(np.uint64)) * np.uint64(4)
        cell += label[idx].astype(np.uint64)
        chunks.append((cell << shift) | idx.astype(np.uint64))
    m = sum(len(c) for c in chunks)
    if m == 0:
        return 0
    keys = np.concatenate(chunks)
    del chunks
    keys.sort()
    starts = run_starts(keys, shift)
    R = len(starts)
    run_len = np.diff(np.r_[starts, m]).astype(np.int32)
    run_cell = keys[starts] >> shift
    run_label = (run_cell & np.uint64(3)).astype(np.int8)
    run_bucket = run_cell >> np.uint64(2)
    del run_cell
    new_bucket = np.r_[True, run_bucket[1:] != run_bucket[:-1]]
    bucket_start = np.flatnonzero(new_bucket)            # first run of each bucket
    bucket = run_bucket[bucket_start].astype(np.int64)
    del run_bucket, new_bucket
    B = len(bucket)
    bucket_of_run = np.repeat(np.arange(B, dtype=np.int32), np.diff(np.r_[bucket_start, R]))
    counts = np.zeros((B, 4), np.int32)
    counts[bucket_of_run, run_label] = run_len
    kept = np.asarray(targets(bucket // n_answers, bucket % n_answers, counts), np.int64)
    del bucket
    # removals per run, bucket chunk by bucket chunk (the per-bucket matrices stay small)
    quota = run_len.copy()
    for b0 in range(0, B, _BUCKETS):
        b1 = min(b0 + _BUCKETS, B)
        c = counts[b0:b1].astype(np.int64)
        removals = label_removals(c, c.sum(axis=1) - kept[b0:b1])
        r0, r1 = bucket_start[b0], (bucket_start[b1] if b1 < B else R)
        quota[r0:r1] -= removals[bucket_of_run[r0:r1] - b0, run_label[r0:r1]].astype(np.int32)
    del counts, kept, bucket_of_run, run_label, bucket_start
    removed = 0
    if (quota < run_len).any():
        mask = np.uint64((1 << bits) - 1)
        for a in range(0, m, CHUNK):
            pos = np.arange(a, min(a + CHUNK, m))
            run = np.searchsorted(starts, pos, side="right") - 1
            drop = (pos - starts[run]) >= quota[run]
            rows = (keys[a:a + CHUNK][drop] & mask).astype(np.int64)
            alive[rows] = False
            removed += len(rows)
    return removed
