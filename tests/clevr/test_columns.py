"""The columnar records (``tensorqa.clevr.columns``, what ``generate_store`` writes) equal the
per-question records (``generate_scenes``: ``param_words``, ``text.render``, ``program_json`` one
question at a time), field for field, on every template of CLEVR 1.0 over sampled scenes, for both
readings of CLEVR's text defect (other_heuristic)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from tensorqa.clevr.templates import DEFAULT_SYNONYMS, DEFAULT_TEMPLATES_DIR

from tensorqa.clevr import columns
from clevr.oracle import generate_scenes  # tests/ is on sys.path (conftest)
from tensorqa.clevr.generate import Options, generate_store
from tensorqa.clevr.torch_backend import generate_columns
from tensorqa.clevr.semantics import CLEVR, STRICT
from tensorqa.clevr.templates import load_synonyms, load_templates
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_store import StaticStore, write_static_store

TEMPLATES = DEFAULT_TEMPLATES_DIR
SYNONYMS = DEFAULT_SYNONYMS


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_static_store(tmp_path_factory.mktemp("cols") / "s.h5", sample_scenes(60, seed=3))


@pytest.mark.parametrize("sem", [CLEVR, STRICT], ids=["clevr", "strict"])
def test_columns_equal_the_per_question_records(store, sem):
    templates, syn = load_templates(TEMPLATES), load_synonyms(SYNONYMS)
    opt = Options(templates_per_image=90, batch_scenes=25, semantics=sem, seed=4)
    with StaticStore(store) as st:
        ref = generate_scenes(st, templates, syn, opt, with_output=False, program_text=True)
        cols = generate_columns(st, templates, syn, opt)
    got = columns.as_dicts(cols)
    assert len(got) == len(ref) > 3000
    assert {q["template_filename"] + str(q["question_family_index"]) for q in got} == \
        {t.filename + str(t.index) for t in templates}
    for a, b in zip(got, ref):
        assert a == {c: b[c] for c in columns.COLUMNS}
    # the text choices are exercised: synonyms, both fates of optional parts, the other heuristic
    texts = " ".join(q["question"] for q in got)
    assert " ball" in texts and " sphere" in texts and " big " in texts
    always_other = {t.filename + str(t.index) for t in templates if all(" other " in v or " another " in v for v in t.text)}
    dropped = [q for q in got if q["template_filename"] + str(q["question_family_index"]) in always_other
               and " other " not in q["question"] and " another " not in q["question"]]
    assert dropped  # other_heuristic removed "other" somewhere


def test_columns_with_output_equal_the_scalar_outputs(store):
    """With ``_output`` (defect 3, CLEVR's default): every node's output rebuilt from the grid equals
    the scalar executor's run of the question's program on its scene."""
    templates, syn = load_templates(TEMPLATES), load_synonyms(SYNONYMS)
    opt = Options(templates_per_image=90, batch_scenes=25)
    with StaticStore(store) as st:
        ref = generate_scenes(st, templates, syn, opt, with_output=True)
        got = columns.as_dicts(generate_columns(st, templates, syn, opt, with_output=True))
    assert len(got) == len(ref) > 3000
    for a, b in zip(got, ref):
        assert a == {c: b[c] for c in columns.COLUMNS}


def test_store_outputs_are_the_columns(store, tmp_path):
    """generate_store writes the columns: Parquet and the questions JSON (no _output) agree."""
    opt = Options(batch_scenes=25, semantics=STRICT)  # strict: no _output, both formats from the columns
    generate_store(store, tmp_path / "pool", TEMPLATES, SYNONYMS, fmt="parquet", opt=opt)
    generate_store(store, tmp_path / "q.json", TEMPLATES, SYNONYMS, fmt="clevr-json", opt=opt)
    table = pq.read_table(next((tmp_path / "pool" / "data").glob("*.parquet"))).to_pylist()
    qs = json.loads((tmp_path / "q.json").read_text())["questions"]
    assert len(table) == len(qs) == 600
    for row, q in zip(table, qs):
        assert row["question_index"] == q["question_index"] and row["question"] == q["question"]
        assert json.loads(row["program"]) == q["program"]
        assert row["answer"] == (("yes" if q["answer"] else "no") if isinstance(q["answer"], bool) else str(q["answer"]))
