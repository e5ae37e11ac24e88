"""tensorqa show / report: the figure data against a hand-worked video's store and records, the
report's numbers against ``tensorqa stats``, the pages in a real (headless) browser."""

import json
import re
import sys

import numpy as np
import pyarrow.compute as pc
import pytest

from helpers import make_scene, run_tensorqa as tensorqa  # in this process: no interpreter per command
from tensorqa import write_store
from tensorqa import vocab
from tensorqa.cli import main
from tensorqa.agqa import generate
from tensorqa.writers import read_pool

from viz import browser  # tests/ is on sys.path (conftest)

pytest.importorskip("matplotlib", reason="the viz extra (matplotlib) is not installed")

from tensorqa.viz.timeline import timeline_data  # noqa: E402

# The hand-worked video: six keyframes a second apart, three actions.
#   frame   10  20  30  40  50  60      (seconds 1..6)
#   pillow  H   H                       holding (and looking at at 10)
#   chair           S   S   S           sitting on
#   phone               L       H       looking at (40), holding + looking at (60)
#   table       .                       annotated, no relation
#   holding a pillow 0.5-2.2 s: keyframes 10, 20; sitting in a chair 2.5-5.5 s: 30, 40, 50;
#   holding a phone 5.8-6.5 s: 60
FRAMES = [(10, 1.0), (20, 2.0), (30, 3.0), (40, 4.0), (50, 5.0), (60, 6.0)]
RELATIONS = [(0, "pillow", "holding"), (1, "pillow", "holding"), (0, "pillow", "looking at"),
             (2, "chair", "sitting on"), (3, "chair", "sitting on"), (4, "chair", "sitting on"),
             (5, "phone", "holding"), (5, "phone", "looking at"), (3, "phone", "looking at")]
ACTIONS = [("holding a pillow", 0.5, 2.2), ("sitting in a chair", 2.5, 5.5), ("holding a phone", 5.8, 6.5)]
# docs/reference/agqa_semantics.md §a.1 for X = sitting in a chair (keyframes 30, 40, 50): before X runs from the
# first keyframe through X's first keyframe; after X is strictly after X's last; while X is X's own
WINDOWS = {"before": [10, 20, 30], "after": [60], "while": [30, 40, 50]}




@pytest.fixture(scope="module")
def hand(tmp_path_factory):
    root = tmp_path_factory.mktemp("viz")
    scene = make_scene("HAND1", FRAMES, RELATIONS, objects=[(1, "table")], actions=ACTIONS)
    store = write_store(root / "hand.h5", [scene], source="test",
                        meta={"rel_obj_keyframes": scene.rel.sum(axis=0).tolist()})
    generate(store, root / "pool", progress=False, grounding=True)
    return root, store, scene, read_pool(root / "pool")


def _record(table, **where):
    mask = None
    for column, value in where.items():
        m = pc.match_substring(table[column], value) if column == "program" else pc.equal(table[column], value)
        mask = m if mask is None else pc.and_(mask, m)
    rows = table.filter(mask)
    assert rows.num_rows, where
    return rows.slice(0, 1).to_pylist()[0]


def _grounded(text: str) -> tuple[set[int], set[tuple[str, int]]]:
    """Keyframes and (object, keyframe) vertices named by an sg_grounding, read with regexes."""
    frames, objects = set(), set()
    for ids in json.loads(text).values():
        for i in ids:
            m = re.fullmatch(r"(?:([orv]\d+)/)?(\d{6})", i)
            if m:
                frames.add(int(m.group(2)))
                if m.group(1) and m.group(1).startswith("o"):
                    objects.add((m.group(1), int(m.group(2))))
    return frames, objects


def test_bars_ticks_and_grid_are_the_store(hand):
    _, _, scene, _ = hand
    d = timeline_data(scene)
    v = vocab()
    assert [(b["phrase"], b["start_s"], b["end_s"]) for b in d["bars"]] == [(p, a, b) for p, a, b in ACTIONS]
    assert [b["instance"] for b in d["bars"]] == [f"{v.actions[v.action_index(p)]}/1" for p, _, _ in ACTIONS]
    assert [(t["frame"], t["secs"]) for t in d["ticks"]] == FRAMES
    o = lambda w: v.object_ids[v.object_index(w)]  # noqa: E731
    assert sorted(d["objects"]) == sorted(o(w) for w in ("pillow", "chair", "phone", "table"))
    cells = {(c["object"], c["frame"]): c for c in d["cells"]}
    assert set(cells) == {(o("pillow"), 10), (o("pillow"), 20), (o("chair"), 30), (o("chair"), 40), (o("chair"), 50),
                          (o("phone"), 40), (o("phone"), 60), (o("table"), 20)}
    rel = lambda w: v.relation_ids[v.relation_index(w)]  # noqa: E731
    assert sorted(cells[(o("pillow"), 10)]["relations"]) == sorted([rel("holding"), rel("looking at")])
    assert cells[(o("pillow"), 10)]["kind"] == "contact" and cells[(o("phone"), 40)]["kind"] == "attention"
    assert cells[(o("table"), 20)]["kind"] == "none" and cells[(o("table"), 20)]["relations"] == []
    assert d["question"] is d["window"] is d["grounding"] is None
    assert not any(t["highlight"] for t in d["ticks"])


@pytest.mark.parametrize("kind", ["before", "after", "while"])
def test_window_and_grounding_of_a_question(hand, kind):
    _, _, scene, table = hand
    record = _record(table, template="objExists", window=kind, program=f"Localize({kind}, sitting in a chair)")
    d = timeline_data(scene, record)
    assert d["question"]["text"] == record["question"] and d["question"]["answer"] == record["answer"]
    assert d["window"]["kind"] == kind
    assert d["window"]["frames"] == WINDOWS[kind]
    secs = dict(FRAMES)
    assert (d["window"]["start_s"], d["window"]["end_s"]) == (secs[WINDOWS[kind][0]], secs[WINDOWS[kind][-1]])
    frames, objects = _grounded(record["sg_grounding"])
    assert frames >= set(WINDOWS[kind])  # the localization's span lists its window
    assert {t["frame"] for t in d["ticks"] if t["highlight"]} == frames
    assert {(c["object"], c["frame"]) for c in d["cells"] if c["highlight"]} == objects
    chair = f"{vocab().actions[vocab().action_index('sitting in a chair')]}/1"
    assert [b["instance"] for b in d["bars"] if b["highlight"]] == [chair]


def test_pillow_before_sitting_is_grounded_at_the_holding_keyframes(hand):
    _, _, scene, table = hand
    record = _record(table, template="objExists", window="before", object=vocab().object_ids[vocab().object_index("pillow")],
                     program="Localize(before, sitting in a chair)")
    assert record["answer"] == "yes"
    d = timeline_data(scene, record)
    pillow = vocab().object_ids[vocab().object_index("pillow")]
    assert {(c["object"], c["frame"]) for c in d["cells"] if c["highlight"]} == {(pillow, 10), (pillow, 20)}
    assert [t["frame"] for t in d["ticks"] if t["highlight"]] == [10, 20, 30]


def test_grounding_is_computed_when_the_pool_has_none(hand):
    _, _, scene, table = hand
    record = _record(table, template="objExists", window="before", program="Localize(before, sitting in a chair)")
    want = timeline_data(scene, record)["grounding"]
    assert timeline_data(scene, dict(record, sg_grounding=None))["grounding"] == want


def test_compare_time_window_is_the_answered_side(hand):
    _, _, scene, table = hand
    record = _record(table, template="objTime", program="Localize(temporal tag, sitting in a chair)")
    d = timeline_data(scene, record)
    # §a.2: strictly before X's first keyframe (30), or strictly after its last (50)
    assert d["window"]["frames"] == ({"before": [10, 20], "after": [60]}[record["answer"]])


def test_compare_before_window_follows_the_semantics(hand):
    # compare_before_includes_x (§a.2, f1): compare-before runs through X's first keyframe (30), as the
    # engine's compare windows do under that switch; compare-after is unchanged
    from dataclasses import replace

    from tensorqa.agqa.semantics import AGQA
    from tensorqa.viz.timeline import window_frames

    _, _, scene, table = hand
    program = _record(table, template="objTime", program="Localize(temporal tag, sitting in a chair)")["program"]
    with_x = replace(AGQA, compare_before_includes_x=True)
    assert window_frames(program, scene, AGQA, answer="before") == ("compare-before", [10, 20])
    assert window_frames(program, scene, with_x, answer="before") == ("compare-before", [10, 20, 30])
    assert window_frames(program, scene, with_x, answer="after") == ("compare-after", [60])


# A second hand-worked video for the questions that ask a relation: eight keyframes a second apart.
#   frame   10  20  30  40  50  60  70  80      (seconds 1..8)
#   book    HL  H                       L       holding (10, 20), looking at (10, 80)
#   bed             S   S                       sitting on
#   phone                   H   H               holding
#   watching television 0.5-6.5 s
# objFirst(holding, video): the first keyframe with holding is 10, and its stretch (10, 20; the
# phone's holding starts at 50) holds only the book -> "book". The asked relation's cells are every
# holding cell (book 10, 20; phone 50, 60), the answer's cells every book cell (10, 20, 80).
FRAMES2 = [(10 * (i + 1), float(i + 1)) for i in range(8)]
RELATIONS2 = [(0, "book", "holding"), (1, "book", "holding"), (4, "phone", "holding"), (5, "phone", "holding"),
              (0, "book", "looking at"), (7, "book", "looking at"), (2, "bed", "sitting on"), (3, "bed", "sitting on")]


@pytest.fixture(scope="module")
def held(tmp_path_factory):
    root = tmp_path_factory.mktemp("viz2")
    scene = make_scene("HAND2", FRAMES2, RELATIONS2, actions=[("watching television", 0.5, 6.5)])
    # the dataset-frequency rule (P-validObjRel) neutralized: every pair of the video counts as frequent
    store = write_store(root / "held.h5", [scene], source="test",
                        meta={"rel_obj_keyframes": (scene.rel.sum(axis=0) * 100).tolist()})
    generate(store, root / "pool", progress=False, grounding=True)
    return root, store, scene, read_pool(root / "pool")


def test_obj_first_figure_marks_the_asked_relation_and_the_answer(held):
    _, _, scene, table = held
    v = vocab()
    o = lambda w: v.object_ids[v.object_index(w)]  # noqa: E731
    holding = v.relation_ids[v.relation_index("holding")]
    record = _record(table, template="objFirst", window="video", relation=holding)
    assert record["answer"] == "book"
    d = timeline_data(scene, record)
    ev = d["evidence"]
    assert (ev["relation"], ev["relation_name"]) == (holding, "holding")
    want_relation = {(o("book"), 10), (o("book"), 20), (o("phone"), 50), (o("phone"), 60)}
    want_answer = {(o("book"), 10), (o("book"), 20), (o("book"), 80)}
    assert {tuple(x) for x in ev["relation_cells"]} == want_relation
    assert (ev["answer_object"], ev["answer_name"]) == (o("book"), "book")
    assert {tuple(x) for x in ev["answer_cells"]} == want_answer
    assert {(c["object"], c["frame"]) for c in d["cells"] if c["asked"]} == want_relation
    assert {(c["object"], c["frame"]) for c in d["cells"] if c["answer"]} == want_answer
    # the grounding names holding at the first stretch's keyframes (10, 20): the book's cells there
    assert {(c["object"], c["frame"]) for c in d["cells"] if c["grounded"]} == {(o("book"), 10), (o("book"), 20)}
    # every kind present in a cell is drawn, not only the first: book at 10 is held and looked at
    book_at_10 = next(c for c in d["cells"] if (c["object"], c["frame"]) == (o("book"), 10))
    assert book_at_10["kinds"] == ["contact", "attention"]
    keys = [e["key"] for e in d["legend"]]
    assert {"asked", "answer", "grounding", "window"} <= set(keys)
    assert f"holding ({holding})" in next(e["label"] for e in d["legend"] if e["key"] == "asked")


def test_without_a_question_there_is_no_grounding_legend(held):
    _, _, scene, _ = held
    d = timeline_data(scene)
    assert d["evidence"] is None
    kinds = ["kind:contact", "kind:verb", "kind:spatial", "kind:attention", "kind:none"]
    assert [e["key"] for e in d["legend"]] == kinds
    assert not any("grounding" in e["label"] for e in d["legend"])
    assert not any(c["asked"] or c["answer"] or c["grounded"] or c["highlight"] for c in d["cells"])


def test_show_page_explains_the_grounding_ids(held, tmp_path):
    root, store, _, table = held
    holding = vocab().relation_ids[vocab().relation_index("holding")]
    qid = _record(table, template="objFirst", window="video", relation=holding)["question_id"]
    from tensorqa.viz.show import show

    show(store, "HAND2", tmp_path / "q.html", pool=root / "pool", question=qid)
    page = (tmp_path / "q.html").read_text()
    assert "is a keyframe" in page and "the first instance of action" in page
    # the grounding's relation vertex r15/000010 spelled out, with its time from the store
    assert (f"<td>{holding}/000010 {holding}/000020</td>"
            "<td>holding at keyframe 10 (1.00 s); holding at keyframe 20 (2.00 s)</td>") in page
    book = vocab().object_ids[vocab().object_index("book")]
    assert f"<td>book ({book})</td><td>holding ({holding})</td><td>contact</td><td>10, 20</td>" in page
    show(store, "HAND2", tmp_path / "v.html")
    page = (tmp_path / "v.html").read_text()
    assert "grounding" not in page.lower()


def test_show_command_writes_png_and_html(hand):
    root, store, _, table = hand
    qid = _record(table, template="objExists", window="before")["question_id"]
    r = tensorqa("show", store, "HAND1", "--pool", root / "pool", "--question", qid, "--out", root / "q.html")
    assert r.returncode == 0, r.stderr
    page = (root / "q.html").read_text()
    assert page.count("<img") == 1 and "data:image/png;base64," in page and qid in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing fetched at view time
    r = tensorqa("show", store, "HAND1", "--out", root / "v.png")
    assert r.returncode == 0, r.stderr
    assert (root / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(root.glob("*.partial"))


@pytest.mark.parametrize("args, needle", [
    (["NOPE"], "no video 'NOPE'"),
    (["HAND1", "--question", "HAND1-0"], "--pool and --question go together"),
    (["HAND1", "--pool", "POOL", "--question", "HAND1-999999"], "not in the pool"),
    (["HAND1", "--pool", "POOL", "--question", "OTHER-1"], "not in the pool"),
])
def test_show_user_errors(hand, args, needle):
    root, store, _, _ = hand
    args = [str(root / "pool") if a == "POOL" else a for a in args]
    r = tensorqa("show", store, *args, "--out", root / "bad.html")
    assert r.returncode == 2 and r.stderr.startswith("tensorqa: error: ") and needle in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = tensorqa("show", store, "HAND1", "--out", root / "bad.jpg")
    assert r.returncode == 2 and "expected a file ending in .png or .html" in r.stderr


def test_missing_extra_is_one_line(hand, monkeypatch, capsys):
    root, store, _, _ = hand
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    for argv in (["show", str(store), "HAND1", "--out", str(root / "x.png")], ["report", str(root / "pool"), "--out", str(root / "r")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == f"tensorqa: error: {argv[0]}: needs the plotting extra: pip install 'tensorqa[viz]'\n"


# -- report ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pools(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    for args in (["pack", "--videos", 12, "--seed", 2, "--out", root / "s.h5", "--quiet"],
                 ["generate", root / "s.h5", "--out", root / "pool", "--quiet"],
                 ["balance", root / "pool", "--out", root / "bal", "--quiet"]):
        r = tensorqa(*args)
        assert r.returncode == 0, r.stderr
    return root


def _stats(pool):
    r = tensorqa("stats", pool, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_report_numbers_are_stats(pools):
    r = tensorqa("report", pools / "bal", "--compare", pools / "pool", "--out", pools / "rep")
    assert r.returncode == 0, r.stderr
    s = json.loads((pools / "rep/summary.json").read_text())
    assert s["pool"]["stats"] == _stats(pools / "bal")
    assert s["compare"]["stats"] == _stats(pools / "pool")
    assert (s["pool"]["kind"], s["compare"]["kind"]) == ("balanced", "unbalanced")
    for side in ("pool", "compare"):
        st = s[side]["stats"]
        assert sum(np.round(list(s[side]["steps_share"].values()), 4)) == pytest.approx(1, abs=1e-3)
        binary = {b["template"]: b for b in s[side]["binary"]}
        for t in st["templates"]:
            if t["template"] in binary:
                assert binary[t["template"]]["top_share"] == t["top_answers"][0][1]
                assert binary[t["template"]]["questions"] == t["questions"]
    page = (pools / "rep/report.html").read_text()
    assert page.count("<img") == 4 and "Table 14" in page  # both pools' answers on the same rows: one figure
    assert f"{s['pool']['stats']['questions']:,}" in page and f"{s['compare']['stats']['questions']:,}" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)


def test_answer_rows_are_shared_by_both_pools():
    from tensorqa.viz.draw_report import answer_rows

    def summary(counts):
        return {"stats": {"templates": [{"template": t, "questions": n} for t, n in counts]}}
    # a template with questions in either pool gets a row (for both), in the catalogue's order
    balanced = summary([("objExists", 4), ("objWhat", 0), ("actFirst", 2), ("actLast", 0)])
    unbalanced = summary([("objExists", 9), ("objWhat", 5), ("actFirst", 3), ("actLast", 0)])
    assert answer_rows([balanced, unbalanced]) == ["objExists", "objWhat", "actFirst"]
    assert answer_rows([balanced]) == ["objExists", "actFirst"]


def test_report_user_errors(pools, tmp_path):
    (tmp_path / "file").write_text("x")
    r = tensorqa("report", pools / "pool", "--out", tmp_path / "file")
    assert r.returncode == 2 and "is a file" in r.stderr
    r = tensorqa("report", tmp_path / "nopool", "--out", tmp_path / "r")
    assert r.returncode == 2 and r.stderr.startswith("tensorqa: error: ") and "Traceback" not in r.stderr


# -- a real browser -------------------------------------------------------------------------------------
BROWSER = browser.find_browser()


@pytest.mark.slow  # a browser page
@pytest.mark.skipif(BROWSER is None, reason="no Chromium binary (apt-get install chromium, or set TENSORQA_CHROMIUM)")
def test_pages_render_in_headless_chromium(hand, pools):
    root, store, _, table = hand
    qid = _record(table, template="objExists", window="before")["question_id"]
    assert tensorqa("show", store, "HAND1", "--pool", root / "pool", "--question", qid, "--out", root / "b.html").returncode == 0
    if not (pools / "rep/report.html").exists():
        assert tensorqa("report", pools / "bal", "--compare", pools / "pool", "--out", pools / "rep").returncode == 0
    for page, images in ((root / "b.html", 1), (pools / "rep/report.html", 4)):
        got = browser.render(page, BROWSER)
        assert got["loaded"], got
        assert got["images"] == images and got["broken"] == 0 and min(got["widths"]) > 0, got
        assert got["errors"] == [] and got["console_errors"] == [], got
        shot = browser.screenshot(page, page.with_suffix(".screenshot.png"), BROWSER)
        assert shot.stat().st_size > 10_000


@pytest.mark.skipif(BROWSER is None, reason="no Chromium binary (apt-get install chromium, or set TENSORQA_CHROMIUM)")
def test_the_probe_sees_a_broken_page(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><head><title>x</title></head><body><img src="data:image/png;base64,AAAA">'
                    '<script>console.error("boom")</script></body></html>')
    got = browser.render(page, BROWSER)
    assert got["broken"] == 1 and any("boom" in e for e in got["errors"]), got
