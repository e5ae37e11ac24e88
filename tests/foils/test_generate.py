"""Every generated caption is true and every foil false, by the scalar executor (AGQA's syntax) or the
foils' own scalar twin; the same seed gives the same pairs whatever the batch size."""

from __future__ import annotations

import collections
import json

import pyarrow.parquet as pq
import pytest

from tensorqa.cli import main
from tensorqa.foils.generate import generate_pairs
from tensorqa.foils.phenomena import VIDEO_INSTRUMENTS
from tensorqa.foils.programs import holds
from tensorqa.foils.text import existence
from tensorqa.scenes.store import open_store


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("foils") / "s.h5"
    assert main(["pack", "--videos", "160", "--seed", "3", "--out", str(path), "--quiet"]) == 0
    return path


@pytest.fixture(scope="module")
def pairs(store_path):
    with open_store(store_path) as s:
        return generate_pairs(s, seed=5, batch_videos=64)


def test_every_caption_true_every_foil_false(store_path, pairs):
    per = collections.Counter(p.instrument for p in pairs)
    assert set(per) == set(VIDEO_INSTRUMENTS), per  # every instrument is represented
    with open_store(store_path) as s:
        for p in pairs:
            scene = s.scene(p.video_id)
            assert holds(p.caption_text, scene) is True, (p.id, p.caption, p.caption_text)
            assert holds(p.foil_text, scene) is False, (p.id, p.foil, p.foil_text)
            assert p.caption != p.foil


def test_new_video_instruments(store_path, pairs):
    from tensorqa.foils.baseline import baseline_by_instrument, tokens

    existence = [p for p in pairs if p.instrument == "existence"]
    windows = collections.Counter(p.caption_text.program.split("Localize(")[1].split(",")[0]
                                  if "Localize(" in p.caption_text.program else "video" for p in existence)
    assert set(windows) == {"video", "while", "before", "after"}, windows
    assert all(f" {w} " in p.caption for p in existence for w in ("before", "after")
               if f"Localize({w}," in p.caption_text.program)
    swaps = [p for p in pairs if p.instrument == "actant-swap"]
    assert len(swaps) >= 20
    for p in swaps:  # the same words, two objects swapped
        assert sorted(tokens(p.caption)) == sorted(tokens(p.foil)) and p.caption != p.foil
        assert p.caption_text.program.startswith("Together(") and p.keyframes
    base = baseline_by_instrument([p.instrument for p in pairs], [p.id for p in pairs],
                                  [p.caption for p in pairs], [p.foil for p in pairs])
    assert base["actant-swap"] == 50.0 and base["existence"] == 50.0


def test_foils_are_minimal_edits(pairs):
    for p in pairs:
        a, b = p.caption.split(), p.foil.split()
        # one word or phrase changed: the texts share their start and end around the edit
        prefix = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        suffix = next((i for i, (x, y) in enumerate(zip(a[::-1], b[::-1])) if x != y), min(len(a), len(b)))
        assert prefix + suffix >= min(len(a), len(b)) - 8, (p.caption, p.foil)


def test_same_seed_same_pairs_whatever_the_batch_size(store_path, pairs):
    with open_store(store_path) as s:
        other = generate_pairs(s, seed=5, batch_videos=23)
        reseeded = generate_pairs(s, seed=6, batch_videos=64)
    key = lambda ps: [(p.id, p.caption, p.foil, p.caption_text, p.foil_text, p.keyframes) for p in ps]
    assert key(other) == key(pairs)
    assert key(reseeded) != key(pairs)


def test_flipped_words_and_replacements_are_balanced(pairs):
    by = collections.defaultdict(list)
    for p in pairs:
        by[p.instrument].append(p)
    for name in ("existence", "plurals", "temporal-order", "first-last"):
        c = collections.Counter(str(p.classes) for p in by[name])
        f = collections.Counter(str(p.classes_foil) for p in by[name])
        assert c == f, name
    for name in ("relations", "action-replacement", "object-swap", "counting-balanced", "counting-small-numbers"):
        c = collections.Counter(str(p.classes) for p in by[name])
        f = collections.Counter(str(p.classes_foil) for p in by[name])
        assert c == f, (name, c - f, f - c)
    assert all(int(p.classes) >= 4 and int(p.classes_foil) <= 3 for p in by["counting-adversarial"])
    assert all(int(p.classes) <= 3 and int(p.classes_foil) <= 3 for p in by["counting-small-numbers"])


@pytest.fixture(scope="module")
def cli_set(store_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("set") / "set"
    assert main(["foils", str(store_path), "--out", str(out), "--seed", "5", "--max-videos", "60"]) == 0
    return out


def test_cli_writes_valse_json_and_parquet(cli_set, tmp_path, capsys):
    out = cli_set
    table = pq.read_table(out / "pairs.parquet").to_pylist()
    assert len(table) == json.loads((out / "meta.json").read_text())["pairs"]
    ids = set()
    for f in (out / "valse").glob("*.json"):
        records = json.loads(f.read_text())
        ids |= set(records)
        for r in records.values():
            assert isinstance(r["foil"], str) and r["mturk"]["caption"] >= 2
            assert {"caption_program", "foil_program", "scene_id", "grounding"} <= set(r)
    assert ids == {r["id"] for r in table}
    row = table[0]
    assert {"caption_program", "foil_program", "phenomenon", "video_id", "keyframes", "objects"} <= set(row)
    capsys.readouterr()
    assert main(["stats", str(out)]) == 0
    text = capsys.readouterr().out
    assert "text-only unigram" in text and "phenomenon" in text and "note: counting" in text
    assert main(["stats", str(out), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    # counting-adversarial is reported beside counting, not pooled into it (VALSE's tables)
    assert set(s["text_only_unigram_acc_r_per_phenomenon"]) == {r["phenomenon"] for r in table} | {"counting-adversarial"}
    assert s["pairs_per_phenomenon"]["counting"] == s["pairs_per_instrument"]["counting-balanced"] + \
        s["pairs_per_instrument"]["counting-small-numbers"]
    assert sum(s["pairs_per_phenomenon"].values()) == len(table)
    assert main(["foils", str(tmp_path / "missing.h5"), "--out", str(out)]) == 2  # the set stays whole
    assert len(pq.read_table(out / "pairs.parquet")) == len(table)


def test_valse_json_has_the_fields_of_the_real_records(cli_set, shared_data):
    upstream = {f.stem: json.loads(f.read_text()) for f in (shared_data / "valse").glob("*.json")}
    every_file = set.intersection(*(set(next(iter(d.values()))) for d in upstream.values()))
    for f in (cli_set / "valse").glob("*.json"):
        records = json.loads(f.read_text())
        for r in records.values():
            assert every_file <= set(r), (f.name, every_file - set(r))
        if f.stem == "existence":  # the existence file's own fields, as upstream
            assert set(upstream["existence"]["existence_visual7w_2371044"]) <= set(next(iter(records.values()))) | {"image_file"}
        if f.stem == "relations":
            assert set(upstream["relations"]["relations:coco_2017:212732"]) - {"grammaticality_scores", "nli_scores"} \
                <= set(next(iter(records.values())))


def test_cli_progress_on_stderr_unless_quiet(store_path, tmp_path, capsys):
    assert main(["foils", str(store_path), "--out", str(tmp_path / "a"), "--max-videos", "20"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("wrote ") and "foils: candidates" in err and "20/20" in err
    assert "foils: pairs" in err and "foils: write" in err
    assert main(["foils", str(store_path), "--out", str(tmp_path / "b"), "--max-videos", "20", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert (tmp_path / "a/pairs.parquet").read_bytes() == (tmp_path / "b/pairs.parquet").read_bytes()


def test_score_foils_per_phenomenon(store_path, tmp_path, capsys):
    out = tmp_path / "set"
    assert main(["foils", str(store_path), "--out", str(out), "--max-videos", "40"]) == 0
    table = pq.read_table(out / "pairs.parquet").to_pylist()
    # a model that gets every caption right with p = 0.9 and every foil with p = 0.1
    scores = tmp_path / "s.json"
    scores.write_text(json.dumps([{"id": r["id"], "caption_score": 0.9, "foil_score": 0.1} for r in table]))
    metrics = tmp_path / "m.json"
    assert main(["score-foils", str(scores), "--foils", str(out), "--out", str(metrics)]) == 0
    m = json.loads(metrics.read_text())
    assert set(m["per_instrument"]) == {r["instrument"] for r in table}
    assert set(m["per_phenomenon"]) == {r["phenomenon"] for r in table} | {"counting-adversarial"}
    assert m["per_phenomenon"]["counting-adversarial"]["valse"]["counts"]["pairs"] == \
        sum(r["instrument"] == "counting-adversarial" for r in table)
    assert sum(p["valse"]["counts"]["pairs"] for p in m["per_phenomenon"].values()) == len(table)
    for part in [m, *m["per_phenomenon"].values(), *m["per_instrument"].values()]:
        assert part["valse"]["acc_r"] == 100.0 and part["vilma"]["auroc"] == 100.0
    scores.write_text(json.dumps([{"id": "nope", "caption_score": 0.9, "foil_score": 0.1}]))
    assert main(["score-foils", str(scores), "--foils", str(out), "--out", str(metrics)]) == 2
    assert "not in the foil set" in capsys.readouterr().err
    assert json.loads(metrics.read_text()) == m


def test_existence_text():
    from tensorqa import vocab

    v = vocab()
    assert existence(v.object_index("bag"), -1, True) == "The person interacts with a bag."
    assert existence(v.object_index("bag"), v.action_index("holding a pillow"), False) == \
        "The person interacts with no bag while holding a pillow."


def test_foils_bad_parameters(store_path, tmp_path, capsys):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    assert main(["foils", str(store_path), "--out", str(a_file)]) == 2
    assert main(["foils", str(store_path), "--out", str(tmp_path / "o"), "--max-videos", "0"]) == 2
    assert main(["foils", str(a_file), "--out", str(tmp_path / "o")]) == 2  # not a store
    err = capsys.readouterr().err
    assert err.count("tensorqa: error:") == 3 and "Traceback" not in err
    assert a_file.read_text() == "x"
