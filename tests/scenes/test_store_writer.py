"""``scenes.store_writer``: the store file as written (bit packing, chunks, compression, atomic
publication); reading it back is ``test_store``."""

import h5py
import numpy as np
import pytest
import torch

from helpers import random_scene
from tensorqa import TensorQAError
from tensorqa.scenes.store_writer import CHUNK_VIDEOS, FORMAT, pack_bits, unpack_bits, write_store


@pytest.fixture(scope="module")
def scenes():
    rng = np.random.default_rng(7)
    return [random_scene(rng, f"V{i:04d}") for i in range(40)]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory, scenes):
    path = tmp_path_factory.mktemp("store") / "s.h5"
    write_store(path, scenes, source="test", block=16)
    return path


def test_bit_packing_round_trip():
    rng = np.random.default_rng(0)
    a = rng.random((5, 7, 64)) < 0.5
    assert torch.equal(unpack_bits(torch.from_numpy(pack_bits(a)), 64), torch.from_numpy(a))


def test_pack_bits_sets_bit_k_of_the_word_for_flag_k():
    a = np.zeros((2, 1, 64), bool)
    a[0, 0, [0, 5, 63]] = True
    a[1, 0, 1] = True
    words = pack_bits(a)
    assert words.shape == (2, 1) and words.dtype == np.int64
    assert int(words[0, 0]) == 1 + (1 << 5) - (1 << 63)  # bit 63 is the sign of the int64 word
    assert int(words[1, 0]) == 2


def test_file_is_chunked_by_video_blocks_and_compressed(store_path):
    with h5py.File(store_path) as f:
        d = f["rel_bits"]
        assert d.compression == "gzip" and d.chunks[0] == CHUNK_VIDEOS
        assert f.attrs["format"] == FORMAT == "tensorqa.scenes"


def test_failed_write_leaves_nothing_behind_and_keeps_old_file(tmp_path, scenes):
    path = tmp_path / "s.h5"
    write_store(path, scenes[:3])
    before = path.read_bytes()

    def explode():
        yield scenes[0]
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_store(path, explode())
    assert path.read_bytes() == before and not (tmp_path / "s.h5.partial").exists()


def test_duplicate_video_ids_are_refused(tmp_path, scenes):
    with pytest.raises(TensorQAError, match="appears more than once"):
        write_store(tmp_path / "d.h5", [scenes[0], scenes[0]])
    assert not (tmp_path / "d.h5").exists()
