"""Answer-distribution targets: how many questions each answer of one distribution keeps.

These functions see counts, never questions: ``counts`` is int64[m], the number of questions per
answer of one balancing key; they return int64[m] kept counts (``0 <= kept <= counts``). Which
questions go is decided elsewhere (``tensorqa.agqa.balancing.select``).

* :func:`binary_targets` — AGQA's binary rule (semantics §d step 2), vectorized over many keys.
* :func:`smooth_counts` — AGQA's open-answer smoothing (§d step 3), one distribution.
* :func:`uniform_counts` — the stricter AGQA 2.0 reading: every answer of a distribution equal.

How :func:`smooth_counts` reads the reference, step by step:

1. Answers sorted by count, largest first (ties: lower answer code first). One answer: dropped.
   Two: both cut to the smaller.
2. Tail: the rarest answers whose counts sum to at most ``tail_fraction`` of the distribution are set
   aside untouched, unless that leaves 2 or fewer answers (then nothing is set aside).
3. Passes with ratio bound ``b`` = ``ratio_bound``, then ``b * ratio_decay`` ..., while
   ``b >= ratio_min``. A pass walks the cut points i = 1, 2, ... of the non-tail answers and stops
   at the first answer below the cut with fewer than ``min_answer_count`` questions. At cut i, if
   mean(answers above) / mean(answers below) > b, the answers above lose questions until the ratio
   is <= b.
4. AGQA removes those questions one at a time from an answer drawn with probability proportional
   to its current count, never making an answer smaller than the next one and giving up after
   repeated failures. We use that process's expected outcome, computed exactly: the answers above
   the cut shrink by one common factor (proportional removal keeps their ratios), clipped at the
   count of the first answer below the cut (the only "next one" that can bind), with integer counts
   by largest remainder. When even clipping everything at that count leaves the ratio above b, the
   answers stay at that count: AGQA's give-up.
5. After a pass: if fewer than ``min_keep_fraction`` of the distribution's questions (tail
   included) would remain, stop and keep the previous pass's state; else accept and stop if the
   ``top_fraction`` most frequent answers (rounded up) hold at most ``top_share`` of the questions.
6. ``last_pass_only`` (faithful default, semantics §f #10): AGQA tracks the counts as if every pass
   were applied but applies only the removals of the last pass it kept, so the result is
   ``original - removals of that pass``. With ``last_pass_only=False`` every kept pass is applied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SmoothingRule:
    """Parameters of AGQA's open-answer smoothing; the defaults are AGQA's (semantics §d step 3)."""

    ratio_bound: float = 3.0          # starting b
    ratio_decay: float = 0.75         # b *= this after each pass ...
    ratio_min: float = 1.0            # ... while b >= this
    tail_fraction: float = 0.05       # rarest answers holding this share are set aside
    min_answer_count: int = 10        # a pass stops at answers with fewer questions
    min_keep_fraction: float = 0.10   # never keep less than this share of the original
    top_fraction: float = 0.20        # acceptance: the top 20 % of answers (rounded up) ...
    top_share: float = 0.30           # ... hold at most 30 % of the questions
    last_pass_only: bool = True       # faithful: apply only the last kept pass's removals (§f #10)


def binary_targets(key_start: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """AGQA's binary rule for many keys at once (semantics §d step 2).

    key_start: int64[K] index of each key's first answer in ``counts`` (answers of a key contiguous).
    counts:    int64[m] questions per (key, answer).
    Returns int64[m]: keys with one answer keep nothing; otherwise every answer keeps the key's
    smallest count (two answers: exactly 50/50; more answers, which binary templates never produce:
    all equal to the smallest).
    """
    counts = np.asarray(counts, np.int64)
    if len(counts) == 0:
        return counts.copy()
    n_answers = np.diff(np.r_[key_start, len(counts)])
    smallest = np.minimum.reduceat(counts, key_start)
    per_key = np.where(n_answers >= 2, smallest, 0)
    return np.repeat(per_key, n_answers)


def uniform_counts(counts: np.ndarray, min_answer_count: int = 10) -> np.ndarray:
    """Every answer with at least ``min_answer_count`` questions cut to the smallest of them; rarer
    answers dropped; a distribution left with fewer than two answers dropped entirely."""
    counts = np.asarray(counts, np.int64)
    big = counts >= min_answer_count
    if big.sum() < 2:
        return np.zeros_like(counts)
    return np.where(big, counts[big].min(), 0)


def smooth_counts(counts: np.ndarray, rule: SmoothingRule = SmoothingRule()) -> np.ndarray:
    """Kept count per answer after AGQA's open-answer smoothing (module docstring)."""
    counts = np.asarray(counts, np.int64)
    m = len(counts)
    if m == 0:
        return counts.copy()
    order = np.lexsort((np.arange(m), -counts))
    c = counts[order]
    if m <= 2:
        kept_sorted = np.zeros(m, np.int64) if m == 1 else np.full(m, c.min())
    else:
        kept_sorted = _smooth_sorted(c, rule)
    kept = np.empty(m, np.int64)
    kept[order] = kept_sorted
    return kept


def _smooth_sorted(c: np.ndarray, rule: SmoothingRule) -> np.ndarray:
    """Smoothing of a distribution sorted largest first, with at least three answers."""
    m, total = len(c), int(c.sum())
    from_bottom = np.cumsum(c[::-1])
    n_tail = int((from_bottom <= rule.tail_fraction * total).sum())
    if m - n_tail <= 2:
        n_tail = 0
    head, tail_sum = c[: m - n_tail].copy(), int(c[m - n_tail:].sum())
    state = head.copy()
    last_removed = np.zeros_like(head)
    b = rule.ratio_bound
    while b >= rule.ratio_min:
        after = _one_pass(state, b, rule.min_answer_count)
        if int(after.sum()) + tail_sum < rule.min_keep_fraction * total:
            break  # keep the previous pass's state (and its removals)
        last_removed = state - after
        state = after
        if _accepted(np.r_[state, c[m - n_tail:]], rule):
            break
        b *= rule.ratio_decay
    kept_head = head - last_removed if rule.last_pass_only else state
    return np.r_[kept_head, c[m - n_tail:]]


def _one_pass(c: np.ndarray, b: float, min_answer_count: int) -> np.ndarray:
    """One walk down the cut points with ratio bound b (``c`` sorted largest first)."""
    c = c.copy()
    for i in range(1, len(c)):
        if c[i] < min_answer_count:
            break
        upper, lower = int(c[:i].sum()), int(c[i:].sum())
        n_lower = len(c) - i
        # mean(upper) / mean(lower) <= b  <=>  upper * n_lower <= b * i * lower
        if upper * n_lower <= b * i * lower:
            continue
        allowed = math.floor(b * i * lower / n_lower)
        c[:i] = _shrink(c[:i], allowed, int(c[i]))
    return c


def _shrink(u: np.ndarray, allowed: int, floor: int) -> np.ndarray:
    """Scale ``u`` (sorted, largest first) by one factor so it sums to ``allowed``, never below
    ``floor``; integer counts by largest remainder, order preserved."""
    k = len(u)
    target = max(allowed, k * floor)
    if target >= int(u.sum()):
        return u.copy()
    # the answers above the floor after scaling are a prefix: find its length j
    csum = np.cumsum(u)
    for j in range(k, 0, -1):
        s = (target - (k - j) * floor) / csum[j - 1]
        if s * u[j - 1] >= floor:
            break
    else:
        return np.full(k, floor, np.int64)
    real = np.maximum(s * u.astype(np.float64), floor)
    real[j:] = floor
    base = np.floor(real).astype(np.int64)
    short = target - int(base.sum())
    if short > 0:
        frac = real - base
        take = np.lexsort((np.arange(k), -frac))[:short]  # largest remainder, then earlier answer
        base[take] += 1
    return np.minimum(base, u)


def _accepted(counts: np.ndarray, rule: SmoothingRule) -> bool:
    """The top ``top_fraction`` of answers (rounded up) hold at most ``top_share`` of the questions."""
    counts = np.sort(counts[counts > 0])[::-1]
    if len(counts) == 0:
        return True
    top = math.ceil(rule.top_fraction * len(counts) - 1e-9)
    return int(counts[:top].sum()) <= rule.top_share * int(counts.sum())
