import numpy as np
import torch

from helpers import make_scene, random_scene
from tensorqa import vocab
from tensorqa.scenes.batch import SceneBatch


def test_padding_and_masks():
    rng = np.random.default_rng(1)
    scenes = [random_scene(rng, f"V{i}") for i in range(6)]
    b = SceneBatch.from_scenes(scenes)
    assert b.rel.shape == (6, max(s.num_frames for s in scenes), 36, vocab().num_relations)
    assert b.num_frames.tolist() == [s.num_frames for s in scenes]
    assert b.num_instances.tolist() == [s.num_instances for s in scenes]
    assert not b.rel[~b.frame_mask].any()


def test_cat_repads_batches_of_different_sizes():
    rng = np.random.default_rng(2)
    scenes = [random_scene(rng, f"V{i}", max_frames=40 if i == 3 else 5) for i in range(8)]
    whole = SceneBatch.from_scenes(scenes)
    parts = [SceneBatch.from_scenes(scenes[:3]), SceneBatch.from_scenes(scenes[3:4]), SceneBatch.from_scenes(scenes[4:])]
    assert SceneBatch.cat(parts).equal(whole)


def test_slicing_selects_videos():
    rng = np.random.default_rng(3)
    scenes = [random_scene(rng, f"V{i}") for i in range(10)]
    b = SceneBatch.from_scenes(scenes)
    assert b[2:5].equal(SceneBatch.from_scenes(scenes[2:5]))
    assert b[[7, 1]].equal(SceneBatch.from_scenes([scenes[7], scenes[1]]))
    assert b[torch.arange(10) % 3 == 0].video_ids == ("V0", "V3", "V6", "V9")
    assert [s.video_id for s in b.scenes()] == [s.video_id for s in scenes]


def test_act_and_instance_frames_follow_the_intervals():
    # keyframes at 1 s, 2 s, 3 s, 4 s; "holding a pillow" spans 1.5-3 s -> keyframes 2 s and 3 s (inclusive end)
    s = make_scene("HAND1", [(24, 1.0), (48, 2.0), (72, 3.0), (96, 4.0)], actions=[("holding a pillow", 1.5, 3.0)])
    b = SceneBatch.from_scenes([s])
    assert b.inst_frames[0, 0].tolist() == [False, True, True, False]
    pillow = vocab().action_index("holding a pillow")
    assert b.act[0, :, pillow].tolist() == [False, True, True, False]
    assert b.act.sum() == 2


def test_to_device_keeps_everything():
    rng = np.random.default_rng(4)
    b = SceneBatch.from_scenes([random_scene(rng, "V0")])
    assert b.to("cpu").equal(b) and b.to("cpu").device.type == "cpu"


def test_video_scene_from_lists_places_facts_by_frame_number():
    from tensorqa.scenes.batch import VideoScene

    v = vocab()
    bag, cup = v.object_index("bag"), v.object_index("cup/glass/bottle")
    holding = v.relation_index("holding")
    # facts are given by Charades frame number (31, 91), not by position
    s = VideoScene.from_lists("V1", np.array([31, 91]), np.array([1.3, 3.8]), ([91, 31], [bag, cup], [holding, holding]),
                              ([91], [bag]), [(5, 2.0, 4.0), (3, 0.5, 9.0), (7, 0.5, 1.0)], "test")
    assert s.frame_ids.tolist() == [31, 91] and s.split == "test"
    assert np.argwhere(s.rel).tolist() == [[0, cup, holding], [1, bag, holding]]
    assert np.argwhere(s.obj).tolist() == [[1, bag]]
    # instances ordered by (start, end, class)
    assert s.inst_cls.tolist() == [7, 3, 5] and s.inst_start.tolist() == [0.5, 0.5, 2.0]
    assert s.inst_end.tolist() == [1.0, 9.0, 4.0]
