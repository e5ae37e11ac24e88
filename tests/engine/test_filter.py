"""The filter family's twins agree: ``relate``, ``relations_present``, ``objects_present``,
``contacted`` (the three §c.1 interaction rules), ``actions_in``, ``present_objects`` and
``present_relations`` (``engine/primitives/filter.py``) against their scalar twins
(``engine/scalar/filter.py``) on random scenes, window by window, on the flat windows the grid
evaluates on."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tensorqa import vocab
from tensorqa.engine.primitives import filter as tf
from tensorqa.engine.primitives import registry
from tensorqa.engine.scalar.video import ScalarVideo, Window
from tensorqa.agqa.semantics import AGQA, STRICT
from tensorqa.engine.primitives.filter import ANY_PRESENT, CONTACT_EXCEPT_NOT_CONTACTING, CONTACT_EXCEPT_NOT_CONTACTING_OR_OTHER
from tensorqa.scenes.batch import SceneBatch, VideoScene
from engine.scenes_for_twins import all_rel, flat_windows, random_batch, assert_cases_occur, same_as_torch_kernel, scalar_window

RULES = (ANY_PRESENT, CONTACT_EXCEPT_NOT_CONTACTING, CONTACT_EXCEPT_NOT_CONTACTING_OR_OTHER)
TALLY: Counter = Counter()


def test_every_filter_primitive_has_a_scalar_twin():
    names = [n for n in registry.names() if registry.implementations(n)["torch"].__module__ == tf.__name__]
    assert set(names) == {"relate", "relations_present", "objects_present", "contacted", "actions_in",
                          "present_objects", "present_relations"}
    for n in names:
        assert registry.scalar(n).__module__ == "tensorqa.engine.scalar.filter"


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), strict=st.booleans())
def test_window_filters_torch_and_scalar_agree(seed, strict):
    sem = STRICT if strict else AGQA
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, sem)
    got = {
        "relate": tf.relate(all_rel(batch), flat),
        "relations_present": tf.relations_present(batch, flat),
        "objects_present": tf.objects_present(batch, flat),
        "actions_in": tf.actions_in(batch, flat),
    }
    contacted = {rule: tf.contacted(batch, flat, rule) for rule in RULES}
    videos = [ScalarVideo(s) for s in scenes]
    for v in range(flat.start.shape[0]):
        b, w = scalar_window(flat, v)
        video = videos[b]
        for name, out in got.items():
            expected = registry.scalar(name)(video, w)
            assert np.array_equal(out[v].numpy(), expected), (name, scenes[b].video_id, w)
            TALLY[f"{name}:nonempty"] += bool(expected.any())
        for rule, out in contacted.items():
            expected = registry.scalar("contacted")(video, w, rule)
            assert np.array_equal(out[v].numpy(), expected), (rule, scenes[b].video_id, w)
            TALLY[f"contacted/{rule}:nonempty"] += bool(expected.any())
        TALLY["windows"] += 1
        TALLY["windows:empty"] += not w.frames


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_video_filters_torch_and_scalar_agree(seed):
    scenes, batch = random_batch(seed)
    objects, relations = tf.present_objects(batch), tf.present_relations(batch)
    for b, scene in enumerate(scenes):
        video = ScalarVideo(scene)
        assert np.array_equal(objects[b].numpy(), registry.scalar("present_objects")(video)), scene.video_id
        assert np.array_equal(relations[b].numpy(), registry.scalar("present_relations")(video)), scene.video_id
        TALLY["videos"] += 1
        TALLY["videos:no_keyframes"] += video.num_frames == 0
        # an object only annotated (obj) and never related: present_objects has it, relate never does
        TALLY["videos:object_only_annotated"] += bool((scene.obj.any(0) & ~scene.rel.any((0, 2))).any())


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_kernel_backend_matches_torch(seed):
    pytest.importorskip("triton")
    scenes, batch = random_batch(seed)
    flat = flat_windows(batch, AGQA)
    same_as_torch_kernel("relate", all_rel(batch), flat)
    for name in ("relations_present", "objects_present", "actions_in"):
        same_as_torch_kernel(name, batch, flat)
    for rule in RULES:
        same_as_torch_kernel("contacted", batch, flat, rule)


def test_hand_worked_contact_rules():
    # §c.1: objExists reads the contact relations except notcontacting (ids 9-25 less 17);
    # objTime also drops otherrelationship (18); objWhatGeneral reads obj literally.
    # One keyframe: notcontacting the cup (o9), otherrelationship with o11, o5 only annotated.
    v = vocab()
    rel = np.zeros((1, v.num_objects, v.num_relations), bool)
    rel[0, 9, 17] = rel[0, 11, 18] = True
    obj = np.zeros((1, v.num_objects), bool)
    obj[0, 5] = True
    scene = VideoScene("H", np.array([0]), np.array([0.0]), rel, obj, np.zeros(0), np.zeros(0), np.zeros(0))
    batch = SceneBatch.from_scenes([scene])
    flat = flat_windows(batch, AGQA)
    video, w = ScalarVideo(scene), Window("video", [0])
    expected = {CONTACT_EXCEPT_NOT_CONTACTING: {11}, CONTACT_EXCEPT_NOT_CONTACTING_OR_OTHER: set(), ANY_PRESENT: {5}}
    for rule, objects in expected.items():
        assert set(np.flatnonzero(registry.scalar("contacted")(video, w, rule))) == objects, rule
        assert set(np.flatnonzero(tf.contacted(batch, flat, rule)[0].numpy())) == objects, rule
    # present_objects: annotated or related at some keyframe
    assert set(np.flatnonzero(tf.present_objects(batch)[0].numpy())) == {5, 9, 11}


def test_zz_every_case_occurs():
    assert_cases_occur("filter", TALLY, [
    "actions_in:nonempty",
    "contacted/any_present:nonempty",
    "contacted/contact_except_not_contacting:nonempty",
    "contacted/contact_except_not_contacting_or_other:nonempty",
    "objects_present:nonempty",
    "relate:nonempty",
    "relations_present:nonempty",
    "videos:no_keyframes",
    "videos:object_only_annotated",
    "windows:empty",
    ])
