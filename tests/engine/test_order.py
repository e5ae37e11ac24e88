"""The order family's twins agree: ``act_order`` (actTime, every ordered pair of present
classes) and ``side_of`` (relTime over relations, objTime over interacted objects)
(``engine/primitives/order.py``) against their scalar twins (``engine/scalar/order.py``), both
on the compare windows of each present class (``compare_windows``, torch and scalar), on random
scenes; plus hand-worked persistence and overlap cases (docs/reference/agqa_semantics.md §b.1 actTime)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tensorqa import vocab
from tensorqa.engine.primitives import order as to
from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.filter import any_along, interacted_frames
from tensorqa.engine.primitives.localize import compare_windows, present_actions
from tensorqa.engine.scalar.video import NoAnswer, ScalarVideo
from tensorqa.agqa.semantics import AGQA, STRICT
from tensorqa.scenes.batch import SceneBatch, VideoScene
from engine.scenes_for_twins import OBJECTS, RELATIONS, all_rel, random_batch, assert_cases_occur, same_as_torch_kernel

TALLY: Counter = Counter()
NO_PERSIST = replace(AGQA, act_time_persistence_check=False)
INCLUDES_X = replace(AGQA, compare_before_includes_x=True)
SEMANTICS = {"agqa": AGQA, "strict": STRICT, "no_persistence": NO_PERSIST, "before_includes_x": INCLUDES_X}
ANSWER = {to.BEFORE_ANSWER: "before", to.AFTER_ANSWER: "after"}


def _scalar(fn, *args):
    try:
        return fn(*args), True
    except NoAnswer:
        return None, False


def test_every_order_primitive_has_a_scalar_twin():
    names = [n for n in registry.names() if registry.implementations(n)["torch"].__module__ == to.__name__]
    assert set(names) == {"act_order", "side_of"}
    for n in names:
        assert registry.scalar(n).__module__ == "tensorqa.engine.scalar.order"


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), sem_name=st.sampled_from(sorted(SEMANTICS)))
def test_order_torch_and_scalar_agree(seed, sem_name):
    sem = SEMANTICS[sem_name]
    scenes, batch = random_batch(seed)
    ids, valid = present_actions(batch)
    cw = compare_windows(batch, ids, sem)
    side, defined = to.act_order(batch, ids, cw, sem)  # rows x, columns anchor
    nf = batch.frame_mask.sum(1)
    rel_occurs = any_along(all_rel(batch), 2)[:, :, list(RELATIONS)]  # relTime: [B, F, R']
    rule = sem.interaction_rule("objTime")
    obj_occurs = interacted_frames(batch, rule)[:, :, list(OBJECTS)]  # objTime: [B, F, O']
    rel_side, rel_ok = to.side_of(rel_occurs, cw, nf)
    obj_side, obj_ok = to.side_of(obj_occurs, cw, nf)
    for b, scene in enumerate(scenes):
        video = ScalarVideo(scene)
        contact = video.contact(rule)
        K = int(valid[b].sum())
        for j in range(K):
            anchor = int(ids[b, j])
            windows, single = _scalar(registry.scalar("compare_windows"), video, sem, anchor)
            assert bool(cw.single[b, j]) == single, (scene.video_id, anchor)
            TALLY[f"anchor:{'single' if single else 'repeated'}"] += 1
            for i in range(K):
                x = int(ids[b, i])
                expected, ok = (_scalar(registry.scalar("act_order"), video, sem, x, windows) if single
                                else (None, False))
                where = (scene.video_id, x, anchor, sem_name)
                assert bool(defined[b, i, j]) == ok, where
                if ok:
                    assert ANSWER[int(side[b, i, j])] == expected, where
                TALLY[f"act_order:{expected if ok else 'undefined'}"] += 1
                if single and not ok and x != anchor and len(video.instances_of(x)) == 1:
                    # refused though both are single: overlap / within, or the persistence check
                    loose, _ = _scalar(registry.scalar("act_order"), video, NO_PERSIST, x, windows)
                    TALLY["act_order:refused_by_persistence" if loose else "act_order:overlap_or_within"] += 1
            if not single:
                assert not rel_ok[b, j].any() and not obj_ok[b, j].any()
                continue
            for occurs, sides, oks, keys, what in ((video.rel[:, :, list(RELATIONS)].any(1), rel_side, rel_ok, RELATIONS,
                                                    "relTime"),
                                                   (contact[:, list(OBJECTS)], obj_side, obj_ok, OBJECTS, "objTime")):
                for k in range(len(keys)):
                    expected, ok = _scalar(registry.scalar("side_of"), occurs[:, k], windows)
                    assert bool(oks[b, j, k]) == ok, (scene.video_id, anchor, what, keys[k])
                    if ok:
                        assert ANSWER[int(sides[b, j, k])] == expected, (scene.video_id, anchor, what, keys[k])
                    TALLY[f"{what}:{expected if ok else 'undefined'}"] += 1


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), sem_name=st.sampled_from(sorted(SEMANTICS)))
def test_kernel_backend_matches_torch(seed, sem_name):
    # side_of is the order family's one kernel (act_order has none)
    pytest.importorskip("triton")
    sem = SEMANTICS[sem_name]
    scenes, batch = random_batch(seed)
    ids = present_actions(batch)[0]
    cw = compare_windows(batch, ids, sem)
    nf = batch.frame_mask.sum(1)
    same_as_torch_kernel("side_of", any_along(all_rel(batch), 2), cw, nf)
    same_as_torch_kernel("side_of", interacted_frames(batch, sem.interaction_rule("objTime")), cw, nf)


# --------------------------------------------------------------------------------------------------
# hand-worked actTime cases (docs/reference/agqa_semantics.md §b.1)
# --------------------------------------------------------------------------------------------------

C003, C010 = 3, 10  # c003's (object, verb relation) is (o9, r46)


def _scene(F, insts, rel_on=()) -> VideoScene:
    v = vocab()
    secs = np.arange(F, dtype=float)
    rel = np.zeros((F, v.num_objects, v.num_relations), bool)
    for f, o, r in rel_on:
        rel[f, o, r] = True
    return VideoScene("H", (secs * 24).astype(int), secs, rel, rel.any(-1), np.array([c for c, _, _ in insts]),
                      np.array([s for _, s, _ in insts]), np.array([e for _, _, e in insts])).sorted()


def _act_time(scene, x, anchor, sem):
    """(torch answer, scalar answer) of actTime(x, anchor); None where undefined."""
    batch = SceneBatch.from_scenes([scene])
    ids = present_actions(batch)[0]
    pos = {int(a): k for k, a in enumerate(ids[0])}
    side, ok = to.act_order(batch, ids, compare_windows(batch, ids, sem), sem)
    got = ANSWER[int(side[0, pos[x], pos[anchor]])] if bool(ok[0, pos[x], pos[anchor]]) else None
    video = ScalarVideo(scene)
    try:
        expected = registry.scalar("act_order")(video, sem, x, registry.scalar("compare_windows")(video, sem, anchor))
    except NoAnswer:
        expected = None
    return got, expected


def test_act_time_persistence():
    # c003 on keyframes 1-2, c010 on 5-6: c003 is "before" c010. The persistence check (§b.1):
    # for "before", c003's (object o9, verb relation r46) pair must not occur in any keyframe
    # after c010: with it at keyframe 8 there is no answer; without the check the answer stands.
    # At keyframe 0 (before the anchor, the side c003 is on) it does not matter.
    insts = [(C003, 1.0, 2.0), (C010, 5.0, 6.0)]
    assert _act_time(_scene(10, insts), C003, C010, AGQA) == ("before", "before")
    assert _act_time(_scene(10, insts, [(8, 9, 46)]), C003, C010, AGQA) == (None, None)
    assert _act_time(_scene(10, insts, [(8, 9, 46)]), C003, C010, NO_PERSIST) == ("before", "before")
    assert _act_time(_scene(10, insts, [(0, 9, 46)]), C003, C010, AGQA) == ("before", "before")
    # "after" symmetrically: c010 after c003; c010's pair (o31, r19) at keyframe 0 (before the
    # anchor c003) makes it undefined
    assert _act_time(_scene(10, insts), C010, C003, AGQA) == ("after", "after")
    assert _act_time(_scene(10, insts, [(0, 31, 19)]), C010, C003, AGQA) == (None, None)


def test_act_time_overlap_and_within():
    # c003 on 1-6 contains c010 on 3-4: c010 lies within c003 (no answer), and c003 overlaps
    # c010 on both sides (no answer either way)
    insts = [(C003, 1.0, 6.0), (C010, 3.0, 4.0)]
    assert _act_time(_scene(10, insts), C010, C003, AGQA) == (None, None)
    assert _act_time(_scene(10, insts), C003, C010, AGQA) == (None, None)
    # sharing one keyframe (c003 on 1-3, c010 on 3-5): overlap, no answer
    assert _act_time(_scene(10, [(C003, 1.0, 3.0), (C010, 3.0, 5.0)]), C003, C010, AGQA) == (None, None)


def test_zz_every_case_occurs():
    assert_cases_occur("order", TALLY, [
    "act_order:after",
    "act_order:before",
    "act_order:overlap_or_within",
    "act_order:undefined",
    "anchor:repeated",
    "anchor:single",
    "objTime:before",
    "objTime:undefined",
    "relTime:after",
    "relTime:before",
    "relTime:undefined",
    ])
