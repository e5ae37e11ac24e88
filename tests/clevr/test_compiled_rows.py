"""``clevr.compiled_rows``: the answer counts kept sorted and CLEVR's rejection over them, against numpy's
sort and hand-worked counts (a row's evaluation against the torch grid: ``test_compiled``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tensorqa.clevr import compiled_rows as cr


class _Plan(NamedTuple):  # the one field of plan.Plan that the counting reads
    nbins: np.ndarray


class _Counts(NamedTuple):  # the two fields of compiled_classes.Scratch that it reads
    hist: np.ndarray
    hsort: np.ndarray


def test_rejects_compiled_is_clevrs_rule():
    """c > 1.1 x the runner-up, or c > 5 x max(median, 5)."""
    assert cr.rejects(12, 10, 0) and not cr.rejects(11, 10, 0)
    assert cr.rejects(26, 100, 2) and not cr.rejects(25, 100, 2)  # median under 5 counts as 5
    assert cr.rejects(31, 100, 6) and not cr.rejects(30, 100, 6)


def test_counts_stay_sorted_as_answers_are_counted():
    rng = np.random.default_rng(0)
    nbins = np.array([11, 2, 6])
    hist, hsort = np.zeros((3, 11), np.int64), np.zeros((3, 11), np.int64)
    hist[:, :] = rng.integers(0, 5, (3, 11))
    cr.sort_counts(hist, hsort, nbins)
    plan, counts = _Plan(nbins), _Counts(hist, hsort)
    for _ in range(300):
        ti = int(rng.integers(0, 3))
        cr.count_answer(plan, counts, ti, int(rng.integers(0, nbins[ti])))
        for t in range(3):
            np.testing.assert_array_equal(hsort[t, :nbins[t]], np.sort(hist[t, :nbins[t]]))


def test_rejected_reads_the_runner_up_and_the_median():
    """Counts [0, 3, 3, 9, 10] of a 5-bin template: runner-up 9, median 3."""
    hist = np.array([[0, 3, 3, 9, 10]], np.int64)
    hsort = np.zeros_like(hist)
    cr.sort_counts(hist, hsort, np.array([5]))
    plan, counts = _Plan(np.array([5])), _Counts(hist, hsort)
    assert cr.rejected(plan, counts, 0, 4)  # 10 > 9.9
    assert not cr.rejected(plan, counts, 0, 3)  # 9 <= 9.9, 9 <= 25
    cr.count_answer(plan, counts, 0, 3)  # 10 and 10: the runner-up is 10 now
    assert not cr.rejected(plan, counts, 0, 4)
