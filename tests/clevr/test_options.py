"""A CLEVR run's options and CLEVR's answer-count rejection (``clevr.options``)."""

from __future__ import annotations

import numpy as np
import pytest

from tensorqa.clevr.options import Options, rejected, rejects
from tensorqa.errors import TensorQAError


def clevr_rule(counts: list[int], a: int) -> bool:
    """CLEVR's generator, restated: reject answer a when its count is over 1.1 x the next-highest
    count, or over 5 x the median count (at least 5)."""
    ranked = sorted(counts)
    return counts[a] > 1.1 * ranked[-2] or counts[a] > 5 * max(ranked[len(ranked) // 2], 5)


@pytest.mark.parametrize(("counts", "a", "expected"), [
    ([0, 0], 0, False),  # nothing counted yet
    ([1, 0], 0, True),  # 1 > 1.1 x 0: a yes/no template alternates
    ([1, 0], 1, False),
    ([11, 10, 0], 0, False),  # 11 is not over 11.0
    ([12, 10, 0], 0, True),
    ([26, 26, 0, 0, 0], 1, True),  # 26 > 5 x max(0, 5)
    ([25, 25, 0, 0, 0], 1, False),  # 25 is not over 25
])
def test_hand_worked_histograms(counts, a, expected):
    assert rejected(np.array(counts), a) is expected


def test_rejects_is_clevrs_rule_on_random_histograms():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        h = rng.integers(0, 40, rng.integers(2, 12))
        a = int(rng.integers(len(h)))
        assert rejected(h, a) == clevr_rule(list(h), a)


def test_rejects_takes_the_sorted_counts_the_numba_backend_keeps():
    s = [0, 3, 7, 9]
    assert rejects(10, s[-2], s[len(s) // 2]) == clevr_rule([0, 3, 7, 10], 3)


@pytest.mark.parametrize(("field", "value", "flag"), [
    ("draws", 0, "--draws"),
    ("valid_draws", 5000, "--valid-draws"),
    ("batch_scenes", 0, "--batch-videos"),
    ("instances_per_template", 1001, "--instances-per-template"),
])
def test_out_of_range_options_are_one_line_errors(field, value, flag):
    with pytest.raises(TensorQAError, match=f"^{flag}: must be in 1\\.\\."):
        Options(**{field: value})


def test_engine_words_are_checked():
    with pytest.raises(TensorQAError, match="--engine: 'gpu' is not auto, compiled or torch"):
        Options(engine="gpu")
    with pytest.raises(TensorQAError, match="--engine compiled runs on the CPU"):
        Options(engine="compiled", device="cuda")
