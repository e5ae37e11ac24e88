"""``clevr.scene_block``: what the torch grid reads of a block of scenes, against direct statements
(Python popcounts, attribute comparisons, ``engine.rng``'s stream)."""

from __future__ import annotations

import numpy as np
import torch

from tensorqa.clevr.scene_block import POPCOUNT16, Block, count_true
from tensorqa.engine import rng
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_batch import StaticBatch


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


def test_block_key_match_is_the_attribute_comparison():
    batch = StaticBatch.from_scenes(sample_scenes(6, seed=4))
    block = Block.build(batch, torch.arange(6) + 100, M=3, seed=5)
    g = torch.Generator().manual_seed(1)
    for attrs in ((0,), (1, 3), (0, 1, 2, 3), ()):
        params = [(torch.randint(-1, 2 if a in (0, 2) else 3, (block.P,), generator=g), a) for a in attrs]
        got = block.key_match(params)
        for p in range(block.P):
            b = p // block.M
            for n in range(batch.mask.shape[1]):
                want = bool(batch.mask[b, n]) and all(int(v[p]) < 0 or int(batch.attrs[b, n, a]) == int(v[p])
                                                      for v, a in params)
                assert bool(got[p, n]) == want


def test_block_uniforms_are_the_clevr_draw_stream():
    batch = StaticBatch.from_scenes(sample_scenes(4, seed=2))
    pos = torch.tensor([7, 8, 20, 21])
    block = Block.build(batch, pos, M=5, seed=11, first_draw=2)
    u = block.uniforms(template_id=13, node=3).numpy()
    scene, draw = np.repeat(pos.numpy(), 5), np.tile(np.arange(2, 7), 4)
    assert np.array_equal(u, rng.unit(rng.derive(11, "clevr.draw", scene, 13, 3, draw)))
    assert ((0 < u) & (u < 1)).all()
