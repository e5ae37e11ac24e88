"""The embedded default dataset: scripts, keyframes, action-meaning relations, densities, determinism."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
import pytest

from helpers import SHARED
from tensorqa import vocab
from tensorqa.errors import TensorQAError
from tensorqa.profile import load_profile
from tensorqa.scene import SceneBatch
from tensorqa.synthetic import (
    Script, keyframes, num_train, sample_scripts, synthesize, synthesize_from_charades, synthesize_scene,
    synthetic_video_id,
)

V = vocab()
AG = V.relation_mask("attention", "spatial", "contact")


def rel_at(scene, obj: str, rel: str) -> np.ndarray:
    """bool[F]: the person stands in ``rel`` to ``obj`` at each keyframe."""
    return scene.rel[:, V.object_index(obj), V.relation_index(rel)]


def same_content(a, b) -> bool:
    return (a.video_id == b.video_id and np.array_equal(a.frame_ids, b.frame_ids)
            and np.array_equal(a.frame_secs, b.frame_secs) and np.array_equal(a.rel, b.rel)
            and np.array_equal(a.obj, b.obj) and np.array_equal(a.inst_cls, b.inst_cls)
            and np.array_equal(a.inst_start, b.inst_start) and np.array_equal(a.inst_end, b.inst_end))


# -- ids and splits ------------------------------------------------------------------------------


def test_video_ids_are_base36():
    assert synthetic_video_id(0) == "Q0000"
    assert synthetic_video_id(35) == "Q000Z"
    assert synthetic_video_id(36) == "Q0010"
    # 9600 = 7 * 36**2 + 14 * 36 + 24 -> digits 0, 7, E, O
    assert synthetic_video_id(9600) == "Q07EO"
    assert synthetic_video_id(36**4 - 1) == "QZZZZ"
    with pytest.raises(TensorQAError):
        synthetic_video_id(36**4)


def test_split_proportions():
    assert num_train(9601) == 7787  # AGQA's 7,787 train / 1,814 test
    assert num_train(10) == 8  # round(8.11)
    scripts = sample_scripts(50, seed=3)
    # round(50 * 7787 / 9601) = round(40.55) = 41 train, then 9 test
    assert [s.split for s in scripts] == ["train"] * 41 + ["test"] * 9
    assert [s.video_id for s in scripts[:2]] == ["Q0000", "Q0001"]


# -- determinism ---------------------------------------------------------------------------------


def test_same_seed_same_scenes_other_seed_differs():
    a = list(synthesize(12, seed=7))
    b = list(synthesize(12, seed=7))
    c = list(synthesize(12, seed=8))
    assert all(same_content(x, y) and x.split == y.split for x, y in zip(a, b))
    assert sum(same_content(x, y) for x, y in zip(a, c)) == 0


def test_video_i_does_not_depend_on_n_videos():
    small = list(synthesize(10, seed=5))
    large = list(synthesize(50, seed=5))
    assert all(same_content(x, y) for x, y in zip(small, large[:10]))
    # only the split moves: 8 of 10 are train, 41 of 50
    assert [s.split for s in small[8:]] == ["test", "test"] and large[9].split == "train"
    assert sample_scripts(10, 5)[:8] == sample_scripts(50, 5)[:8]


def test_bad_seed_is_refused():
    with pytest.raises(TensorQAError, match="seed"):
        sample_scripts(3, seed=-1)


# -- keyframes -----------------------------------------------------------------------------------


def test_keyframe_rule_hand_worked():
    script = Script("HAND1", "train", 10.0, (
        (V.action_index("c076"), 2.0, 4.0),  # holding a pillow
        (V.action_index("c059"), 3.0, 8.0),  # sitting in a chair
        (V.action_index("c070"), 2.0, 4.0),  # holding a blanket: the same interval, same keyframes
    ))
    # [2, 4]: step 2/5 = 0.4 s, positions 2.2, 2.6, 3.0, 3.4, 3.8 s
    #   * 24 fps = 52.8, 62.4, 72.0, 81.6, 91.2 -> frames 53, 62, 72, 82, 91
    # [3, 8]: step 1 s, positions 3.5, 4.5, 5.5, 6.5, 7.5 s -> frames 84, 108, 132, 156, 180
    # the blanket's interval repeats the pillow's frames, which appear once
    expected = [53, 62, 72, 82, 84, 91, 108, 132, 156, 180]
    scene = synthesize_scene(script, seed=0)
    assert scene.frame_ids.tolist() == expected
    np.testing.assert_array_equal(scene.frame_secs, (np.array(expected) / 24).astype(np.float32))
    # instances come back ordered by (start, end, class): (2, 4, c070), (2, 4, c076), (3, 8, c059)
    assert scene.inst_cls.tolist() == [70, 76, 59]
    assert keyframes([], [], 10.0).tolist() == [24, 72, 120, 168, 216]  # 1, 3, 5, 7, 9 s


def test_video_without_actions_gets_five_keyframes():
    scene = synthesize_scene(Script("EMPTY", "test", 12.0, ()), seed=1)
    # positions 1.2, 3.6, 6.0, 8.4, 10.8 s -> frames 28.8, 86.4, 144, 201.6, 259.2 -> 29, 86, 144, 202, 259
    assert scene.frame_ids.tolist() == [29, 86, 144, 202, 259]
    assert scene.num_instances == 0 and scene.split == "test"


def test_intervals_are_clipped_into_the_video():
    # Charades rows that end after the video (by up to 1.5 s) or before they start
    scene = synthesize_scene(Script("CLIP1", "train", 10.0, ((76, 8.0, 11.0), (59, 5.0, 4.0))), seed=0)
    assert scene.inst_end.max() <= 10.0
    assert np.all(scene.inst_end >= scene.inst_start)
    assert scene.frame_secs.max() <= 10.0


# -- relations follow the actions -----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_action_meaning_hand_worked(seed):
    script = Script("HAND2", "train", 20.0, (
        (V.action_index("holding a pillow"), 2.0, 4.0),
        (V.action_index("drinking from a cup"), 10.0, 12.0),
        (V.action_index("watching television"), 14.0, 19.0),
    ))
    scene = synthesize_scene(script, seed=seed)
    batch = SceneBatch.from_scenes([scene])
    covered = batch.inst_frames[0].numpy()  # [N, F] keyframes of each instance
    order = scene.inst_cls.tolist()
    pillow_kf = covered[order.index(V.action_index("c076"))]
    cup_kf = covered[order.index(V.action_index("c106"))]
    tv_kf = covered[order.index(V.action_index("c132"))]
    assert pillow_kf.sum() == cup_kf.sum() == tv_kf.sum() == 5  # disjoint intervals, 5 keyframes each

    # holding a pillow: holding and touching the pillow at its keyframes, holding nowhere else
    np.testing.assert_array_equal(rel_at(scene, "pillow", "holding"), pillow_kf)
    assert rel_at(scene, "pillow", "touching")[pillow_kf].all()
    assert scene.obj[pillow_kf, V.object_index("pillow")].all()
    # drinking from a cup: drinking from, holding and touching the cup, only while drinking
    np.testing.assert_array_equal(rel_at(scene, "cup", "drinking from"), cup_kf)
    np.testing.assert_array_equal(rel_at(scene, "cup", "holding"), cup_kf)
    assert rel_at(scene, "cup", "touching")[cup_kf].all()
    # watching television: looking at it (never 'not looking at' at the same time)
    assert rel_at(scene, "television", "looking at")[tv_kf].all()
    assert not rel_at(scene, "television", "not looking at")[tv_kf].any()
    # raw scenes: no verb relation, relations only on annotated objects, never on the person
    assert not scene.rel[:, :, ~AG].any()
    assert not (scene.rel.any(-1) & ~scene.obj).any()
    assert not scene.obj[:, V.object_index("person")].any()


def test_sitting_puts_the_chair_beneath():
    scene = synthesize_scene(Script("SIT01", "train", 10.0, ((V.action_index("c059"), 1.0, 9.0),)), seed=2)
    # every keyframe lies in [1, 9]: sitting on the chair, the chair beneath the person
    assert rel_at(scene, "chair", "sitting on").all()
    assert rel_at(scene, "chair", "beneath").all()


def test_every_annotated_object_has_spatial_and_contact_relations():
    kinds = np.array(V.relation_kinds)
    for scene in synthesize(40, seed=11):
        f, o = np.nonzero(scene.obj)
        assert scene.rel[f, o][:, kinds == "spatial"].any(-1).all()
        assert scene.rel[f, o][:, kinds == "contact"].any(-1).all()


# -- densities ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scenes_500():
    return list(synthesize(500, seed=0))


def test_densities_near_action_genome(scenes_500):
    frames = sum(s.num_frames for s in scenes_500)
    objects = sum(int(s.obj.sum()) for s in scenes_500)
    relations = sum(int(s.rel.sum()) for s in scenes_500)
    # Action Genome: 234K keyframes over ~9.6K videos (24 each) from 5 per action; Charades
    # intervals give 29.9 here (6.75 actions per video, few coinciding frames)
    assert 26 <= frames / 500 <= 34
    assert 6.2 <= sum(s.num_instances for s in scenes_500) / 500 <= 7.3  # Charades: 6.75
    # AG: 1.72M relations over 476K objects = 3.6 per object
    assert 3.2 <= relations / objects <= 4.0
    # objects per keyframe: at least those of the actions running there (2.5 on real Charades
    # intervals, above AG's 2.0), plus a thin background
    action_objects = 0
    ao = np.array(V.action_object)
    for s in scenes_500[:100]:  # scalar count of distinct action objects per keyframe
        for t in s.frame_secs:
            running = {int(ao[c]) for c, a, b in zip(s.inst_cls, s.inst_start, s.inst_end) if a <= t <= b}
            action_objects += len(running - {-1})
    frames_100 = sum(s.num_frames for s in scenes_500[:100])
    objects_100 = sum(int(s.obj.sum()) for s in scenes_500[:100])
    assert 2.0 <= action_objects / frames_100 <= 3.0
    assert 0.1 <= (objects_100 - action_objects) / frames_100 <= 0.6
    assert 2.3 <= objects / frames <= 3.3
    assert 7.5 <= relations / frames <= 12.0


def test_scripts_follow_the_profile():
    profile = load_profile()
    scripts = sample_scripts(2000, seed=1)
    counts = np.bincount([a[0] for s in scripts for a in s.actions], minlength=157)
    real = np.array(profile["class_frequency"])
    assert np.corrcoef(counts, real)[0, 1] > 0.95
    lengths = np.array([s.length_secs for s in scripts])
    q = profile["length_quantiles"]
    assert q[25] <= np.median(lengths) <= q[75]
    assert all(0 <= a[1] <= a[2] <= s.length_secs for s in scripts for a in s.actions)


def test_a_custom_profile_is_used():
    profile = copy.deepcopy(load_profile())
    profile["actions_per_video"] = [1]  # every video has no action
    scenes = list(synthesize(5, seed=0, profile=profile))
    assert all(s.num_instances == 0 and s.num_frames == 5 for s in scenes)


# -- real Charades videos --------------------------------------------------------------------------


def test_from_charades_keeps_real_intervals():
    video = SimpleNamespace(video_id="46GP8", split="train", length_secs=24.83, scene="Kitchen",
                            objects=("food", "stove", "window"),
                            actions=((92, 11.90, 21.20), (147, 0.00, 12.60)))
    (scene,) = synthesize_from_charades([video], seed=0)
    assert scene.video_id == "46GP8" and scene.split == "train"
    assert scene.inst_cls.tolist() == [147, 92]
    np.testing.assert_allclose(scene.inst_start, [0.0, 11.9], rtol=0, atol=1e-6)
    np.testing.assert_array_equal(scene.frame_ids, keyframes([11.9, 0.0], [21.2, 12.6], 24.83))
    # cooking something puts the food in hand's reach (touching) while it runs
    cooking = (scene.frame_secs >= 0) & (scene.frame_secs <= np.float32(12.6))
    assert rel_at(scene, "food", "touching")[cooking].all()
    # watching outside of a window: looking at the window
    watching = (scene.frame_secs >= np.float32(11.9)) & (scene.frame_secs <= np.float32(21.2))
    assert rel_at(scene, "window", "looking at")[watching].all()


def test_from_charades_reads_the_loader_records():
    from tensorqa.loaders.charades import read_charades_csv

    videos = read_charades_csv([SHARED / "data" / "charades" / "Charades_v1_test.csv"])[:30]
    scenes = list(synthesize_from_charades(videos, seed=0))
    assert [s.video_id for s in scenes] == [v.video_id for v in videos]
    assert {s.split for s in scenes} == {"test"}
    for v, s in zip(videos, scenes):
        assert sorted(c for c, _, _ in v.actions) == sorted(s.inst_cls.tolist())
    again = list(synthesize_from_charades(videos[10:20], seed=0))
    assert all(same_content(a, b) for a, b in zip(scenes[10:20], again))
