"""The exists family's twins agree: ``exists`` (with and without ``which``) and ``has_item``
(``engine/primitives/exists.py``) against their scalar twins (``engine/scalar/query.py``) on the
sets the grid asks about on random scenes: actions in each window (actExists; the grid asks every
class; these tests check the present ones), relations present (relExists), objects in a relation
(objRelExists)."""

from __future__ import annotations

import importlib
from collections import Counter

import numpy as np
import torch
from hypothesis import given, settings, strategies as st

from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.filter import actions_in, relate, relations_present
from tensorqa.engine.primitives.localize import present_actions
from tensorqa.agqa.semantics import AGQA, STRICT
from engine.scenes_for_twins import RELATIONS, all_rel, flat_windows, random_batch, assert_cases_occur

# the module (the package re-exports the function under the same name)
te = importlib.import_module("tensorqa.engine.primitives.exists")
TALLY: Counter = Counter()


def test_every_exists_primitive_has_a_scalar_twin():
    names = [n for n in registry.names() if registry.implementations(n)["torch"].__module__ == te.__name__]
    assert set(names) == {"exists", "has_item"}
    for n in names:
        assert registry.scalar(n).__module__ == "tensorqa.engine.scalar.query"


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), strict=st.booleans())
def test_exists_torch_and_scalar_agree(seed, strict):
    sem = STRICT if strict else AGQA
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, sem)
    ids, valid = present_actions(batch)
    acts = actions_in(batch, flat)  # [V, A]
    asked = te.exists(acts, ids[flat.video])  # actExists: [V, K]
    rels = relations_present(batch, flat)
    rel_truth = te.exists(rels)  # relExists: the set itself
    objects = relate(all_rel(batch), flat).transpose(1, 2)  # [V, R, O]
    obj_truth = te.exists(objects)
    nonempty = te.has_item(objects)  # [V, R]
    exists, has_item = registry.scalar("exists"), registry.scalar("has_item")
    for v in range(flat.start.shape[0]):
        b = int(flat.video[v])
        a = acts[v].numpy()
        for k in range(int(valid[b].sum())):
            expected = exists(a, int(ids[b, k]))
            assert bool(asked[v, k]) == expected
            TALLY[f"actExists:{expected}"] += 1
        for r in range(rels.shape[1]):
            assert bool(rel_truth[v, r]) == exists(rels[v].numpy(), r)
        TALLY["relExists:yes"] += int(rels[v].sum())
        for r in RELATIONS:
            items = objects[v, r].numpy()
            assert np.array_equal(obj_truth[v, r].numpy(), [exists(items, o) for o in range(len(items))])
            assert bool(nonempty[v, r]) == has_item(items) == exists(items)
            TALLY[f"has_item:{has_item(items)}"] += 1


def test_exists_broadcasts_which():
    # one set per window [2, 4], asked about items [2, 3] of each: the gather broadcasts the
    # leading axes; -1 (padding) reads item 0 (clamped), as the grid's padded axes expect
    items = torch.tensor([[True, False, True, False], [False, True, False, False]])
    which = torch.tensor([[2, -1, 1], [1, 3, 0]])
    got = te.exists(items, which)
    assert got.tolist() == [[True, True, False], [True, False, False]]
    for v in range(2):
        for m, w in enumerate(which[v].tolist()):
            if w >= 0:
                assert bool(got[v, m]) == registry.scalar("exists")(items[v].numpy(), w)


def test_zz_every_case_occurs():
    assert_cases_occur("exists", TALLY, [
    "actExists:False",
    "actExists:True",
    "has_item:False",
    "has_item:True",
    "relExists:yes",
    ])
