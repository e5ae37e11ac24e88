"""The filter keys' tables (``tensorqa.clevr.keys``) against direct statements of what they hold."""

from __future__ import annotations

import itertools

import torch

from tensorqa.clevr.scene_block import POPCOUNT16, SceneTables, count_true
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


def test_count_true_equals_a_sum():
    g = torch.Generator().manual_seed(0)
    for shape in ((7, 324), (3, 4, 324), (5, 12), (2, 13), (4, 1296), (6, 0)):
        x = torch.rand(shape, generator=g) < 0.4
        assert torch.equal(count_true(x), x.sum(-1)), shape
    x = torch.ones(3, 1020, dtype=torch.bool)  # 255 words a row: every byte lane at its largest
    assert torch.equal(count_true(x), x.sum(-1))
    y = (torch.rand(8, 324, generator=g) < 0.5)[:, ::2]  # not contiguous: the plain sum
    assert torch.equal(count_true(y), y.sum(-1))
    z = torch.rand(9, 12, generator=g) < 0.5
    assert torch.equal(count_true(z[1:]), z[1:].sum(-1))  # a contiguous slice, offset 12 bytes
    w = (torch.rand(40, generator=g) < 0.5)[1:37].view(3, 12)  # offset 1: not word-aligned
    assert torch.equal(count_true(w), w.sum(-1))


def test_popcount_table():
    assert POPCOUNT16.tolist() == [bin(i).count("1") for i in range(1 << 16)]
