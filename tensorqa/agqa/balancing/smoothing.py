"""Answer-distribution targets: kept counts per answer of one balancing key (``counts``: int64[m] ->
int64[m], ``0 <= kept <= counts``); which questions go is ``select``'s decision. The rules are
semantics §d steps 2-3: :func:`binary_targets` (vectorized over keys), :func:`smooth_counts` (one
open distribution), :func:`uniform_counts` (AGQA 2.0's stricter reading).

Where :func:`smooth_counts` departs from a literal reading: AGQA removes questions one at a time
from answers drawn in proportion to their counts, never below the next answer, giving up after
repeated failures. We use that process's expected outcome, exactly: the answers above the cut shrink
by one common factor, clipped at the first answer below the cut, integer counts by largest remainder;
when even that clip leaves the ratio above b, they stay at the clip (AGQA's give-up). Ties in the
order by count go to the lower answer code. ``last_pass_only`` (§f 10) applies only the last kept
pass's removals to the original counts.
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
    """AGQA's binary rule for many keys (§d step 2): key_start int64[K] (each key's first answer),
    counts int64[m] -> int64[m]; a key with one answer keeps nothing, otherwise every answer keeps the
    key's smallest count."""
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
