"""``info``'s counts, read from the packed bits, against the scenes' own boolean arrays."""

import numpy as np
import pytest

from helpers import random_scene
from tensorqa.scenes.info import bit_counts, store_info
from tensorqa.scenes.store import open_store, pack_bits, write_store
from tensorqa.scenes.vocab import vocab


def test_bit_counts_of_hand_worked_words():
    words = np.array([[0b101, 0b100], [np.iinfo(np.int64).min, -1]], dtype=np.int64)  # min: bit 63; -1: all 64
    want = np.ones(64, np.int64)
    want[0] += 1
    want[2] += 2
    want[63] += 1
    assert (bit_counts(words) == want).all()
    a = np.random.default_rng(0).random((3, 5, 54)) < 0.3
    assert (bit_counts(pack_bits(a))[:54] == a.sum((0, 1))).all() and not bit_counts(pack_bits(a))[54:].any()


@pytest.mark.parametrize("block", [1, 7, 128])
def test_store_info_counts_what_the_scenes_hold(tmp_path, block):
    rng = np.random.default_rng(3)
    scenes = [random_scene(rng, f"V{i:04d}") for i in range(40)]
    path = write_store(tmp_path / "s.h5", scenes, source="test", block=16)
    with open_store(path) as s:
        info = store_info(s, block=block)
    v = vocab()
    frames = sum(x.num_frames for x in scenes)
    obj = sum(x.obj.sum(0) for x in scenes)
    rel = sum(x.rel.sum((0, 1)) for x in scenes)
    act = np.bincount(np.concatenate([x.inst_cls for x in scenes]), minlength=v.num_actions)
    assert info["keyframes"] == frames and info["relation_instances"] == int(rel.sum())
    assert info["objects_per_keyframe"] == round(int(obj.sum()) / frames, 3)
    top = lambda counts, names, per: [(names[i], round(int(counts[i]) / per, 4) if per else int(counts[i]))
                                      for i in np.argsort(-counts, kind="stable")[:12] if counts[i] > 0]
    assert info["objects"] == top(obj, v.object_english, frames)
    assert info["actions"] == top(act, v.action_phrases, None)
    assert [c for _, c in info["relations"]] == [c for _, c in top(rel, v.relation_english, None)]
