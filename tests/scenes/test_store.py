import h5py
import numpy as np
import pytest

from helpers import random_scene
from tensorqa import TensorQAError
from tensorqa.scenes.batch import SceneBatch
from tensorqa.scenes.store import open_store, write_store


@pytest.fixture(scope="module")
def scenes():
    rng = np.random.default_rng(7)
    return [random_scene(rng, f"V{i:04d}") for i in range(257)]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory, scenes):
    path = tmp_path_factory.mktemp("store") / "s.h5"
    write_store(path, scenes, source="test", block=100)  # blocks of different F and N
    return path


def test_round_trip_is_identical(store_path, scenes):
    with open_store(store_path) as s:
        assert len(s) == len(scenes) and s.video_ids == tuple(x.video_id for x in scenes)
        for bs in (1, 13, 64, 1000):
            got = SceneBatch.cat(list(s.blocks(bs)))
            assert got.equal(SceneBatch.from_scenes(scenes))
        # per-video view: exactly the original numpy arrays
        for x in scenes[:20]:
            y = s.scene(x.video_id)
            for name in ("frame_ids", "frame_secs", "rel", "obj", "inst_cls", "inst_start", "inst_end"):
                np.testing.assert_array_equal(getattr(y, name), getattr(x, name))
            assert y.split == x.split


def test_batch_is_trimmed_to_its_own_padding(store_path, scenes):
    with open_store(store_path) as s:
        b = s.batch(10, 20)
        assert b.rel.shape[1] == max(x.num_frames for x in scenes[10:20])
        assert b.inst_cls.shape[1] == max(x.num_instances for x in scenes[10:20])


def test_take_reads_the_videos_at_positions(store_path, scenes):
    at = np.array([0, 3, 4, 5, 99, 100, 256])  # across the store's blocks of different padding
    with open_store(store_path) as s:
        got = SceneBatch.cat(list(s.blocks_of(at, 3)))
        assert got.equal(SceneBatch.from_scenes([scenes[i] for i in at]))
        assert s.take(at).rel.shape[1] == max(scenes[i].num_frames for i in at)
        assert s.take(np.array([3, 4, 5])).equal(s.batch(3, 6))  # a run, read as a slice
        with pytest.raises(TensorQAError, match="must increase"):
            s.take(np.array([5, 3]))


def test_lookup_by_video_id(store_path, scenes):
    with open_store(store_path) as s:
        assert s.get("V0042").video_ids == ("V0042",)
        with pytest.raises(TensorQAError, match="no video 'nope'"):
            s.get("nope")


def _corrupt(src, dst, edit):
    import shutil

    shutil.copy(src, dst)
    with h5py.File(dst, "a") as f:
        edit(f)
    return dst


@pytest.mark.parametrize("edit, message", [
    (lambda f: f.attrs.__setitem__("format_version", 99), "format_version 99"),
    (lambda f: f.attrs.__setitem__("vocab_hash", "deadbeef"), "vocabulary mismatch"),
    (lambda f: f.__delitem__("rel_bits"), "missing dataset 'rel_bits'"),
    (lambda f: f.attrs.__setitem__("format", "other"), "not a tensorqa scene store"),
])
def test_bad_stores_are_clear_errors(tmp_path, store_path, edit, message):
    bad = _corrupt(store_path, tmp_path / "bad.h5", edit)
    with pytest.raises(TensorQAError, match=message) as e:
        open_store(bad)
    assert str(bad) in str(e.value) and "\n" not in str(e.value)


def test_truncated_and_foreign_files(tmp_path, store_path):
    data = store_path.read_bytes()
    (tmp_path / "trunc.h5").write_bytes(data[: len(data) // 2])
    (tmp_path / "text.h5").write_text("id,actions\n")
    for name in ("trunc.h5", "text.h5", "missing.h5"):
        with pytest.raises(TensorQAError, match=name):
            open_store(tmp_path / name)
