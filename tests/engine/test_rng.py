"""The seeded hash's four front-ends agree with each other and with golden values.

The golden values are splitmix64's published first outputs (seed 0 state advanced by GOLDEN, then the
finalizer: 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F), so the finalizer is checked
against the algorithm, not against our own output.
"""

import numpy as np
import pytest
import torch

from tensorqa.engine import rng

SPLITMIX64_SEED0 = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_finalizer_gives_splitmix64s_published_stream():
    states = [(i + 1) * rng.GOLDEN % (1 << 64) for i in range(3)]
    assert [rng.mix64_int(s) for s in states] == SPLITMIX64_SEED0
    assert rng.mix64(np.array(states, np.uint64)).tolist() == SPLITMIX64_SEED0
    signed = torch.tensor([s - (1 << 64) if s >= 1 << 63 else s for s in states])
    assert [int(v) % (1 << 64) for v in rng.mix64_torch(signed)] == SPLITMIX64_SEED0


WORDS = np.array([0, 1, 2, 7, 12345, 2**31 - 1, 2**40 + 3, 2**63 - 1], np.int64)


@pytest.mark.parametrize("seed", [0, 1, 42, 2**40 + 7])
@pytest.mark.parametrize("stream", sorted(rng.STREAMS))
def test_front_ends_agree(seed, stream):
    a, b = WORDS[:, None], WORDS[None, :]
    ref = np.array([[rng.derive_int(seed, stream, int(x), int(y)) for y in WORDS] for x in WORDS], np.uint64)
    assert (rng.derive(seed, stream, a, b) == ref).all()
    t = rng.derive_torch(seed, stream, torch.from_numpy(a), torch.from_numpy(b))
    assert (t.numpy().view(np.uint64) == ref).all()
    assert (rng.below(ref, 7) == np.array([[rng.below_int(int(h), 7) for h in row] for row in ref])).all()
    assert (rng.below_torch(t, 7).numpy() == rng.below(ref, 7)).all()
    assert np.array_equal(rng.unit_torch(t).numpy(), rng.unit(ref))


def test_unit_and_below_ranges_and_spread():
    h = rng.sequence(3, "foils", 100_000)
    u = rng.unit(h)
    assert 0 < u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    counts = np.bincount(rng.below(h, 10), minlength=10)
    assert counts.min() > 9_500 and counts.max() < 10_500
    assert len(set(h.tolist())) == len(h)


def test_streams_and_seeds_are_independent():
    assert rng.derive_int(0, "agqa.frame", 5) != rng.derive_int(0, "agqa.reference", 5)
    assert rng.derive_int(0, "agqa.frame", 5) != rng.derive_int(1, "agqa.frame", 5)
    assert rng.derive_int(0, "agqa.frame", 5, 6) != rng.derive_int(0, "agqa.frame", 6, 5)
    assert len(set(rng.STREAMS.values())) == len(rng.STREAMS)
