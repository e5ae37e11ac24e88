"""CLEVR's sizes and the engine's limits (tensorqa/clevr/constants.py) against the tables they size
and CLEVR's own figures (docs/reference/clevr.md)."""

from __future__ import annotations

from tensorqa.clevr.constants import MAX_BINS, MAX_COUNT, NUM_KEYS, ROUNDS
from tensorqa.clevr.generate import Options
from tensorqa.clevr.keys import all_keys
from tensorqa.clevr.templates import DEFAULT_TEMPLATES_DIR, load_templates
from tensorqa.clevr.templates import answer_domain


def test_the_key_count_is_the_key_tables():
    # 2 sizes, 8 colors, 2 materials, 3 shapes, each given or unspecified
    assert NUM_KEYS == all_keys().shape[0] == 3 * 9 * 3 * 4


def test_a_count_answer_has_one_bin_per_value_up_to_clevrs_ten():
    counts = [t for t in load_templates(DEFAULT_TEMPLATES_DIR) if t.nodes[-1]["type"].endswith("count")]
    assert counts
    for t in counts:
        kind, values = answer_domain(t)
        assert kind == "int" and values == tuple(range(11)) and len(values) == MAX_BINS == MAX_COUNT + 1


def test_the_default_draws_end_on_a_round():
    # --draws is spent in whole rounds: the default (16) is the first three rounds
    assert sum(ROUNDS[:3]) == Options().draws
