"""``tensorqa ablate``: the answers that change when a reasoning step is removed, checked against
the scalar reference executor running the programs with the step replaced, and against the pool
that ``generate`` writes for the same store (the same questions)."""

import pytest
import torch
from helpers import run_tensorqa

from tensorqa import TensorQAError
from tensorqa.ablation import ablate_store, parse_ablation
from tensorqa.agqa import generate
from tensorqa.agqa.grid import GridContext, evaluate
from tensorqa.scenes.pack import pack_default
from tensorqa.engine.scalar import Undefined
from tensorqa.agqa.executor import run_program
from tensorqa.scenes.store import open_store
from tensorqa.agqa.templates import TEMPLATES
from tensorqa.writers import read_pool

REFERENCE_COLUMNS = ("object_ref", "object2_ref", "action_ref", "action2_ref", "window_action_ref", "window_action2_ref")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return pack_default(tmp_path_factory.mktemp("abl") / "s.h5", videos=10, seed=3, progress=False)


@pytest.fixture(scope="module")
def direct_rows(tmp_path_factory, store):
    """The pool's questions without object or action references: the cells ablate counts."""
    out = tmp_path_factory.mktemp("ablpool")
    generate(store, out, batch_videos=4, progress=False)
    rows = read_pool(out).to_pylist()
    return [r for r in rows if not any(r[c] for c in REFERENCE_COLUMNS)]


def _by_template(report):
    return {r["template"]: r for r in report["templates"]}


def test_before_as_while_agrees_with_the_reference_executor(store, direct_rows):
    # Independent count: every direct "before X" question of the pool, its program run by the scalar
    # executor with Localize(before, X) read as Localize(while, X); the answers that differ from the
    # pool's are the ones the ablation changes. actWhatAfterAll / actWhatBefore are left out: their
    # rule is picked by the word the question says, which an ablation keeps (only the frames change).
    report = ablate_store(store, ["before=while"], batch_videos=4, progress=False)
    rows = _by_template(report)
    with open_store(store) as s:
        scenes = {v: s.scene(v) for v in {r["video_id"] for r in direct_rows}}
    checked = []
    for template, got in rows.items():
        before = [r for r in direct_rows if r["template"] == template and r["window"] == "before"]
        if template in ("actWhatAfterAll", "actWhatBefore") or not before:
            continue
        answers = [run_program(r["program"].replace("Localize(before,", "Localize(while,"), scenes[r["video_id"]])
                   for r in before]
        answered = [(r, a) for r, a in zip(before, answers) if not isinstance(a, Undefined)]
        assert got["with_step"] == len(before), template
        assert got["answered"] == len(answered), template
        assert got["changed"] == sum(a != r["answer"] for r, a in answered), template
        assert got["other_changed"] == 0, template
        if got["answer_kind"] == "yes/no":
            assert got["yes_before"] == sum(r["answer"] == "yes" for r in before)
            assert got["yes_after"] == sum(a == "yes" for _, a in answered)
        checked.append(template)
    assert {"objExists", "relExists", "objRelExists", "andObjRelExists", "objWhat", "objWhatChoose"} <= set(checked)
    # all direct questions are counted, and some answers do change
    assert sum(r["questions"] for r in rows.values()) == len(direct_rows)
    assert report["total"]["changed"] > 0


def test_first_as_last_agrees_with_the_reference_executor(store):
    # objFirst with first_episode ablated into last_episode answers what objLast's program answers
    # for the same window and relation (scalar executor), wherever that is defined.
    from tensorqa.agqa.validity import rule_cells

    report = ablate_store(store, ["first_episode=last_episode"], templates=["objFirst"], batch_videos=16,
                          progress=False)
    with open_store(store) as s:
        batch = s.batch(0, len(s))
        counts = torch.tensor(s.meta["rel_obj_keyframes"])
        ctx = GridContext(batch)
        first = evaluate("objFirst", batch, context=ctx)
        last = evaluate("objLast", batch, context=ctx)
        keep, _, _ = rule_cells(TEMPLATES["objFirst"].program, first, ctx, counts, TEMPLATES["objFirst"].windows)
        cells = keep.nonzero().tolist()
        answered = changed = 0
        for cell in cells:
            got = run_program(last.program(tuple(cell)), s.scene(first.video_id(tuple(cell))))
            if isinstance(got, Undefined):
                continue
            answered += 1
            changed += got != first.english(tuple(cell))
    row = _by_template(report)["objFirst"]
    assert (row["questions"], row["with_step"]) == (len(cells), len(cells))
    assert (row["answered"], row["changed"]) == (answered, changed)
    assert changed > 0


def test_a_name_ablated_into_itself_changes_nothing(store):
    report = ablate_store(store, ["before=before", "relate=relate"], progress=False)
    total = report["total"]
    assert total["questions"] > 0 and total["with_step"] > 0
    assert total["answered"] == total["with_step"] and total["changed"] == 0 and total["other_changed"] == 0


def test_counts_do_not_depend_on_the_block_size(store):
    small = ablate_store(store, ["after=before", "and=xor"], batch_videos=3, progress=False)
    large = ablate_store(store, ["after=before", "and=xor"], batch_videos=16, progress=False)
    assert small["templates"] == large["templates"] and small["total"] == large["total"]
    assert small["total"]["changed"] > 0 and small["total"]["other_changed"] == 0


def test_a_primitive_step_is_taken_by_the_templates_that_call_it(store):
    rows = _by_template(ablate_store(store, ["and=xor"], templates=["andObjRelExists", "xorObjRelExists"],
                                     progress=False))
    assert rows["andObjRelExists"]["with_step"] == rows["andObjRelExists"]["questions"] > 0
    assert rows["andObjRelExists"]["changed"] > 0
    assert rows["xorObjRelExists"]["with_step"] == 0 and rows["xorObjRelExists"]["other_changed"] == 0


def test_bad_ablations_are_one_line_errors():
    for text, message in [("before", "expected NAME=REPLACEMENT"), ("before=", "expected NAME=REPLACEMENT"),
                          ("foo=while", "'foo'"), ("before=between", "needs a second action"),
                          ("before=relate", "temporal words")]:
        with pytest.raises(TensorQAError, match=message):
            parse_ablation(text)


def test_cli_ablate(store, tmp_path, capsys):
    from tensorqa.cli import main

    out = tmp_path / "report.json"
    ok = run_tensorqa("ablate", store, "--ablate", "before=while", "--templates", "relExists", "--quiet", "--out", out)
    assert ok.returncode == 0, ok.stderr
    assert "relExists" in ok.stdout and "changed %" in ok.stdout and out.exists()
    bad = run_tensorqa("ablate", store, "--quiet", "--ablate", "relate=contacted")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("tensorqa: error: ") and "cannot run with it" in bad.stderr
    capsys.readouterr()
    for args, message in [([str(store), "--ablate", "before"], "expected NAME=REPLACEMENT"),
                          ([str(store), "--ablate", "present_objects=present_relations"], "objRelExists"),
                          ([str(store), "--ablate", "before=while", "--batch-videos", "0"], "--batch-videos"),
                          ([str(tmp_path / "none.h5"), "--ablate", "before=while"], "none.h5"),
                          ([str(store), "--ablate", "before=while", "--out", str(tmp_path / "no" / "r.json")],
                           "folder does not exist")]:
        assert main(["ablate", "--quiet", *args]) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("tensorqa: error: ") and message in err, (args, err)
    # a run that fails leaves no questions file, not even a partial one
    assert main(["ablate", "--quiet", str(store), "--ablate", "relate=contacted", "--questions", str(tmp_path / "q.parquet")]) == 2
    assert not list(tmp_path.glob("q.parquet*"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("kernels", ["auto", "on"])
def test_cuda_ablation_counts_equal_the_cpu_counts(store, kernels):
    ablations = ["before=while", "first_episode=last_episode"]
    cpu = ablate_store(store, ablations, progress=False)
    gpu = ablate_store(store, ablations, device="cuda", kernels=kernels, batch_videos=7, progress=False)
    assert gpu["templates"] == cpu["templates"] and gpu["total"] == cpu["total"]


def test_kernel_path_counts_equal_the_torch_path_counts(store, monkeypatch):
    # every kernel (first_episode's among them, under first_episode=last_episode) run by Triton's
    # interpreter on the CPU gives the torch path's counts
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    ablations = ["before=while", "first_episode=last_episode"]
    torch_path = ablate_store(store, ablations, max_videos=6, kernels="off", progress=False)
    kernel_path = ablate_store(store, ablations, max_videos=6, kernels="on", progress=False)
    assert kernel_path["templates"] == torch_path["templates"] and torch_path["total"]["changed"] > 0


def test_before_as_video_agrees_with_the_reference_executor(store, direct_rows):
    # before=video removes the localization: the scalar executor answers the program with
    # Localize(before, X) replaced by the whole video (actWhat*: see the before=while test)
    import re

    rows = _by_template(ablate_store(store, ["before=video"], batch_videos=5, progress=False))
    with open_store(store) as s:
        scenes = {v: s.scene(v) for v in {r["video_id"] for r in direct_rows}}
    changed = 0
    for template, got in rows.items():
        before = [r for r in direct_rows if r["template"] == template and r["window"] == "before"]
        if template in ("actWhatAfterAll", "actWhatBefore") or not before:
            continue
        whole = [run_program(re.sub(r"Localize\(before, [^()]*\)", "video", r["program"]), scenes[r["video_id"]])
                 for r in before]
        answered = [(r, a) for r, a in zip(before, whole) if not isinstance(a, Undefined)]
        assert (got["with_step"], got["answered"]) == (len(before), len(answered)), template
        assert got["changed"] == sum(a != r["answer"] for r, a in answered), template
        changed += got["changed"]
    assert changed > 0


def test_questions_file_matches_the_pool_rows_and_the_reference(store, direct_rows, tmp_path):
    # --questions: one row per question that takes the step, found again among the pool's direct rows
    # by its ingredient columns, with the scalar executor's answer under the ablation
    import pyarrow.parquet as pq
    from tensorqa.ablation import QUESTION_SCHEMA

    path = tmp_path / "q.parquet"
    templates = ("relExists", "objRelExists", "objWhat", "andObjRelExists", "objWhatChoose")
    report = ablate_store(store, ["before=while"], templates=list(templates), batch_videos=4, progress=False,
                          questions=path)
    table = pq.read_table(path)
    assert table.schema.equals(QUESTION_SCHEMA) and not (tmp_path / "q.parquet.partial").exists()
    keys = [n for n in QUESTION_SCHEMA.names if n not in ("answer", "ablated_answer", "changed")]
    pool = {tuple(r[k] for k in keys): r for r in direct_rows
            if r["window"] == "before" and r["template"] in templates}
    got = {tuple(r[k] for k in keys): r for r in table.to_pylist()}
    assert len(got) == table.num_rows == report["total"]["with_step"] and set(got) == set(pool)
    with open_store(store) as s:
        scenes = {v: s.scene(v) for v in {r["video_id"] for r in pool.values()}}
    for key, r in got.items():
        p = pool[key]
        want = run_program(p["program"].replace("Localize(before,", "Localize(while,"), scenes[p["video_id"]])
        assert r["answer"] == p["answer"]
        assert r["ablated_answer"] == (None if isinstance(want, Undefined) else want), (p["program"], r)
        assert r["changed"] == (r["ablated_answer"] is not None and r["ablated_answer"] != r["answer"])
    assert sum(r["changed"] for r in got.values()) == report["total"]["changed"] > 0
