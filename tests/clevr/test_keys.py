"""The filter keys' tables (``tensorqa.clevr.keys``) against direct statements of what they hold."""

from __future__ import annotations

import itertools


from tensorqa.clevr.scene_block import SceneTables
from tensorqa.clevr.keys import all_keys, scene_match
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_batch import StaticBatch


def test_all_keys_are_every_choice_of_attribute_values():
    keys = all_keys()
    assert keys.shape == (324, 4)
    assert keys.tolist() == [list(k) for k in itertools.product(range(-1, 2), range(-1, 8), range(-1, 2), range(-1, 3))]


def test_scene_match_and_key_bits():
    batch = StaticBatch.from_scenes(sample_scenes(20, seed=9))
    match = scene_match(batch.attrs, batch.mask)
    keys = all_keys()
    for b in range(20):
        for n in range(batch.mask.shape[1]):
            for k in (0, 5, 77, 200, 323):
                want = bool(batch.mask[b, n]) and all(int(keys[k, a]) < 0 or int(batch.attrs[b, n, a]) == int(keys[k, a])
                                                      for a in range(4))
                assert bool(match[b, n, k]) == want
    bits = SceneTables.of(batch).key_bits
    for b, k in ((0, 0), (3, 100), (19, 323)):
        assert int(bits[b, k]) == sum(1 << n for n in range(batch.mask.shape[1]) if match[b, n, k])
