"""Keep a quota of questions per cell, chosen at random, with one sort and no Python loop per question.

The balancing pass keeps its per-question arrays in *priority order*: position p holds the question
whose seeded random priority ranks p-th. Selecting "t random questions of a cell" is then "the t
first positions of the cell". :func:`select_in_cells` packs ``cell << bits | position`` into one
uint64 per question, sorts it (numpy's vectorized sort of plain integers, far faster than argsort),
reads the cells off as runs of the sorted array, asks a target function how many questions each
bucket keeps, spreads each bucket's removals over its temporal-change labels
(``labels.label_removals``) and clears ``alive`` for the tail of every cell.

Cells are (key, answer, label): ``key`` is the balancing key of the step (family, local key, ...),
``answer`` an answer code, ``label`` one of the four temporal-change labels. A bucket is
(key, answer); buckets of one key are adjacent, sorted by answer code.
"""

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

    alive:       bool[n] questions still in the pool (priority order); cleared for removed ones.
    take:        bool[n] questions this step looks at (a subset of ``alive``).
    wkey:        int32[n] (template, window, local) code per question; ``key_of_wkey`` int64[W] maps
                 it to the step's key in 0..n_keys-1.
    answer:      int32[n] answer codes in 0..n_answers-1.
    label:       int8[n] temporal-change labels.
    per_key:     the targets of a key depend on that key's buckets only; then the keys are cut into
                 parts (key code modulo the number of parts) of about ``part_rows`` questions, each
                 selected on its own, so the step's extra memory is bounded by the part size. The
                 result is the same for any number of parts.
    """
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
