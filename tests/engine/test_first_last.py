"""The first_last family's twins agree: ``first_episode`` / ``last_episode`` (objFirst /
objLast stretches), ``choose_episode`` (the Choose rule, both directions), ``act_first``,
``act_last`` and ``act_what`` (``engine/primitives/first_last.py``) against their scalar twins
(``engine/scalar/first_last.py``) on random scenes, on the grid's flat windows: the same
definedness, and the same answer where defined. Plus hand-worked cases of the rules the twins'
docstrings name (docs/reference/agqa_semantics.md §b.1)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tensorqa import vocab
from tensorqa.engine.primitives import first_last as tfl
from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.filter import any_along
from tensorqa.engine.scalar.first_last import choose_stretch
from tensorqa.engine.scalar.video import NoAnswer, ScalarVideo, Window
from tensorqa.agqa.semantics import AGQA, STRICT
from tensorqa.scenes.batch import SceneBatch, VideoScene
from engine.scenes_for_twins import OBJECTS, RELATIONS, all_rel, flat_windows, random_batch, assert_cases_occur, same_as_torch_kernel, \
    scalar_window

TALLY: Counter = Counter()
LOOSE_STOP = replace(AGQA, choose_stretch_includes_stop=False)
SEMANTICS = {"agqa": AGQA, "strict": STRICT, "loose_stop": LOOSE_STOP}


def _scalar(fn, *args):
    """(answer, defined) of a scalar twin call."""
    try:
        return fn(*args), True
    except NoAnswer:
        return None, False


def test_every_first_last_primitive_has_a_scalar_twin():
    names = [n for n in registry.names() if registry.implementations(n)["torch"].__module__ == tfl.__name__]
    assert set(names) == {"first_episode", "last_episode", "choose_episode", "act_first", "act_last", "act_what"}
    for n in names:
        assert registry.scalar(n).__module__ == "tensorqa.engine.scalar.first_last"


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), sem_name=st.sampled_from(sorted(SEMANTICS)))
def test_episodes_torch_and_scalar_agree(seed, sem_name):
    sem = SEMANTICS[sem_name]
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, sem)
    rel = all_rel(batch)
    occurs = any_along(rel, 2)
    results = {"first_episode": tfl.first_episode(occurs, rel, flat, sem),
               "last_episode": tfl.last_episode(occurs, rel, flat, sem)}
    videos = [ScalarVideo(s) for s in scenes]
    for v in range(flat.start.shape[0]):
        b, w = scalar_window(flat, v)
        for name, (objects, defined) in results.items():
            for r in RELATIONS:
                expected, ok = _scalar(registry.scalar(name), videos[b], sem, w, r, r)
                assert bool(defined[v, r]) == ok, (name, r, scenes[b].video_id, w)
                TALLY[f"{name}:{'defined' if ok else 'undefined'}"] += 1
                if ok:
                    assert np.array_equal(objects[v, :, r].numpy(), expected), (name, r, scenes[b].video_id, w)
                    TALLY[f"{name}:one_object"] += int(expected.sum()) == 1
                    TALLY[f"{name}:several_objects"] += int(expected.sum()) > 1


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), sem_name=st.sampled_from(sorted(SEMANTICS)), forward=st.booleans())
def test_choose_episode_torch_and_scalar_agree(seed, sem_name, forward):
    sem = SEMANTICS[sem_name]
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, sem)
    # the grid's compact axes, here the few objects and relations the scenes use: [B, F, K, R']
    rel = all_rel(batch)[:, :, list(OBJECTS)][:, :, :, list(RELATIONS)]
    pick, defined = tfl.choose_episode(rel, flat, forward, sem)  # [V, R', K, K]
    videos = [ScalarVideo(s) for s in scenes]
    for v in range(flat.start.shape[0]):
        b, w = scalar_window(flat, v)
        video = videos[b]
        for j, r in enumerate(RELATIONS):
            for i1, o1 in enumerate(OBJECTS):
                for i2, o2 in enumerate(OBJECTS):
                    expected, ok = _scalar(registry.scalar("choose_episode"), video, sem, w, o1, o2, r, forward)
                    where = (scenes[b].video_id, w, o1, o2, r, forward, sem_name)
                    assert bool(defined[v, j, i1, i2]) == ok, where
                    if ok:
                        assert (o1 if bool(pick[v, j, i1, i2]) else o2) == expected, where
                        TALLY[f"choose:{'first' if expected == o1 else 'second'}_picked"] += 1
                    if o1 == o2:
                        continue
                    hits = [f for f in w.frames if video.rel[f, o1, r] or video.rel[f, o2, r]]
                    if not hits:
                        continue
                    TALLY["choose:some_hit"] += 1
                    both = [f for f in w.frames if video.rel[f, o1, r] and video.rel[f, o2, r]]
                    TALLY["choose:both_hold_somewhere"] += bool(both)
                    if not ok:
                        # which rule refused it: the stretch does not end in W, or has both objects
                        try:
                            choose_stretch(video, sem, w, o1, o2, r, forward)
                            TALLY["choose:both_in_stretch"] += 1
                        except NoAnswer:
                            TALLY["choose:stretch_runs_out"] += 1


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), sem_name=st.sampled_from(sorted(SEMANTICS)),
       skips=st.booleans(), video_end=st.booleans())
def test_action_edges_torch_and_scalar_agree(seed, sem_name, skips, video_end):
    sem = replace(SEMANTICS[sem_name], act_last_scan_skips_window_start=skips,
                  act_last_video_end_is_last_keyframe=video_end)
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, sem)
    results = {name: getattr(tfl, name)(batch, batch.act, flat, sem) for name in ("act_first", "act_last", "act_what")}
    videos = [ScalarVideo(s) for s in scenes]
    for v in range(flat.start.shape[0]):
        b, w = scalar_window(flat, v)
        for name, (cls, defined) in results.items():
            expected, ok = _scalar(registry.scalar(name), videos[b], sem, w)
            assert bool(defined[v]) == ok, (name, scenes[b].video_id, w)
            TALLY[f"{name}/{w.kind}:{'defined' if ok else 'undefined'}"] += 1
            if ok:
                assert int(cls[v]) == expected, (name, scenes[b].video_id, w)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), sem_name=st.sampled_from(sorted(SEMANTICS)), forward=st.booleans())
def test_kernel_backend_matches_torch(seed, sem_name, forward):
    pytest.importorskip("triton")
    sem = SEMANTICS[sem_name]
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, sem)
    rel = all_rel(batch)
    same_as_torch_kernel("first_episode", any_along(rel, 2), rel, flat, sem)
    same_as_torch_kernel("last_episode", any_along(rel, 2), rel, flat, sem)
    same_as_torch_kernel("choose_episode", rel[:, :, list(OBJECTS)][:, :, :, list(RELATIONS)], flat, forward, sem)


# --------------------------------------------------------------------------------------------------
# hand-worked cases (docs/reference/agqa_semantics.md §b.1)
# --------------------------------------------------------------------------------------------------

def _hand_scene(F: int, rel_on: dict, insts=(), secs=None) -> VideoScene:
    """F keyframes 1 s apart (or at ``secs``); rel_on: (o, r) -> keyframes where it holds; insts:
    (class, start, end)."""
    v = vocab()
    rel = np.zeros((F, v.num_objects, v.num_relations), bool)
    for (o, r), frames in rel_on.items():
        rel[frames, o, r] = True
    secs = np.arange(F, dtype=float) if secs is None else np.asarray(secs, float)
    cls = np.array([c for c, _, _ in insts], np.int64)
    return VideoScene("H", (secs * 24).astype(int), secs, rel, rel.any(-1),
                      cls, np.array([s for _, s, _ in insts]), np.array([e for _, _, e in insts])).sorted()


def _torch_choose(scene, o1, o2, r, forward, sem):
    batch = SceneBatch.from_scenes([scene])
    flat = flat_windows(batch, sem)  # row 0: the whole video
    rel = all_rel(batch)[:, :, [o1, o2]][:, :, :, [r]]
    pick, defined = tfl.choose_episode(rel, flat, forward, sem)
    return bool(pick[0, 0, 0, 1]), bool(defined[0, 0, 0, 1])


HOLD = 14


def test_choose_both_objects_in_the_stretch():
    # Choose (§b.1 objFirstChoose): at = first keyframe where r holds with o1 or o2 = 0, o1 holds
    # there; o1's stretch runs 0..2 and stops at 3 (inside W). o2 holds at keyframe 2, inside that
    # stretch: "must not contain both objects" -> no answer, whichever rule for the stop keyframe.
    scene = _hand_scene(6, {(9, HOLD): [0, 1, 2], (11, HOLD): [2]})
    video, w = ScalarVideo(scene), Window("video", list(range(6)))
    for sem in (AGQA, LOOSE_STOP):
        with pytest.raises(NoAnswer):
            registry.scalar("choose_episode")(video, sem, w, 9, 11, HOLD, True)
        assert _torch_choose(scene, 9, 11, HOLD, True, sem)[1] is False


def test_choose_other_object_at_the_stop_keyframe():
    # o1 holds at 0..2 and stops at 3, where o2 holds. With choose_stretch_includes_stop (AGQA's
    # solver takes the stretch through the stopping keyframe) the stretch 0..3 has both: no
    # answer; without it the stretch 0..2 has only o1: the answer is o1.
    scene = _hand_scene(6, {(9, HOLD): [0, 1, 2], (11, HOLD): [3]})
    video, w = ScalarVideo(scene), Window("video", list(range(6)))
    with pytest.raises(NoAnswer):
        registry.scalar("choose_episode")(video, AGQA, w, 9, 11, HOLD, True)
    assert _torch_choose(scene, 9, 11, HOLD, True, AGQA)[1] is False
    assert registry.scalar("choose_episode")(video, LOOSE_STOP, w, 9, 11, HOLD, True) == 9
    assert _torch_choose(scene, 9, 11, HOLD, True, LOOSE_STOP) == (True, True)
    # backward (objLastChoose): the last hit is o2 at 3; scanning back it stops at 2 (inside W),
    # where o1 holds: with the stop keyframe, both -> no answer; without, the answer is o2
    with pytest.raises(NoAnswer):
        registry.scalar("choose_episode")(video, AGQA, w, 9, 11, HOLD, False)
    assert _torch_choose(scene, 9, 11, HOLD, False, AGQA)[1] is False
    assert registry.scalar("choose_episode")(video, LOOSE_STOP, w, 9, 11, HOLD, False) == 11
    assert _torch_choose(scene, 9, 11, HOLD, False, LOOSE_STOP) == (False, True)


def test_choose_stretch_must_end_in_the_window():
    # o1 holds from keyframe 2 to the end of the video: its stretch never stops inside W
    scene = _hand_scene(5, {(9, HOLD): [2, 3, 4]})
    video, w = ScalarVideo(scene), Window("video", list(range(5)))
    with pytest.raises(NoAnswer):
        registry.scalar("choose_episode")(video, AGQA, w, 9, 11, HOLD, True)
    assert _torch_choose(scene, 9, 11, HOLD, True, AGQA)[1] is False
    # backward it stops at 1 (absent there), inside W: the answer is o1
    assert registry.scalar("choose_episode")(video, AGQA, w, 9, 11, HOLD, False) == 9
    assert _torch_choose(scene, 9, 11, HOLD, False, AGQA) == (True, True)


def test_obj_last_extra_keyframes():
    # objLast (§b.1): last occurrence of holding = keyframe 5; scanning back, g = 4 (absent); the
    # objects run from g - 2 = 2 through 5: o11 holds at 2 only, so the answer set is {o9, o11}
    # (two objects: only_item then refuses). objFirst's stretch from the first occurrence (0)
    # through its stop (1) has o11 only.
    scene = _hand_scene(7, {(9, HOLD): [5], (11, HOLD): [0, 2]})
    video, w = ScalarVideo(scene), Window("video", list(range(7)))
    last = registry.scalar("last_episode")(video, AGQA, w, HOLD, HOLD)
    first = registry.scalar("first_episode")(video, AGQA, w, HOLD, HOLD)
    assert set(np.flatnonzero(last)) == {9, 11} and set(np.flatnonzero(first)) == {11}
    batch = SceneBatch.from_scenes([scene])
    flat = flat_windows(batch, AGQA)
    rel = all_rel(batch)
    for fn, expected in ((tfl.last_episode, last), (tfl.first_episode, first)):
        objects, ok = fn(any_along(rel, 2), rel, flat, AGQA)
        assert bool(ok[0, HOLD]) and np.array_equal(objects[0, :, HOLD].numpy(), expected)


def test_act_first_needs_more_than_one_instance():
    # actFirst (§b.1): "more than one instance has end >= t". One instance (c003, 0.5-3 s) in a
    # video of keyframes 0..7 s: W = video, t = 0 (the video's first keyframe), the keyframes
    # within 5 s show c003 only, the one candidate starts first, but only one instance ends at or
    # after t: no answer. A second instance (c010, 6-7 s: after the 5 s scan) makes it defined.
    sem = AGQA
    for insts, ok in ((((3, 0.5, 3.0),), False), (((3, 0.5, 3.0), (10, 6.0, 7.0)), True)):
        scene = _hand_scene(8, {}, insts)
        video, w = ScalarVideo(scene), Window("video", list(range(8)))
        expected, defined = _scalar(registry.scalar("act_first"), video, sem, w)
        assert defined is ok and (not ok or expected == 3)
        batch = SceneBatch.from_scenes([scene])
        cls, got = tfl.act_first(batch, batch.act, flat_windows(batch, sem), sem)
        assert bool(got[0]) is ok and (not ok or int(cls[0]) == 3)


def test_act_first_window_shows_two_classes():
    # "the keyframes of W within 5 s of W's first keyframe show only one action class": c003 on
    # 0-2 s and c010 on 3-4 s both fall within 0..5 s: no answer, although c003 starts first
    scene = _hand_scene(8, {}, ((3, 0.0, 2.0), (10, 3.0, 4.0)))
    video, w = ScalarVideo(scene), Window("video", list(range(8)))
    with pytest.raises(NoAnswer):
        registry.scalar("act_first")(video, AGQA, w)
    batch = SceneBatch.from_scenes([scene])
    assert not bool(tfl.act_first(batch, batch.act, flat_windows(batch, AGQA), AGQA)[1][0])


def test_zz_every_case_occurs():
    assert_cases_occur("first_last", TALLY, [
    "act_first/after:defined",
    "act_first/before:defined",
    "act_first/between:defined",
    "act_first/video:defined",
    "act_first/while:defined",
    "act_last/after:defined",
    "act_last/while:defined",
    "act_what/after:defined",
    "act_what/video:defined",
    "choose:both_hold_somewhere",
    "choose:both_in_stretch",
    "choose:first_picked",
    "choose:second_picked",
    "choose:stretch_runs_out",
    "first_episode:defined",
    "first_episode:one_object",
    "first_episode:several_objects",
    "first_episode:undefined",
    "last_episode:defined",
    "last_episode:one_object",
    "last_episode:several_objects",
    "last_episode:undefined",
    ])
