"""The count family's twins agree: ``count`` (``engine/primitives/count.py``) against its scalar
twin (``engine/scalar/query.py``) on the sets of random scenes: objects in a relation over each
window, actions in each window, objects present in the video."""

from __future__ import annotations

import importlib
from collections import Counter

import numpy as np
import torch
from hypothesis import given, settings, strategies as st

from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.filter import actions_in, present_objects, relate
from tensorqa.agqa.semantics import AGQA
from engine.scenes_for_twins import all_rel, flat_windows, random_batch, assert_cases_occur

# the module (the package re-exports the function under the same name)
tc = importlib.import_module("tensorqa.engine.primitives.count")
TALLY: Counter = Counter()


def test_every_count_primitive_has_a_scalar_twin():
    names = [n for n in registry.names() if registry.implementations(n)["torch"].__module__ == tc.__name__]
    assert names == ["count"]
    assert registry.scalar("count").__module__ == "tensorqa.engine.scalar.query"


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_count_torch_and_scalar_agree(seed):
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, AGQA)
    count = registry.scalar("count")
    for sets in (relate(all_rel(batch), flat).transpose(1, 2), actions_in(batch, flat), present_objects(batch)):
        got = tc.count(sets)
        assert got.dtype == torch.int64 and got.shape == sets.shape[:-1]
        flat_sets, flat_got = sets.reshape(-1, sets.shape[-1]).numpy(), got.reshape(-1).numpy()
        for items, n in zip(flat_sets, flat_got):
            assert int(n) == count(items)
            TALLY[f"count:{min(int(n), 3)}"] += 1


def test_count_hand_worked():
    # the empty set counts 0; an empty item axis counts 0 too
    assert tc.count(torch.tensor([[False, False], [True, True]])).tolist() == [0, 2]
    assert tc.count(torch.zeros(3, 0, dtype=torch.bool)).tolist() == [0, 0, 0]
    assert registry.scalar("count")(np.zeros(0, bool)) == 0


def test_zz_every_case_occurs():
    assert_cases_occur("count", TALLY, [
    "count:0",
    "count:1",
    "count:2",
    "count:3",
    ])
