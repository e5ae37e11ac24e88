"""The query family's twins agree: ``only_item``, ``choose``, ``equals``, ``and`` and ``xor``
(``engine/primitives/query.py``) against their scalar twins (``engine/scalar/query.py``) on the
sets the grid gives them on random scenes: the objects in each relation over each window
(objWhat's ``relate`` rows), the objects contacted in a window (objWhatGeneral), and pairs of
membership tests (andObjRelExists / xorObjRelExists, Choose); plus hand-worked cases."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from tensorqa.engine.primitives import query as tq
from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.filter import contacted, relate
from tensorqa.engine.scalar.video import Entity, NoAnswer
from tensorqa.agqa.semantics import AGQA, STRICT
from engine.scenes_for_twins import OBJECTS, RELATIONS, all_rel, flat_windows, random_batch, assert_cases_occur

TALLY: Counter = Counter()
EXCLUSIVE = replace(AGQA, xor_is_and_not=False)


def _scalar(fn, *args):
    try:
        return fn(*args), True
    except NoAnswer:
        return None, False


def test_every_query_primitive_has_a_scalar_twin():
    names = [n for n in registry.names() if registry.implementations(n)["torch"].__module__ == tq.__name__]
    assert set(names) == {"only_item", "choose", "equals", "and", "xor"}
    for n in names:
        assert registry.scalar(n).__module__ == "tensorqa.engine.scalar.query"


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), strict=st.booleans())
def test_only_item_torch_and_scalar_agree(seed, strict):
    sem = STRICT if strict else AGQA
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, sem)
    sets = relate(all_rel(batch), flat).transpose(1, 2)  # objWhat: [V, R, O]
    general = contacted(batch, flat, sem.interaction_rule("objWhatGeneral"))  # [V, O]
    pos, one = tq.only_item(sets)
    gpos, gone = tq.only_item(general)
    for v in range(flat.start.shape[0]):
        for r in RELATIONS:
            items = sets[v, r].numpy()
            expected, ok = _scalar(registry.scalar("only_item"), items)
            assert bool(one[v, r]) == ok and (not ok or int(pos[v, r]) == expected), (v, r, np.flatnonzero(items))
            TALLY[f"only_item:{min(int(items.sum()), 2)}_members"] += 1
        expected, ok = _scalar(registry.scalar("only_item"), general[v].numpy())
        assert bool(gone[v]) == ok and (not ok or int(gpos[v]) == expected), v
        TALLY[f"only_item/general:{'defined' if ok else 'undefined'}"] += 1


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), exclusive=st.booleans())
def test_pairs_torch_and_scalar_agree(seed, exclusive):
    sem = EXCLUSIVE if exclusive else AGQA
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, sem)
    held = relate(all_rel(batch), flat).transpose(1, 2)[:, list(RELATIONS)][:, :, list(OBJECTS)]  # [V, R', K]
    a, b = held[..., :, None], held[..., None, :]
    both, either = tq.and_(a, b, sem), tq.xor(a, b, sem)
    pick, chosen = tq.choose(a.expand_as(both), b.expand_as(both))
    ids = torch.tensor(OBJECTS)
    # the verify templates' Equals: is the only object of the relation over W the one asked about?
    pos, one = tq.only_item(held)
    same = tq.equals(ids[pos][..., None], ids)  # [V, R', K]
    for v in range(held.shape[0]):
        for j in range(len(RELATIONS)):
            for i1 in range(len(OBJECTS)):
                x = bool(held[v, j, i1])
                for i2 in range(len(OBJECTS)):
                    y = bool(held[v, j, i2])
                    assert bool(both[v, j, i1, i2]) == registry.scalar("and")(x, y)
                    assert bool(either[v, j, i1, i2]) == registry.scalar("xor")(x, y, sem)
                    expected, ok = _scalar(registry.scalar("choose"), x, y)
                    assert bool(chosen[v, j, i1, i2]) == ok and (not ok or bool(pick[v, j, i1, i2]) == expected)
                    TALLY[f"pair:{x:d}{y:d}"] += 1
                if bool(one[v, j]):
                    found = Entity("object", OBJECTS[int(pos[v, j])])
                    assert bool(same[v, j, i1]) == registry.scalar("equals")(found, Entity("object", OBJECTS[i1]))
                    TALLY[f"equals:{bool(same[v, j, i1])}"] += 1


def test_hand_worked_xor_and_choose():
    # docs/reference/agqa_semantics.md: AGQA's solver reads XOR(A, B) as "A and not B" (xor_is_and_not); the
    # README's Choose answers the one item of two in the set, none when both or neither are
    t, f = torch.tensor([True, True, False, False]), torch.tensor([True, False, True, False])
    assert tq.xor(t, f, AGQA).tolist() == [False, True, False, False]
    assert tq.xor(t, f, EXCLUSIVE).tolist() == [False, True, True, False]
    assert [registry.scalar("xor")(bool(x), bool(y), AGQA) for x, y in zip(t, f)] == [False, True, False, False]
    pick, ok = tq.choose(t, f)
    assert ok.tolist() == [False, True, True, False] and pick[ok].tolist() == [True, False]
    for x, y in ((True, True), (False, False)):
        with pytest.raises(NoAnswer):
            registry.scalar("choose")(x, y)
    # only_item: the index is 0 where undefined, defined only with exactly one member
    pos, one = tq.only_item(torch.tensor([[False, False, True], [True, False, True], [False] * 3]))
    assert one.tolist() == [True, False, False] and pos.tolist() == [2, 0, 0]


def test_zz_every_case_occurs():
    assert_cases_occur("query", TALLY, [
    "equals:False",
    "equals:True",
    "only_item/general:defined",
    "only_item/general:undefined",
    "only_item:0_members",
    "only_item:1_members",
    "only_item:2_members",
    "pair:00",
    "pair:01",
    "pair:10",
    "pair:11",
    ])
