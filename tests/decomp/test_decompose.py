"""tensorqa decompose: a hand-worked video, the ground truth of a generated pool against every
consistency rule of the official evaluation, the output layout, restart, and bad input."""

import importlib
import json
import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers import make_scene

from tensorqa import TensorQAError, write_store
from tensorqa.cli import main
from tensorqa.decomp import decompose, decompose_video, evaluate_predictions, ground_truth_predictions, load_hierarchies
from tensorqa.decomp.constants import CONSISTENCY_RULES
from tensorqa.decomp.decompose import POOL_COLUMNS, consistency_violations
from tensorqa.decomp.subquestions import from_program
from tensorqa.agqa import generate
from tensorqa.scenes.pack import pack_default
from tensorqa.agqa.program import parse_program
from tensorqa.agqa.executor import run_program
from tensorqa.scenes.store import open_store
from tensorqa.agqa.balancing.balance import balance_pool
from tensorqa.agqa.splits import split_pool
from tensorqa.writers import pool_store, read_pool

decomp_module = importlib.import_module("tensorqa.decomp.decompose")  # the package exports the function of that name
video_module = importlib.import_module("tensorqa.decomp.video")

# -- the hand-worked video ---------------------------------------------------------------------------
# Keyframes f0..f5 at 1..6 s. The person holds a cup at f0, f1 and f5 and a phone at f3.
# A = "sitting in a chair" (c059) runs 1-2 s: keyframes f0, f1.
# B = "watching a picture" (c088) runs 5-6 s: keyframes f4, f5.
# Windows: before B = f0..f4 (B's first keyframe included); after A = f2..f5; after B = nothing
# (B ends the video: not offered); while B = f4, f5; between A and B = f2, f3.
A, B = "sitting in a chair", "watching a picture"
FIRST_HELD = ("Query(class, OnlyItem(IterateUntil(forward, video, Exists(holding, Filter(frame, [relations])), "
              "Filter(frame, [relations, holding, objects]))))")


def hand_scene(video_id="V1"):
    return make_scene(
        video_id, [(10, 1.0), (20, 2.0), (30, 3.0), (40, 4.0), (50, 5.0), (60, 6.0)],
        relations=[(0, "cup", "holding"), (1, "cup", "holding"), (3, "phone", "holding"), (5, "cup", "holding")],
        actions=[(A, 1.0, 2.0), (B, 5.0, 6.0)], split="test")


def q(qid, template, question, program, answer, video="V1"):
    return {"question_id": f"{video}-{qid}", "video_id": video, "split": "test", "template": template,
            "question": question, "program": program, "answer": answer}


HAND = [
    # holding a cup in f0..f4: at f0
    q(0, "objRelExists", "Were they holding a cup before watching a picture?",
      f"Exists(cup, Iterate(Localize(before, {B}), Filter(frame, [relations, holding, objects])))", "yes"),
    # a cup (f0) and a phone (f3) are both held, so "a cup but not a phone" is no
    q(1, "xorObjRelExists", "Were they holding a cup but not a phone?",
      "XOR(Exists(cup, Iterate(video, Filter(frame, [relation, holding, objects]))), "
      "Exists(phone, Iterate(video, Filter(frame, [relation, holding, objects]))))", "no"),
    # the first holding stretch starts at f0 and stops at f2 (no holding there): its objects are {cup}
    q(2, "objFirstVerify", "Was a phone the first thing they were holding?",
      "Equals(phone, OnlyItem(IterateUntil(forward, video, Exists(holding, Filter(frame, [relations])), "
      "Filter(frame, [relations, holding, objects]))))", "no"),
    # the first keyframe holding the cup or the phone is f0, with the cup; its stretch f0..f2 has no phone
    q(3, "objFirstChoose", "Which object were they holding first, a cup or a phone?",
      "Choose(cup, phone, IterateUntil(forward, video, XOR(Exists(cup, Filter(frame, [relations, holding, objects])), "
      "Exists(phone, Filter(frame, [relations, holding, objects]))), Filter(frame, [relations, holding, objects])))",
      "cup"),
    # A (f0, f1) lies entirely before B (f4, f5)
    q(4, "actTime", "Was the person sitting in a chair before or after watching a picture?",
      f"Compare([before, after], Exists({A}, Iterate(Localize(temporal tag, {B}), Filter(frame, [actions]))))", "before"),
    # between A and B (f2, f3) the phone is held at f3
    q(5, "relExists", "Were they holding something between sitting in a chair and watching a picture?",
      f"Exists(holding, Iterate(Localize(between, [{A}, {B}]), Filter(frame, [relations])))", "yes"),
    # the cup is held before A ends (f0) and after B starts (f5), never in f2, f3
    q(6, "objRelExists", "Were they holding a cup between sitting in a chair and watching a picture?",
      f"Exists(cup, Iterate(Localize(between, [{A}, {B}]), Filter(frame, [relations, holding, objects])))", "no"),
    # holding happens (f0): a question of the pool that is also a sub-question of questions 0, 5, 7
    q(7, "relExists", "Were they holding something?", "Exists(holding, Iterate(video, Filter(frame, [relations])))", "yes"),
    # "the first thing they held" is the cup (see question 2), held while A (f0, f1)
    q(8, "objRelExists", "Were they holding the first thing they were holding while sitting in a chair?",
      f"Exists({FIRST_HELD}, Iterate(Localize(while, {A}), Filter(frame, [relations, holding, objects])))", "yes"),
]


def nodes_of(result, key):
    """{text: (type, answer)} and {text: {rule: [child texts]}} of one question's DAG."""
    h = result.hierarchies[key]
    return {t: (i["type"], i["answer"]) for t, i in h["subquestion"].items()}, h["hierarchy"]


@pytest.fixture(scope="module")
def hand():
    return decompose_video("V1", HAND, hand_scene())


def test_hand_worked_localized_interaction(hand):
    nodes, hier = nodes_of(hand, "V1-0")
    # before B (f0..f4): cup held at f0, so every necessary condition is yes as well
    assert nodes == {
        "Were they holding a cup before watching a picture?": ("Interaction Before", "yes"),
        "Does a cup exist in the video?": ("Object Exists", "yes"),
        "Were they holding something before watching a picture?": ("Exists Before", "yes"),
        "Were they holding a cup?": ("Interaction", "yes"),
        "Were they watching a picture?": ("Interaction", "yes"),
        "Were they holding something?": ("Relation Exists", "yes"),  # the pool's question 7, its own text
    }
    assert hier["Were they holding a cup before watching a picture?"] == {
        "Interaction": ["Does a cup exist in the video?", "Were they holding something before watching a picture?"],
        "Before": ["Were they holding a cup?", "Were they watching a picture?"]}
    assert hier["Were they holding a cup?"] == {"Interaction": ["Does a cup exist in the video?", "Were they holding something?"]}
    assert hier["Were they holding something before watching a picture?"] == {
        "Before": ["Were they holding something?", "Were they watching a picture?"]}
    keys = {t: i["key"] for t, i in hand.hierarchies["V1-0"]["subquestion"].items()}
    assert keys["Were they holding something?"] == "V1-7"  # a sub-question of the pool keeps its question id
    assert keys["Were they holding a cup before watching a picture?"] == "V1-0"
    assert all(re.fullmatch(r"V1-d\d+", k) for t, k in keys.items() if t not in (
        "Were they holding something?", "Were they holding a cup before watching a picture?"))


def test_hand_worked_logic_equals_and_choose(hand):
    nodes, hier = nodes_of(hand, "V1-1")
    # cup held (f0) and phone held (f3): "cup but not phone" is no
    assert hier["Were they holding a cup but not a phone?"] == {"Xor": ["Were they holding a cup?", "Were they holding a phone?"]}
    assert nodes["Were they holding a phone?"] == ("Interaction", "yes")

    nodes, hier = nodes_of(hand, "V1-2")
    # Equals [does the phone exist (yes), what was held first (cup)]; the stretch f0..f2 lists {cup}
    assert hier["Was a phone the first thing they were holding?"] == {
        "Equals": ["Does a phone exist in the video?", "What were they holding first?"]}
    assert nodes["What were they holding first?"] == ("First Object", "cup")
    assert hier["What were they holding first?"] == {"First": ["What were all the things they were holding?"]}
    assert nodes["What were all the things they were holding?"] == ("Object", ["cup", "phone"])

    nodes, hier = nodes_of(hand, "V1-3")
    # the two Equals questions: cup first (yes), phone first (no: the pool's question 2, with its text)
    assert hier["Which object were they holding first, a cup or a phone?"] == {
        "Choose": ["Were they holding a cup first?", "Was a phone the first thing they were holding?"]}
    assert nodes["Were they holding a cup first?"] == ("Object Equals", "yes")
    assert nodes["Was a phone the first thing they were holding?"] == ("Object Equals", "no")


def test_hand_worked_compare_falls_back_when_a_side_is_not_offered(hand):
    nodes, hier = nodes_of(hand, "V1-4")
    # "after watching a picture" does not exist (B ends the video), so the Choose uses before B (yes:
    # A at f0) and while B (no: A is not at f4, f5)
    assert hier["Was the person sitting in a chair before or after watching a picture?"] == {
        "Choose": ["Were they sitting in a chair before watching a picture?",
                   "Were they sitting in a chair while watching a picture?"]}
    assert nodes["Were they sitting in a chair before watching a picture?"] == ("Interaction Before", "yes")
    assert nodes["Were they sitting in a chair while watching a picture?"] == ("Interaction While", "no")
    assert hand.stats["fallbacks"] == {"Choose|children 2": 1}


def test_hand_worked_between(hand):
    nodes, hier = nodes_of(hand, "V1-5")
    # after A (f2..f5: phone at f3) yes, before B (f0..f4) yes, and between (f2, f3) yes: exact
    assert hier["Were they holding something between sitting in a chair and watching a picture?"] == {
        "Between": ["Were they holding something after sitting in a chair?",
                    "Were they holding something before watching a picture?"]}
    nodes, hier = nodes_of(hand, "V1-6")
    # the cup after A (f5) yes and before B (f0) yes, but not between (f2, f3): "after and before" is
    # not "between" here, so that composition is left out; the Interaction one stays
    assert hier["Were they holding a cup between sitting in a chair and watching a picture?"] == {
        "Interaction": ["Does a cup exist in the video?",
                        "Were they holding something between sitting in a chair and watching a picture?"]}
    assert nodes["Were they holding something between sitting in a chair and watching a picture?"] == ("Exists Between", "yes")
    assert hand.stats["dropped"] == {"Between|inconsistent": 1}


def test_hand_worked_reference_and_isolated(hand):
    nodes, hier = nodes_of(hand, "V1-8")
    main = "Were they holding the first thing they were holding while sitting in a chair?"
    assert hier[main] == {
        "Interaction": ["What were they holding first?", "Were they holding something while sitting in a chair?"],
        "While": ["Were they holding the object they were holding first?", "Were they sitting in a chair?"]}
    assert nodes["Were they holding the object they were holding first?"] == ("Interaction", "yes")
    # relExists over the video has no composition: isolated, not a DAG
    assert "V1-7" not in hand.hierarchies
    assert [i["key"] for i in hand.isolated] == ["V1-7"]
    assert len(hand.dags) == len(HAND) and sum(d["isolated"] for d in hand.dags) == 1


def test_wrong_answer_in_the_pool_is_reported():
    bad = [dict(HAND[0], answer="no")]
    with pytest.raises(TensorQAError, match="V1-0.*'no' in the pool but 'yes'"):
        decompose_video("V1", bad, hand_scene())


def test_consistency_rules_agree_with_the_evaluation(tmp_path, monkeypatch):
    # keep every composition, the inexact Between of question 6 included: the official checks (metrics)
    # must then flag exactly what consistency_violations flags
    assert consistency_violations("Interaction Between", "Between", "no",
                                  [("Interaction After", "yes", "", True), ("Interaction Before", "yes", "", True)]) \
        == ["Between Yes", "Between No"]
    monkeypatch.setattr(video_module, "consistency_violations", lambda *a, **k: [])
    res = decompose_video("V1", HAND, hand_scene())
    (tmp_path / "V1.json").write_text(json.dumps(res.hierarchies))
    h = load_hierarchies(tmp_path)
    s = evaluate_predictions(h, ground_truth_predictions(h))
    wrong = {r: n for r, n in s["counts"]["ic"]["wrong"].items() if n}
    assert wrong == {"Between Yes": 1, "Between No": 1}


# -- a generated pool -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A generated pool of 6 videos thinned to at most 40 questions per video and template (spread
    over each group), enough for every consistency rule to be checked; it records its store as
    ``tensorqa generate`` does."""
    root = tmp_path_factory.mktemp("decompose")
    store = pack_default(root / "s.h5", videos=6, seed=5, progress=False)
    generate(store, root / "full", batch_videos=6, progress=False)
    table = read_pool(root / "full")
    groups = {}
    for i, (v, t) in enumerate(zip(table["video_id"].to_pylist(), table["template"].to_pylist())):
        groups.setdefault((v, t), []).append(i)
    keep = sorted(i for rows in groups.values() for i in rows[::max(1, len(rows) // 40)][:40])
    table = table.take(pa.array(keep))
    (root / "pool/data").mkdir(parents=True)
    for split in ("train", "test"):
        pq.write_table(table.filter(pc.equal(table["split"], split)),
                       root / f"pool/data/{split}-00000-of-00001.parquet")
    (root / "pool/data/.done-00000-of-00001.json").write_text(json.dumps({"store": str(store)}))
    report = decompose(root / "pool", root / "dags", progress=False)  # the store the pool records
    return root, store, report


def test_ground_truth_satisfies_every_consistency_rule(generated):
    root, _, report = generated
    h = load_hierarchies(root / "dags")
    assert h.num_hierarchies == report["dags"] > 1500
    s = evaluate_predictions(h, ground_truth_predictions(h))
    assert s["accuracy"]["Overall"] == 100.0
    assert all(v in (100.0, None) for v in s["accuracy"].values())
    fired, wrong = s["counts"]["ic"]["fired"], s["counts"]["ic"]["wrong"]
    assert not any(wrong.values()), wrong
    assert all(fired[r] > 0 for r in CONSISTENCY_RULES), fired  # every rule was checked, and held
    assert s["ic"]["by_composition"]["Overall"] == 100.0
    assert s["coverage"]["missing"] == 0


def test_answers_are_the_programs_answers(generated):
    # every AGQA-syntax sub-question, re-run by the public executor, gives its recorded answer
    root, store, _ = generated
    nodes = pq.read_table(root / "dags/parquet/nodes.parquet").to_pylist()
    with open_store(store) as s:
        scenes = {v: s.scene(v) for v in {n["video_id"] for n in nodes}}
    checked = 0
    for n in nodes[::3]:
        if n["program"].startswith(("objExists(", "Iterate(")):
            continue  # presence and collections: not AGQA syntax
        assert run_program(n["program"], scenes[n["video_id"]]) == n["answer"], n
        checked += 1
    assert checked > 300


def test_output_layout_and_tables_agree(generated):
    root, _, report = generated
    out = root / "dags"
    assert not (root / "dags.partial").exists()
    nodes = pq.read_table(out / "parquet/nodes.parquet").to_pylist()
    edges = pq.read_table(out / "parquet/edges.parquet").to_pylist()
    dags = pq.read_table(out / "parquet/dags.parquet").to_pylist()
    isolated = json.loads((out / "hierarchies/isolated.json").read_text())
    pool = read_pool(root / "pool", columns=POOL_COLUMNS).to_pylist()
    videos = list(dict.fromkeys(r["video_id"] for r in pool))
    assert report["questions"] == len(dags) == len(pool) and report["videos"] == len(videos) == 6
    assert report["dags"] + report["isolated"] == report["questions"] and len(isolated) == report["isolated"]
    assert sorted(p.stem for p in (out / "hierarchies").glob("*.json") if p.name != "isolated.json") == sorted(videos)
    # one node per (video, key), one text per (video, key), every edge between known nodes
    by_key = {(n["video_id"], n["key"]): n for n in nodes}
    assert len(by_key) == len(nodes) == report["distinct_subquestions"]
    assert len({(n["video_id"], n["text"]) for n in nodes}) == len(nodes)
    assert all((e["video_id"], e["parent_key"]) in by_key and (e["video_id"], e["child_key"]) in by_key for e in edges)
    # the JSON files say the same: every sub-question of a file is a node with that key, type and answer
    for v in videos:
        for main_key, dag in json.loads((out / f"hierarchies/{v}.json").read_text()).items():
            assert next(iter(dag["subquestion"].values()))["key"] == main_key  # the question comes first
            for text, info in dag["subquestion"].items():
                n = by_key[(v, info["key"])]
                assert (n["text"], n["type"], n["program"]) == (text, info["type"], info["program"])
                assert n["answer"] == (json.dumps(info["answer"]) if isinstance(info["answer"], list) else info["answer"])
    # sub-question programs print like their trees
    for n in nodes[::50]:
        if not n["program"].startswith("objExists("):
            assert str(parse_program(n["program"])) == n["program"]


def test_baseline_predicts_every_sub_question(generated, tmp_path, capsys):
    root, _, _ = generated
    assert main(["baseline", "--hierarchies", str(root / "dags"), "--kind", "most-likely",
                 "--out", str(tmp_path / "p.json")]) == 0
    assert main(["evaluate", "--hierarchies", str(root / "dags"), "--predictions", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr().out
    assert "Overall" in out and "have no prediction" not in out  # a prediction for every key


# -- the command: restart and bad input --------------------------------------------------------------------
@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    """A two-video pool of the hand-worked questions and its store (the pool records no store)."""
    root = tmp_path_factory.mktemp("mini")
    store = write_store(root / "s.h5", [hand_scene("V1"), hand_scene("V2")], source="test")
    rows = HAND + [q(i, r["template"], r["question"], r["program"], r["answer"], video="V2") for i, r in enumerate(HAND[:4])]
    (root / "pool/data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema([(c, pa.string()) for c in POOL_COLUMNS])),
                   root / "pool/data/test-00000-of-00001.parquet")
    return root, store


def test_interrupted_run_resumes(mini, tmp_path, monkeypatch):
    root, store = mini
    real = decomp_module.decompose_video

    def fail_on_v2(video_id, *a, **k):
        if video_id == "V2":
            raise KeyboardInterrupt
        return real(video_id, *a, **k)

    monkeypatch.setattr(decomp_module, "decompose_video", fail_on_v2)
    with pytest.raises(KeyboardInterrupt):
        decompose(root / "pool", tmp_path / "out", store=store, progress=False)
    assert not (tmp_path / "out").exists()  # nothing presented as complete
    assert (tmp_path / "out.partial/decompose/parts/V1.json").exists()
    monkeypatch.setattr(decomp_module, "decompose_video", real)
    resumed = decompose(root / "pool", tmp_path / "out", store=store, progress=False)
    fresh = decompose(root / "pool", tmp_path / "fresh", store=store, progress=False)
    for name in ("V1.json", "V2.json", "isolated.json"):
        assert (tmp_path / "out/hierarchies" / name).read_text() == (tmp_path / "fresh/hierarchies" / name).read_text()
    assert resumed["dags"] == fresh["dags"] == 8 + 4 and resumed["isolated"] == 1  # V1: 9 questions, 1 isolated; V2: 4


def test_bad_input_is_one_line(mini, tmp_path, capsys):
    root, store = mini

    def error(*args):
        assert main(["decompose", *map(str, args), "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("tensorqa: error: "), err
        return err[0]

    assert "no such directory" in error(tmp_path / "nope", "--out", tmp_path / "o1", "--store", store)
    assert "nope.h5" in error(root / "pool", "--out", tmp_path / "o2", "--store", tmp_path / "nope.h5")
    assert "--store" in error(root / "pool", "--out", tmp_path / "o3")  # the pool records no store
    other = write_store(tmp_path / "other.h5", [hand_scene("V1")], source="test")
    assert "no video 'V2'" in error(root / "pool", "--out", tmp_path / "o4", "--store", other)
    assert main(["decompose", str(root / "pool"), "--out", str(tmp_path / "o5"), "--store", str(store), "--quiet"]) == 0
    assert "already exists" in error(root / "pool", "--out", tmp_path / "o5", "--store", store)
    assert not (tmp_path / "o4").exists() and not (tmp_path / "o4.partial").exists()


def test_a_split_without_questions_is_an_error_and_so_is_predicting_nothing(mini, tmp_path, capsys):
    root, store = mini  # every question of the pool is a test question
    assert main(["decompose", str(root / "pool"), "--split", "train", "--out", str(tmp_path / "o"),
                 "--store", str(store), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == (f"tensorqa: error: {root / 'pool'}: no questions of split 'train' to decompose "
                   f"(the pool has {len(HAND) + 4} test); choose another --split\n")
    assert not (tmp_path / "o").exists() and not (tmp_path / "o.partial").exists()
    empty = tmp_path / "empty"  # AGQA-Decomp's folder of a split without questions
    empty.mkdir()
    (empty / "isolated.json").write_text("[]")
    assert main(["baseline", "--hierarchies", str(empty), "--kind", "random", "--out", str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err == (f"tensorqa: error: {empty}: no questions to predict "
                                       "(no hierarchy and no isolated question)\n")
    assert main(["decompose", str(root / "pool"), "--out", str(tmp_path / "d"), "--store", str(store), "--quiet"]) == 0
    assert main(["baseline", "--hierarchies", str(tmp_path / "d"), "--fit", str(empty), "--kind", "most-likely",
                 "--out", str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err.endswith(f"tensorqa: error: {empty}: no ground-truth answers to fit the baseline on\n")
    assert not (tmp_path / "p.json").exists()


def test_balanced_and_split_pools_record_the_store(tmp_path, monkeypatch):
    """generate records its store as an absolute path (a relative one would name another file from
    another folder); balance and split pass it on, so decompose needs no --store after them."""
    monkeypatch.chdir(tmp_path)
    pack_default("s.h5", videos=2, seed=5, progress=False)
    generate("s.h5", "pool", templates=["objWhat", "relTime"], progress=False)
    balance_pool("pool", "balanced", progress=False)
    split_pool("balanced", "split")
    monkeypatch.chdir(tmp_path.parent)  # no longer where the relative path was given
    store = str((tmp_path / "s.h5").resolve())
    assert [pool_store(tmp_path / p) for p in ("pool", "balanced", "split")] == [store] * 3
    report = decompose(tmp_path / "split", tmp_path / "dags", limit=1, progress=False)  # no store given
    assert report["dags"] > 0


def test_main_programs_round_trip_through_the_table():
    from tensorqa.agqa.templates.catalogue import template_spec

    for row in HAND:
        sq = from_program(template_spec(row["template"]).program, row["program"])
        assert sq.program == row["program"] == str(sq.tree)


def test_parquet_only_and_split_selection(mini, tmp_path):
    root, store = mini
    report = decompose(root / "pool", tmp_path / "pq", store=store, fmt="parquet", limit=1, progress=False)
    assert sorted(p.name for p in (tmp_path / "pq").iterdir()) == ["decompose", "parquet"]  # no JSON files
    dags = pq.read_table(tmp_path / "pq/parquet/dags.parquet").to_pylist()
    assert report["videos"] == 1 and [d["main_key"] for d in dags] == [r["question_id"] for r in HAND]
    edges = pq.read_table(tmp_path / "pq/parquet/edges.parquet").to_pylist()
    # question 6 keeps its Interaction composition only (its Between one is left out)
    assert {(e["rule"], e["position"]) for e in edges if e["parent_key"] == "V1-6"} == {("Interaction", 0), ("Interaction", 1)}
    with pytest.raises(TensorQAError, match="no questions of split 'train' to decompose"):
        decompose(root / "pool", tmp_path / "train", store=store, split="train", progress=False)
    assert not (tmp_path / "train").exists()


@pytest.mark.slow  # worker processes
def test_workers_give_the_same_files(generated, tmp_path):
    # Videos are decomposed independently; two worker processes must write exactly the files one does.
    root, store, _ = generated
    pool = root / "pool"
    one = decompose(pool, tmp_path / "one", store=store, progress=False)
    import resource

    def children_cpu():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    before = children_cpu()
    two = decompose(pool, tmp_path / "two", store=store, progress=False, workers=2)
    workers = children_cpu() - before  # the two worker processes, as the kernel counted them
    assert workers > 0.5 and two["cpu_seconds"] >= workers  # the report counts them (each starts an interpreter)
    names = sorted(p.name for p in (tmp_path / "one/hierarchies").glob("*.json"))
    assert names and names == sorted(p.name for p in (tmp_path / "two/hierarchies").glob("*.json"))
    for name in names:
        assert (tmp_path / "one/hierarchies" / name).read_text() == (tmp_path / "two/hierarchies" / name).read_text()
    assert {k: v for k, v in one.items() if "seconds" not in k} == {k: v for k, v in two.items() if "seconds" not in k}


def test_a_toaction_that_fits_two_indirect_capable_actions_is_dropped_not_fatal():
    # c010 "sitting on a table" at 2-3 s and c011 "sitting at a table" at 6-7 s; the table is the only
    # object held (positions 1-2 of keyframes at 1..10 s): a whole reference "the thing they held".
    # Both actions take indirect objects, so AGQA builds ToAction(sitting, <that reference>) from each
    # (semantics §b.3, no uniqueness check): one program, two actions. The record's action tells them
    # apart (the executor's actions=); the decomposition, keyed by program, drops them and counts it.
    import torch
    from tensorqa.agqa.blocks import generate_block
    from tensorqa.agqa.options import StageTimes, resolve_templates
    from tensorqa.scenes.batch import SceneBatch
    from tensorqa.scenes.vocab import vocab
    from tensorqa.agqa.semantics import AGQA

    v = vocab()
    frames = [(10 * (i + 1), float(i + 1)) for i in range(10)]
    scene = make_scene("D2", frames, relations=[(f, "table", "holding") for f in (1, 2)]
                       + [(f, "pillow", "touching") for f in (4, 5)],
                       actions=[("c010", 2.0, 3.0), ("c011", 6.0, 7.0)])
    counts = torch.full((v.num_objects, v.num_relations), 1000, dtype=torch.int64)
    rows = generate_block(SceneBatch.from_scenes([scene]), resolve_templates(None), counts, AGQA, 0,
                          StageTimes()).to_pylist()
    slots = ("action", "action2", "window_action", "window_action2")
    shared = [r for r in rows if any(r[s] in ("c010", "c011") and r[s + "_ref"] for s in slots)]
    assert {r[s] for r in shared for s in slots if r[s + "_ref"]} == {"c010", "c011"}
    for r in shared:
        built = {r[s] for s in slots if r[s] and r[s + "_ref"]}  # the classes its indirect forms were built from
        if len(built) == 1:  # (two indirect forms, one of each, read alike: nothing tells them apart)
            assert run_program(r["program"], scene, actions=built) == r["answer"]
    out = decompose_video("D2", rows, scene)
    assert out.stats["dropped"]["ambiguous ToAction"] == len(shared)
    assert len(out.dags) == len(rows) - len(shared)
