"""Generation from CLEVR's 9 real template files: every question re-executed by the scalar
executor (from its program JSON, on the scene JSON it came from) gives its answer; none is
degenerate by CLEVR's rule; answers are balanced per template as CLEVR's rule says; the output
does not depend on the block size or the shard count."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from tensorqa.clevr.templates import DEFAULT_SYNONYMS, DEFAULT_TEMPLATES_DIR

from tensorqa.clevr import run_program
from clevr.oracle import generate_scenes, is_degenerate  # tests/ is on sys.path (conftest)
from tensorqa.clevr.generate import Options, generate_store
from tensorqa.clevr.options import rejected
from tensorqa.clevr.semantics import STRICT
from tensorqa.clevr.templates import load_synonyms, load_templates
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.loaders.clevr import load_clevr_scenes
from tensorqa.scenes.static_store import StaticStore, write_static_store

TEMPLATES = DEFAULT_TEMPLATES_DIR
SYNONYMS = DEFAULT_SYNONYMS
NUM_SCENES = 40


@pytest.fixture(scope="module")
def scenes_json(tmp_path_factory):
    d = tmp_path_factory.mktemp("clevr")
    scenes = [s.to_json() for s in sample_scenes(NUM_SCENES, seed=11)]
    f = d / "CLEVR_new_scenes.json"
    f.write_text(json.dumps({"info": {"split": "new", "version": "test"}, "scenes": scenes}))
    store = write_static_store(d / "s.h5", load_clevr_scenes(f)[0], info={"split": "new"})
    return scenes, store


@pytest.fixture(scope="module")
def templates():
    return load_templates(TEMPLATES)


@pytest.fixture(scope="module")
def questions(scenes_json, templates):
    # every template is tried on every scene: 90 templates per image
    with StaticStore(scenes_json[1]) as st:
        return generate_scenes(st, templates, load_synonyms(SYNONYMS), Options(templates_per_image=90, batch_scenes=20))


def test_the_nine_real_template_files_load(templates):
    per_file = Counter(t.filename for t in templates)
    assert per_file == {"zero_hop.json": 6, "one_hop.json": 6, "two_hop.json": 6, "three_hop.json": 6,
                        "single_and.json": 5, "single_or.json": 8, "compare_integer.json": 9,
                        "comparison.json": 16, "same_relate.json": 28}
    assert sum(len(t.text) for t in templates) == 425


def test_every_template_generates(questions, templates):
    got = {(q["template_filename"], q["question_family_index"]) for q in questions}
    assert got == {(t.filename, t.index) for t in templates}


def _program(q):
    return [{"type": n["type"], "inputs": n["inputs"], "side_inputs": n["value_inputs"]} for n in q["program"]]


def test_every_question_re_executes_to_its_answer_and_is_not_degenerate(questions, scenes_json):
    scenes = scenes_json[0]
    assert len(questions) > 1000
    for q in questions:
        scene = scenes[q["image_index"]]
        assert scene["image_filename"] == q["image_filename"]
        prog = _program(q)
        assert run_program(prog, scene) == q["answer"], q
        if q["template_filename"] == "single_and.json":
            assert not is_degenerate(prog, scene), q
        # the cached outputs (defect 3, kept by default) are the scalar executor's
        assert q["program"][-1]["_output"] == q["answer"]
        assert "<" not in q["question"] and "[" not in q["question"] and "  " not in q["question"]


def test_answers_balanced_per_template_as_clevrs_rule(questions, templates):
    """Replay each template's accepted answers in order: each passed CLEVR's rejection test
    against the histogram of the same reset window at its time."""
    from tensorqa.clevr.templates import answer_domain

    dom = {(t.filename, t.index): answer_domain(t)[1] for t in templates}
    hist: dict = {}
    window = None
    for q in questions:
        if q["image_index"] // 250 != window:
            window, hist = q["image_index"] // 250, {}
        key = (q["template_filename"], q["question_family_index"])
        h = hist.setdefault(key, np.zeros(len(dom[key]), np.int64))
        a = dom[key].index(q["answer"])
        assert not rejected(h, a), (key, h, a)
        h[a] += 1
    fam0 = [q["answer"] for q in questions if q["template_filename"] == "compare_integer.json" and q["question_family_index"] == 0]
    assert set(fam0) == {False}  # defect 4: compare_integer#0 can only answer False, so once per window
    assert len(fam0) == 1


def test_same_output_whatever_the_block_size_or_shards(scenes_json, templates, tmp_path):
    syn = load_synonyms(SYNONYMS)
    opt = dict(reset_counts_every=10)
    with StaticStore(scenes_json[1]) as st:
        a = generate_scenes(st, templates, syn, Options(batch_scenes=40, **opt))
        b = generate_scenes(st, templates, syn, Options(batch_scenes=7, **opt))
    assert a == b
    one = tmp_path / "q.json"
    generate_store(scenes_json[1], one, TEMPLATES, SYNONYMS, opt=Options(batch_scenes=40, **opt))
    parts = []
    for k in range(2):
        generate_store(scenes_json[1], tmp_path / "p.json", TEMPLATES, SYNONYMS, num_shards=2, shard_index=k,
                       opt=Options(batch_scenes=40, **opt))
        parts += json.loads((tmp_path / f"p-{k:05d}-of-00002.json").read_text())["questions"]
    whole = json.loads(one.read_text())
    strip = lambda qs: [{k: v for k, v in q.items() if k != "question_index"} for q in qs]  # noqa: E731
    assert strip(parts) == strip(whole["questions"])
    assert set(whole["questions"][0]) >= {"question", "answer", "program", "template_filename", "question_family_index",
                                          "image_index", "image_filename", "split"}
    assert whole["info"]["split"] == "new"


def test_strict_semantics_fixes_compare_integer_0(scenes_json, templates):
    fam = [t for t in templates if t.filename == "compare_integer.json" and t.index == 0]
    with StaticStore(scenes_json[1]) as st:
        qs = generate_scenes(st, fam, {}, Options(semantics=STRICT, batch_scenes=40), with_output=False)
    assert True in {q["answer"] for q in qs}
    assert all("_output" not in n for q in qs for n in q["program"])


def test_program_text_is_the_expanded_program(scenes_json, templates, questions):
    """The writers' JSON text (a skeleton per template and set of specified parameters, words in
    its slots) spells the same program as the node-by-node expansion, for every question."""
    with StaticStore(scenes_json[1]) as st:
        qs = generate_scenes(st, templates, load_synonyms(SYNONYMS), Options(templates_per_image=90, batch_scenes=20),
                             with_output=False, program_text=True)
    assert len(qs) == len(questions)
    for q, ref in zip(qs, questions):
        assert isinstance(q["program"], str)
        assert json.loads(q["program"]) == [{k: v for k, v in n.items() if k != "_output"} for n in ref["program"]]
        assert {k: v for k, v in q.items() if k != "program"} == {k: v for k, v in ref.items() if k != "program"}


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_cuda_questions_equal_cpu(scenes_json, templates):
    """The same questions whatever the device (draws hash scene positions, not device streams)."""
    syn = load_synonyms(SYNONYMS)
    with StaticStore(scenes_json[1]) as st:
        cpu = generate_scenes(st, templates, syn, Options(batch_scenes=40))
        gpu = generate_scenes(st, templates, syn, Options(batch_scenes=40, device="cuda"))
    assert gpu == cpu


def test_draw_rounds_are_the_first_draws_of_one_long_round(scenes_json, templates, monkeypatch):
    """Rounds of draws (4, 4, 8) give each scene the same rows as its first draws of one round of 16,
    and a scene stops early only once it has ``valid_draws`` valid rows."""
    import tensorqa.clevr.torch_backend as gen
    from tensorqa.clevr.scene_block import SceneTables

    with StaticStore(scenes_json[1]) as st:
        batch = st.batch(0, NUM_SCENES)
    pos, opt = np.arange(NUM_SCENES), Options(draws=16)
    tables = SceneTables.of(batch)
    for tid in (0, 40, 62, 80):  # compare_integer#0, same_relate#9, single_and#3 (sparse), two_hop#2
        t = templates[tid]
        rounds = gen.TemplateRows(NUM_SCENES, 16)
        rounds.fill(t, tid, batch, pos, pos.copy(), opt, tables)
        monkeypatch.setattr(gen, "ROUNDS", (16,))
        whole = gen.TemplateRows(NUM_SCENES, 16)
        whole.fill(t, tid, batch, pos, pos.copy(), opt, tables)
        monkeypatch.undo()
        for b in range(NUM_SCENES):
            n = next((e for e in (4, 8, 16) if whole.ok[b, :e].sum() >= opt.valid_draws), 16)
            assert (rounds.ok[b, :n] == whole.ok[b, :n]).all() and not rounds.ok[b, n:].any(), (t.key, b)
            valid = whole.ok[b, :n]
            assert (rounds.ans[b, :n][valid] == whole.ans[b, :n][valid]).all()
