"""Static scenes: the sampler's placement rules, the CLEVR scene loader and the HDF5 store."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as hst

from tensorqa.errors import TensorQAError
from tensorqa.scenes.clevr_sampler import DIRECTIONS, MARGIN, MIN_DIST, relations_from_coords, sample_scenes
from tensorqa.scenes.loaders.clevr import load_clevr_scenes
from tensorqa.scenes.static_store import StaticStore, write_static_store


def test_sampler_follows_clevrs_placement_rules():
    scenes = sample_scenes(40, seed=3)
    assert all(3 <= s.num_objects <= 10 for s in scenes)
    for s in scenes:
        c = s.coords.astype(np.float64)
        for i in range(s.num_objects):
            for j in range(i):
                d = c[i, :2] - c[j, :2]
                assert np.hypot(*d) - c[i, 2] - c[j, 2] >= MIN_DIST - 1e-5
                for v in DIRECTIONS.values():
                    assert not 0 < d @ v[:2] < MARGIN - 1e-5
                # each pair is in exactly one of left/right and one of front/behind
                assert s.rel[i, j, 0] ^ s.rel[i, j, 1] and s.rel[i, j, 2] ^ s.rel[i, j, 3]
        assert not s.rel[np.arange(s.num_objects), np.arange(s.num_objects)].any()
    assert [s.to_json() for s in sample_scenes(5, seed=3)] == [s.to_json() for s in scenes[:5]]


def test_relations_as_clevr_derives_them():
    c = np.array([[0, 0, 0.35], [1.0, 0, 0.35]])  # object 1 at +x: right . (1,0) = 0.6563 > 0.2
    rel = relations_from_coords(c)
    assert rel[0, 1, 1] and rel[1, 0, 0] and rel[0, 1, 3] and not rel[0, 1, 2]


def test_store_round_trip_and_loader(tmp_path):
    scenes = sample_scenes(12, seed=1)
    f = tmp_path / "CLEVR_new_scenes.json"
    f.write_text(json.dumps({"info": {"split": "new"}, "scenes": [s.to_json() for s in scenes]}))
    loaded, info = load_clevr_scenes(f)
    assert info == {"split": "new"}
    out = write_static_store(tmp_path / "s.h5", loaded, source="test")
    with StaticStore(out) as st:
        assert len(st) == 12
        back = st.scenes()
        for a, b in zip(scenes, back):
            assert a.to_json()["relationships"] == b.to_json()["relationships"]
            assert np.array_equal(a.attrs, b.attrs)
        batch = st.batch(0, 12)
        assert batch.rel.shape[1:] == (10, 10, 4) or batch.rel.shape[1] == batch.rel.shape[2]
        assert torch.equal(batch.mask.sum(1), torch.tensor([s.num_objects for s in scenes]))


def test_bad_inputs_are_one_line_errors(tmp_path):
    with pytest.raises(TensorQAError, match="no such file"):
        load_clevr_scenes(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TensorQAError, match="not JSON"):
        load_clevr_scenes(bad)
    s = sample_scenes(1)[0].to_json()
    s["objects"][0]["color"] = "pink"
    bad.write_text(json.dumps({"scenes": [s]}))
    with pytest.raises(TensorQAError, match="unknown color 'pink'"):
        load_clevr_scenes(bad)
    h = tmp_path / "x.h5"
    h.write_text("nope")
    with pytest.raises(TensorQAError, match="cannot open as HDF5"):
        StaticStore(h)


@settings(max_examples=300, deadline=None)
@given(hst.lists(hst.text(alphabet=hst.sampled_from(list("ab_.0123456789-+ ") + ["٣", "é"]), max_size=14), min_size=1,
                max_size=6))
def test_image_indices_of_is_image_index_of_for_every_name(names):
    """The store's vectorized image indices (the digits between the last '_' and the last '.')
    equal ``image_index_of`` name by name, its errors included."""
    from tensorqa.scenes.static_batch import image_index_of
    from tensorqa.scenes.static_store import image_indices_of

    names = [n.strip("\0") for n in names]
    raw = np.array([n.encode() for n in names])
    try:
        want = [image_index_of(n) for n in names]
    except (TensorQAError, OverflowError) as e:
        with pytest.raises(type(e)):
            image_indices_of(raw, tuple(names))
        return
    assert image_indices_of(raw, tuple(names)).tolist() == want


@pytest.mark.parametrize("chunks", ["whole scenes", "h5py's guess"])
def test_arrays_read_in_blocks_are_the_stored_rows(tmp_path, chunks):
    """``arrays`` reads rel_bits as whole chunks and keeps them: any sequence of blocks, aligned or
    not, forward or back, gives the stored rows (checked against ``scenes``, which reads directly)."""
    import h5py

    p = write_static_store(tmp_path / "s.h5", sample_scenes(300, seed=5))
    if chunks == "h5py's guess":  # the chunking of stores written before whole-scene chunks
        with h5py.File(p, "a") as f:
            data = f["rel_bits"][:]
            del f["rel_bits"]
            f.create_dataset("rel_bits", data=data, chunks=(70, 3, 3), compression="gzip", shuffle=True)
    with StaticStore(p) as st:
        if chunks == "whole scenes":
            assert st._f["rel_bits"].chunks == (300,) + st._f["rel_bits"].shape[1:]
        want = st._f["rel_bits"][:]
        for a, b in [(0, 64), (64, 65), (65, 200), (10, 20), (199, 300), (0, 300), (250, 400)]:
            got = st.arrays(a, b)["rel_bits"]
            assert got.shape[0] == min(b, 300) - a
            np.testing.assert_array_equal(got, want[a:b])
            for k, s in enumerate(st.scenes(a, b)):
                n = s.num_objects
                np.testing.assert_array_equal((got[k, :n, :n, None] >> np.arange(4)) & 1, s.rel)
