"""The compiled engine (``clevr.compiled``, ``clevr.compiled_records``) against its twin, the torch
grid and the Python record path: the same files byte for byte, in both semantics, under CLEVR's
options, both formats; and its helpers against the Python functions they restate."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from helpers import SHARED
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorqa.clevr import compiled_bits, compiled_records, text
from tensorqa.clevr.generate import Options, generate_store
from tensorqa.clevr.grid import Block
from tensorqa.clevr.semantics import CLEVR, STRICT
from tensorqa.errors import TensorQAError
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.loaders.clevr import load_clevr_scenes
from tensorqa.scenes.static_batch import StaticBatch
from tensorqa.scenes.static_store import write_static_store

TEMPLATES = SHARED / "data" / "clevr" / "CLEVR_1.0_templates"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Scenes written as CLEVR's scene JSON and loaded back (the real loader), 3 to 10 objects."""
    d = tmp_path_factory.mktemp("compiled")
    f = d / "CLEVR_new_scenes.json"
    f.write_text(json.dumps({"info": {"split": "new"}, "scenes": [s.to_json() for s in sample_scenes(90, seed=21)]}))
    return write_static_store(d / "s.h5", load_clevr_scenes(f)[0], info={"split": "new"})


def _outputs(store, out, **kw):
    """Both engines' questions JSON and Parquet rows for the same options."""
    got = {}
    for engine in ("torch", "compiled"):
        opt = Options(engine=engine, **kw)
        st_ = generate_store(store, out / f"{engine}.json", opt=opt)
        assert st_["engine"] == engine
        generate_store(store, out / engine, fmt="parquet", opt=opt)
        rows = [pq.read_table(f).to_pylist() for f in sorted((out / engine / "data").glob("*.parquet"))]
        got[engine] = ((out / f"{engine}.json").read_bytes(), rows)
    return got["torch"], got["compiled"]


@pytest.mark.parametrize("sem", [CLEVR, STRICT], ids=["clevr", "strict"])
@pytest.mark.parametrize("kw", [{}, {"templates_per_image": 90, "batch_scenes": 37},
                                {"instances_per_template": 3, "draws": 8, "seed": 5},
                                {"draws": 32, "valid_draws": 4, "reset_counts_every": 40}],
                         ids=["defaults", "every-template", "instances", "draws"])
def test_compiled_files_equal_the_torch_grids(store, tmp_path, sem, kw):
    (tj, tp), (cj, cp) = _outputs(store, tmp_path, semantics=sem, **kw)
    assert tj == cj  # the questions JSON, byte for byte (text, programs, _output, answers, key order)
    assert tp == cp  # every Parquet row
    qs = json.loads(cj)["questions"]
    assert len(qs) >= 90 and len({(q["template_filename"], q["question_family_index"]) for q in qs}) > 20


def test_compiled_output_does_not_depend_on_blocks_shards_or_processes(store, tmp_path):
    one = generate_store(store, tmp_path / "a.json", opt=Options(engine="compiled", batch_scenes=90))
    generate_store(store, tmp_path / "b.json", opt=Options(engine="compiled", batch_scenes=13))
    generate_store(store, tmp_path / "c.json", opt=Options(engine="compiled", batch_scenes=50, reset_counts_every=30),
                   jobs=2)
    generate_store(store, tmp_path / "d.json", opt=Options(engine="compiled", batch_scenes=50, reset_counts_every=30))
    assert one["questions"] > 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert (tmp_path / "c.json").read_bytes() == (tmp_path / "d.json").read_bytes()


def test_compiled_engine_is_for_the_cpu():
    with pytest.raises(TensorQAError, match="--engine compiled runs on the CPU"):
        Options(engine="compiled", device="cuda")
    with pytest.raises(TensorQAError, match="--engine"):
        Options(engine="fast")


def test_uniforms_equal_the_grids_hashes():
    batch = StaticBatch.from_scenes(sample_scenes(3, seed=0))
    blk = Block.build(batch, torch.tensor([0, 7, 123456]), 5, seed=9, first_draw=3)
    want = blk.uniforms(17, 4).numpy()
    got = [compiled_bits.uniform(9, s, 17, d, 4) for s in (0, 7, 123456) for d in range(3, 8)]
    assert np.array_equal(np.array(got), want)


def test_text_picks_equal_text_picker():
    for seed, scene, tid, draw in [(0, 0, 0, 0), (3, 99, 45, 15), (2**40, 7, 89, 31)]:
        k = compiled_records.text_key(seed, scene, tid, draw)
        pick = text.picker(seed, scene, tid, draw)
        for slot, n in [(0, 3), (1, 2), (5, 3), (text.BRACKET_SLOT + 2, 2)]:
            assert compiled_records.pick(np.uint64(k), slot, n) == pick(slot, n)


@given(st.integers(min_value=0, max_value=2**62 - 1), st.integers(min_value=0, max_value=61))
def test_popcount_lowest_and_select_bit(x, r):
    assert compiled_bits.popcount(x) == x.bit_count()
    if x:
        assert compiled_bits.lowest_bit(x) == (x & -x).bit_length() - 1
        ones = [i for i in range(62) if (x >> i) & 1]
        if r < len(ones):
            assert compiled_bits.select_bit(x, r) == ones[r]


_TEXT = st.text(alphabet=" \t\nab oteh?r", max_size=40)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_collapse_is_split_and_join(s):
    src = np.frombuffer(s.encode(), np.uint8)
    dst = np.zeros(len(src) + 1, np.uint8)
    n = compiled_records.collapse(src, len(src), dst, 0)
    assert bytes(dst[:n]).decode() == " ".join(s.split())


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.sampled_from([(" other ", " "), (" another ", " a "), ("aa", "b")]))
def test_replace_all_is_str_replace(s, pair):
    old, new = pair
    src = np.frombuffer(s.encode(), np.uint8)
    dst = np.zeros(2 * len(src) + 8, np.uint8)
    n = compiled_records.replace_all(src, len(src), np.frombuffer(old.encode(), np.uint8),
                                     np.frombuffer(new.encode(), np.uint8), dst)
    assert bytes(dst[:n]).decode() == s.replace(old, new)


def test_plan_refuses_what_it_cannot_hold(tmp_path):
    """A template whose strings would need JSON escaping falls back to the torch grid (auto) and
    is a clear error with --engine compiled."""
    from tensorqa.clevr.generate import use_compiled
    from tensorqa.clevr.templates import load_templates

    t = json.loads((TEMPLATES / "zero_hop.json").read_text())[:1]
    t[0]["text"] = ['How many "quoted" <Z> <C> <M> <S>s are there?']
    (tmp_path / "t.json").write_text(json.dumps(t))
    templates = load_templates(tmp_path)
    assert not use_compiled(Options(), templates, {})
    with pytest.raises(TensorQAError, match="--engine compiled: .*escaping"):
        use_compiled(Options(engine="compiled"), templates, {})


def test_compiled_rows_equal_the_grids_on_crowded_scenes():
    """12 to 30 objects (CLEVR has at most 10): a scene's present keys span up to six words of the
    class tables' bit sets, and relations come from random positions."""
    from tensorqa.clevr.columns import param_order
    from tensorqa.clevr.compiled_driver import Book, accept_block
    from tensorqa.clevr.generate import Bookkeeping, choose_block
    from tensorqa.clevr.plan import plans
    from tensorqa.clevr.templates import load_synonyms, load_templates
    from tensorqa.scenes.static_batch import StaticScene

    templates = load_templates(TEMPLATES)
    plan, _ = plans(templates, load_synonyms(SHARED / "data" / "clevr" / "synonyms.json"))
    rng = np.random.default_rng(7)
    scenes = []
    for i in range(40):
        n = int(rng.integers(12, 31))
        attrs = np.stack([rng.integers(0, 2, n), rng.integers(0, 8, n), rng.integers(0, 2, n), rng.integers(0, 3, n)], 1)
        xy = rng.normal(size=(n, 2))
        d = xy[None, :, :] - xy[:, None, :]
        rel = np.stack([d[..., 0] < -0.2, d[..., 0] > 0.2, d[..., 1] < -0.2, d[..., 1] > 0.2], -1)
        scenes.append(StaticScene(f"CLEVR_crowd_{i:06d}.png", "crowd", attrs, rel, np.zeros((n, 3), np.float32), i))
    batch = StaticBatch.from_scenes(scenes)
    for sem in (CLEVR, STRICT):
        opt = Options(semantics=sem, templates_per_image=90)
        with torch.inference_mode():
            book = Bookkeeping(templates)
            accepted, rows = choose_block(templates, batch, np.arange(40), book, opt)
        want = [(b, t, m, int(rows[t].ans[b, m]), {p: int(v[b, m]) for p, v in rows[t].params.items()})
                for b, t, m in accepted]
        ab, at, am, aa, ap, _ = accept_block(plan, batch, np.arange(40), Book(len(templates)), opt)
        got = [(int(ab[i]), int(at[i]), int(am[i]), int(aa[i]),
                {p: int(v) for p, v in zip(param_order(templates[at[i]]), ap[i])}) for i in range(len(ab))]
        assert len(want) > 2000 and got == want


@pytest.mark.parametrize("json_out", [True, None], ids=["questions-json", "parquet"])
def test_compiled_columns_convert_to_the_grids_columns(store, json_out):
    """Processes of one run may mix engines (one falls back to the grid under --engine auto): the
    compiled columns, converted, equal the grid's, as the writers take them."""
    import orjson

    from tensorqa.clevr.generate import _as_columns, _shard_questions

    def parquet_answer(x):
        return ("yes" if x else "no") if isinstance(x, bool) else str(x)

    got = _as_columns(_shard_questions(store, None, None, Options(engine="compiled"), 1, 0, None, json_out)[0],
                      None, None)
    want = _shard_questions(store, None, None, Options(engine="torch"), 1, 0, None, json_out)[0]
    for col, values in want.items():
        a, b = list(got[col]), list(values)
        if col == "answer" and json_out is None:
            a, b = [parquet_answer(x) for x in a], [parquet_answer(x) for x in b]
        if col == "program" and json_out:
            b = [x if isinstance(x, str) else orjson.dumps(x).decode() for x in b]
        assert a == b, col
