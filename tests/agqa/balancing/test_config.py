"""``agqa.balancing.config``: the presets, the overrides and every refused setting (one line naming it)."""

import math

import pytest

from tensorqa import TensorQAError
from tensorqa.agqa.balancing.config import PRESETS, BalanceConfig, balance_config


def test_presets_are_agqa_and_agqa2():
    assert set(PRESETS) == {"agqa", "agqa2"}
    assert PRESETS["agqa"] == BalanceConfig()  # AGQA's balancing is the default
    agqa2 = PRESETS["agqa2"]
    assert (agqa2.open_local, agqa2.max_steps) == ("uniform", 8)  # AGQA 2.0: flat open keys, at most 8 steps
    assert agqa2.open_family == "smooth" and agqa2.structural


def test_overrides_replace_fields_and_smoothing_fields_by_name():
    c = balance_config("agqa2", seed=9, ratio_bound=2.0)
    assert c.seed == 9 and c.smoothing.ratio_bound == 2.0 and c.max_steps == 8
    assert c.smoothing.ratio_decay == PRESETS["agqa2"].smoothing.ratio_decay
    assert "batch_rows" not in c.as_dict() and c.as_dict()["structure_shares"] == dict(c.structure_shares)


@pytest.mark.parametrize("make, message", [
    (lambda: balance_config("agqa3"), "unknown balance preset 'agqa3'"),
    (lambda: balance_config("agqa", colour="red"), r"unknown balance option\(s\) \['colour'\]"),
    (lambda: BalanceConfig(open_family="flat"), "open_family 'flat': expected one of"),
    (lambda: BalanceConfig(structure_shares={"verify": 0.5}), "query needs a positive share"),
    (lambda: BalanceConfig(structure_shares={"query": 0.5, "joke": 0.1}), r"unknown structure\(s\) \['joke'\]"),
    (lambda: BalanceConfig(structure_shares={"query": 0.8, "verify": 0.3}), "sum to at most 1"),
    (lambda: BalanceConfig(max_steps=0), "max_steps must be at least 1"),
    (lambda: balance_config(ratio_decay=1.0), r"ratio_decay must be in \(0, 1\)"),
    (lambda: balance_config(ratio_bound=math.nan), "ratio_bound must be at least 1"),
    (lambda: balance_config(ratio_bound=math.inf), "ratio_bound must be a finite number"),
    (lambda: balance_config(top_share=1.5), r"top_share must be in \[0, 1\]"),
    (lambda: BalanceConfig(shard_rows=0), "shard_rows must be at least 1"),
])
def test_bad_settings_are_one_line_errors(make, message):
    with pytest.raises(TensorQAError, match=message) as e:
        make()
    assert "\n" not in str(e.value)
