"""``engine.rng_numba``: the numba front-end of the seeded hash gives the numpy front-end's values."""

import numpy as np
import pytest

from tensorqa.engine import rng

WORDS = np.array([0, 1, 2, 7, 12345, 2**31 - 1, 2**40 + 3, 2**63 - 1], np.int64)


def test_numba_front_end_agrees():
    nb = pytest.importorskip("tensorqa.engine.rng_numba")
    from numba import njit

    @njit
    def run(root, words, n):
        out = np.empty((len(words), 3), np.float64)
        for i in range(len(words)):
            h = nb.fold(nb.fold(root, words[i]), 3)
            out[i, 0], out[i, 1], out[i, 2] = np.float64(h >> np.uint64(11)), nb.unit(h), nb.below(h, n)
        return out

    got = run(np.uint64(rng.derive_int(9, "clevr.draw")), WORDS, 11)
    h = rng.derive(9, "clevr.draw", WORDS, 3)
    assert np.array_equal(got[:, 0], (h >> np.uint64(11)).astype(np.float64))
    assert np.array_equal(got[:, 1], rng.unit(h))
    assert np.array_equal(got[:, 2], rng.below(h, 11))


def test_mix64_is_the_finalizer():
    nb = pytest.importorskip("tensorqa.engine.rng_numba")
    from numba import njit

    @njit
    def run(xs):
        out = np.empty(len(xs), np.uint64)
        for i in range(len(xs)):
            out[i] = nb.mix64(xs[i])
        return out

    xs = rng.sequence(4, "foils", 64)
    assert (run(xs) == rng.mix64(xs)).all()
