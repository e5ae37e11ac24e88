"""The compiled engine end to end (``clevr.compiled_driver``: blocks of a store through the compiled
generator and record writer, the questions JSON and Parquet writers) against its twin, the torch
grid and the Python record path: the same files byte for byte, in both semantics, under CLEVR's
options, whatever the blocks or processes."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from tensorqa.clevr.generate import Options, generate_store
from tensorqa.clevr.semantics import CLEVR, STRICT
from tensorqa.errors import TensorQAError
from tensorqa.scenes.clevr_sampler import relations_from_coords, sample_scenes
from tensorqa.scenes.loaders.clevr import load_clevr_scenes
from tensorqa.scenes.static_batch import StaticScene
from tensorqa.scenes.static_store import write_static_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Scenes written as CLEVR's scene JSON and loaded back (the real loader), 3 to 10 objects."""
    d = tmp_path_factory.mktemp("compiled")
    f = d / "CLEVR_new_scenes.json"
    f.write_text(json.dumps({"info": {"split": "new"}, "scenes": [s.to_json() for s in sample_scenes(90, seed=21)]}))
    return write_static_store(d / "s.h5", load_clevr_scenes(f)[0], info={"split": "new"})


def _outputs(store, out, **kw):
    """Both engines' questions JSON and Parquet files (their bytes) for the same options."""
    got = {}
    for engine in ("torch", "compiled"):
        opt = Options(engine=engine, **kw)
        st_ = generate_store(store, out / f"{engine}.json", opt=opt)
        assert st_["engine"] == engine
        generate_store(store, out / engine, fmt="parquet", opt=opt)
        files = [f.read_bytes() for f in sorted((out / engine / "data").glob("*.parquet"))]
        got[engine] = ((out / f"{engine}.json").read_bytes(), files)
    return got["torch"], got["compiled"]


@pytest.mark.parametrize("sem", [CLEVR, STRICT], ids=["clevr", "strict"])
@pytest.mark.parametrize("kw", [{}, *(pytest.param(kw, marks=pytest.mark.slow) for kw in (  # whole outputs twice each
                                    {"templates_per_image": 90, "batch_scenes": 37},
                                    {"instances_per_template": 3, "draws": 8, "seed": 5},
                                    {"draws": 32, "valid_draws": 4, "reset_counts_every": 40}))],
                         ids=["defaults", "every-template", "instances", "draws"])
def test_compiled_files_equal_the_torch_grids(store, tmp_path, sem, kw):
    (tj, tp), (cj, cp) = _outputs(store, tmp_path, semantics=sem, **kw)
    assert tj == cj  # the questions JSON, byte for byte (text, programs, _output, answers, key order)
    assert tp == cp and tp  # the Parquet files, byte for byte: one writer for both backends
    qs = json.loads(cj)["questions"]
    assert len(qs) >= 90 and len({(q["template_filename"], q["question_family_index"]) for q in qs}) > 20


def test_compiled_files_equal_the_torch_grids_on_scenes_of_many_objects(tmp_path):
    """Scenes of 11 to 20 objects (two sampled scenes side by side): object indices past 9, whose
    ``_output`` sets the writer spells digit by digit rather than from its table of small sets."""
    a, b = sample_scenes(40, seed=3), sample_scenes(40, seed=4)
    scenes = []
    for i, (x, y) in enumerate(zip(a, b)):
        coords = np.concatenate([x.coords, y.coords + np.array([7.0, 0.0, 0.0], np.float32)])
        if len(coords) <= 10:
            continue
        scenes.append(StaticScene(f"CLEVR_new_{i:06d}.png", "new", np.concatenate([x.attrs, y.attrs]),
                                  relations_from_coords(coords.astype(np.float64)), coords, i))
    store = write_static_store(tmp_path / "big.h5", scenes)
    (tj, _), (cj, _) = _outputs(store, tmp_path)
    assert tj == cj
    outputs = [set(n["_output"]) for q in json.loads(cj)["questions"] for n in q["program"]
               if isinstance(n["_output"], list)]
    assert any(max(s, default=0) >= 10 for s in outputs) and len(scenes) >= 20


def test_compiled_output_does_not_depend_on_blocks_shards_or_processes(store, tmp_path, monkeypatch):
    import tensorqa.clevr.compiled_driver as cd

    one = generate_store(store, tmp_path / "a.json", opt=Options(engine="compiled", batch_scenes=90))
    generate_store(store, tmp_path / "b.json", opt=Options(engine="compiled", batch_scenes=13))
    monkeypatch.setattr(cd, "GEN_SCENES", 7)  # blocks of 40 generated in parts of 7, 7, .., 5
    generate_store(store, tmp_path / "e.json", opt=Options(engine="compiled", batch_scenes=40))
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "e.json").read_bytes()
    generate_store(store, tmp_path / "c.json", opt=Options(engine="compiled", batch_scenes=50, reset_counts_every=30),
                   jobs=2)
    generate_store(store, tmp_path / "d.json", opt=Options(engine="compiled", batch_scenes=50, reset_counts_every=30))
    assert one["questions"] > 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert (tmp_path / "c.json").read_bytes() == (tmp_path / "d.json").read_bytes()


def test_streamed_questions_json_does_not_depend_on_its_buffer(store, tmp_path):
    """The questions JSON streams through one buffer: a small buffer (it grows when a record does
    not fit) or writes through the page cache give the same file as the default; a failed run
    leaves no partial file and the earlier file untouched."""
    from tensorqa.clevr.compiled_driver import stream_questions_json
    from tensorqa.clevr.generate import _templates_and_synonyms
    from tensorqa.scenes.static_store import StaticStore

    templates, syn = _templates_and_synonyms(None, None)
    opt = Options(engine="compiled", batch_scenes=40)
    files = []
    for size, direct in ((4 << 20, True), (3000, True), (64, False)):
        files.append(tmp_path / f"q{size}.json")
        with StaticStore(store) as st:
            n = stream_questions_json(files[-1], st, templates, syn, opt, [(0, len(st))], True, {"split": "new"},
                                      buffer_bytes=size, direct=direct)
    assert n == len(json.loads(files[0].read_bytes())["questions"]) > 90
    assert files[0].read_bytes() == files[1].read_bytes() == files[2].read_bytes()
    before = files[0].read_bytes()

    class Boom(Exception):
        pass

    def scene_pieces_that_fail(*a):
        raise Boom

    import tensorqa.clevr.compiled_scenes as cr

    keep = cr.scene_pieces, cr.stored_scene_pieces
    cr.scene_pieces = cr.stored_scene_pieces = scene_pieces_that_fail
    try:
        with StaticStore(store) as st, pytest.raises(Boom):
            stream_questions_json(files[0], st, templates, syn, opt, [(0, len(st))], True, {"split": "new"})
    finally:
        cr.scene_pieces, cr.stored_scene_pieces = keep
    assert files[0].read_bytes() == before and not list(tmp_path.glob("*.partial"))


def test_streamed_parquet_does_not_depend_on_blocks_and_a_failed_run_leaves_the_old_files(store, tmp_path,
                                                                                         monkeypatch):
    """The Parquet shard is written block by block in fixed row groups: the files are the same bytes
    whatever the block size, the same as from the columns of two processes (``--jobs 2``), and
    several row groups read back as the one-row-group files; a run that fails part way leaves the
    shard's earlier files as they were and no partial file."""
    import tensorqa.clevr.parquet as cp
    import tensorqa.clevr.compiled_records as cr

    def files(folder):
        return {p.name: p.read_bytes() for p in sorted((folder / "data").iterdir())}

    generate_store(store, tmp_path / "one", fmt="parquet", opt=Options(engine="compiled"))
    monkeypatch.setattr(cp, "ROW_GROUP", 64)
    for name, kw, jobs in (("a", {"batch_scenes": 90}, 1), ("b", {"batch_scenes": 13}, 1),
                           ("c", {"batch_scenes": 50, "reset_counts_every": 30}, 2),
                           ("d", {"batch_scenes": 7, "reset_counts_every": 30}, 1)):
        generate_store(store, tmp_path / name, fmt="parquet", opt=Options(engine="compiled", **kw), jobs=jobs)
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert files(tmp_path / "c") == files(tmp_path / "d")
    groups = pq.ParquetFile(next((tmp_path / "a" / "data").iterdir())).metadata.num_row_groups
    assert groups > 1 and pq.ParquetFile(next((tmp_path / "one" / "data").iterdir())).metadata.num_row_groups == 1
    read = [pq.read_table(p).to_pylist() for p in sorted((tmp_path / "a" / "data").iterdir())]
    assert read == [pq.read_table(p).to_pylist() for p in sorted((tmp_path / "one" / "data").iterdir())]

    before, calls = files(tmp_path / "a"), []
    write_block = cr.write_block

    def fails_on_the_third_block(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return write_block(*a, **k)

    monkeypatch.setattr(cr, "write_block", fails_on_the_third_block)
    with pytest.raises(TensorQAError, match=r"new-00000-of-00001\.parquet: cannot write \(No space left on device\)"):
        generate_store(store, tmp_path / "a", fmt="parquet", opt=Options(engine="compiled", batch_scenes=30, seed=9))
    assert len(calls) == 3 and files(tmp_path / "a") == before  # no partial file either
