"""The query family's twins agree: ``exists`` (with and without ``which``), ``has_item``, ``count``,
``only_item``, ``choose``, ``equals``, ``and`` and ``xor`` (``engine/primitives/query.py``) against their
scalar twins (``engine/scalar/query.py``) on the sets the grid gives them on random scenes: actions in each
window (actExists; the grid asks every class, these tests check the present ones), relations present
(relExists), the objects in each relation over each window (objRelExists, objWhat's ``relate`` rows),
actions in each window and objects present (count), the objects contacted in a window (objWhatGeneral),
and pairs of membership tests (andObjRelExists / xorObjRelExists, Choose); plus hand-worked cases."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from tensorqa.engine.primitives import query as tq
from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.filter import actions_in, contacted, present_objects, relate, relations_present
from tensorqa.engine.primitives.localize import present_actions
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
    assert set(names) == {"exists", "has_item", "count", "only_item", "choose", "equals", "and", "xor"}
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


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), strict=st.booleans())
def test_exists_torch_and_scalar_agree(seed, strict):
    sem = STRICT if strict else AGQA
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, sem)
    ids, valid = present_actions(batch)
    acts = actions_in(batch, flat)  # [V, A]
    asked = tq.exists(acts, ids[flat.video])  # actExists: [V, K]
    rels = relations_present(batch, flat)
    rel_truth = tq.exists(rels)  # relExists: the set itself
    objects = relate(all_rel(batch), flat).transpose(1, 2)  # [V, R, O]
    obj_truth = tq.exists(objects)
    nonempty = tq.has_item(objects)  # [V, R]
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
    got = tq.exists(items, which)
    assert got.tolist() == [[True, True, False], [True, False, False]]
    for v in range(2):
        for m, w in enumerate(which[v].tolist()):
            if w >= 0:
                assert bool(got[v, m]) == registry.scalar("exists")(items[v].numpy(), w)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_count_torch_and_scalar_agree(seed):
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, AGQA)
    count = registry.scalar("count")
    for sets in (relate(all_rel(batch), flat).transpose(1, 2), actions_in(batch, flat), present_objects(batch)):
        got = tq.count(sets)
        assert got.dtype == torch.int64 and got.shape == sets.shape[:-1]
        flat_sets, flat_got = sets.reshape(-1, sets.shape[-1]).numpy(), got.reshape(-1).numpy()
        for items, n in zip(flat_sets, flat_got):
            assert int(n) == count(items)
            TALLY[f"count:{min(int(n), 3)}"] += 1


def test_count_hand_worked():
    # the empty set counts 0; an empty item axis counts 0 too
    assert tq.count(torch.tensor([[False, False], [True, True]])).tolist() == [0, 2]
    assert tq.count(torch.zeros(3, 0, dtype=torch.bool)).tolist() == [0, 0, 0]
    assert registry.scalar("count")(np.zeros(0, bool)) == 0


def test_zz_every_case_occurs():
    assert_cases_occur("query", TALLY, [
    "actExists:False",
    "actExists:True",
    "count:0",
    "count:1",
    "count:2",
    "count:3",
    "has_item:False",
    "has_item:True",
    "relExists:yes",
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
