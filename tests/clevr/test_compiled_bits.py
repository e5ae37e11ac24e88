"""``clevr.compiled_bits``: bit counts and selection, and the draws' hash, against Python and the torch grid."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorqa.clevr import compiled_bits
from tensorqa.clevr.scene_block import Block
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_batch import StaticBatch


def test_uniforms_equal_the_grids_hashes_and_engine_rngs():
    from tensorqa.engine import rng
    from tensorqa.engine.rng_numba import fold

    batch = StaticBatch.from_scenes(sample_scenes(3, seed=0))
    blk = Block.build(batch, torch.tensor([0, 7, 123456]), 5, seed=9, first_draw=3)
    want = blk.uniforms(17, 4).numpy()
    root = compiled_bits.draw_root(9)
    got = [compiled_bits.uniform_in(fold(root, s), 17, d, 4) for s in (0, 7, 123456) for d in range(3, 8)]
    # the Python front-end: the top 53 bits of the hash of (scene, template, node, draw)
    ref = [((rng.derive_int(9, "clevr.draw", s, 17, 4, d) >> 11) + 0.5) / 2.0**53 for s in (0, 7, 123456)
           for d in range(3, 8)]
    assert np.array_equal(np.array(got), want) and np.array_equal(want, np.array(ref))


@settings(deadline=None)  # the first example compiles the functions (numba)
@given(st.integers(min_value=0, max_value=2**62 - 1), st.integers(min_value=0, max_value=61))
def test_popcount_lowest_and_select_bit(x, r):
    assert compiled_bits.popcount(x) == x.bit_count()
    if x:
        assert compiled_bits.lowest_bit(x) == (x & -x).bit_length() - 1
        ones = [i for i in range(62) if (x >> i) & 1]
        if r < len(ones):
            assert compiled_bits.select_bit(x, r) == ones[r]


@settings(deadline=None)
@given(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.integers(min_value=0, max_value=63))
def test_select_bit_on_whole_words(x, r):
    """Words of 64 keys (bit 63 set: a negative int64) select like their unsigned bits."""
    ones = [i for i in range(64) if ((x & (2**64 - 1)) >> i) & 1]
    if r < len(ones):
        assert compiled_bits.select_bit(x, r) == ones[r]
