"""Foils on static (CLEVR) scenes: a hand-worked scene for each instrument's programs and candidates,
every pair of a generated CLEVR set re-executed by tensorqa.clevr.run_program, determinism whatever the
batch size, and the text-only baseline of every instrument on ~2000 scenes."""

from __future__ import annotations

import collections
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from tensorqa.cli import main
from tensorqa.foils.baseline import baseline_by_instrument
from tensorqa.foils.generate import generate_pairs
from tensorqa.foils.phenomena import STATIC_INSTRUMENTS
from tensorqa.foils.programs import Text
from tensorqa.foils.static_phenomena import candidates, describe_objects
from tensorqa.foils.static_programs import (
    KEYS,
    count_program,
    describe,
    evaluate,
    exist_program,
    holds,
    key_id,
    relation_program,
)
from tensorqa.foils.text import (
    scene_count,
    scene_existence,
    scene_plurality,
    scene_relation,
)
from tensorqa.scenes.static_batch import RELATIONS, StaticBatch, StaticScene
from tensorqa.scenes.static_store import StaticStore

LEFT, RIGHT, BEHIND, FRONT = range(4)
SMALL, LARGE = 0, 1
GRAY, RED, BLUE, GREEN = 0, 1, 2, 3
RUBBER, METAL = 0, 1
CUBE, SPHERE, CYLINDER = 0, 1, 2
_ = -1  # an attribute not said


def hand_scene() -> StaticScene:
    """Four objects on the ground plane (x to the right, y to the back):

        0 large red metal cube         (-2,  0)
        1 small red rubber cube        (-1, -2)
        2 small blue rubber sphere     ( 2,  0)
        3 large green metal cylinder   ( 0,  2)

    Relations by hand (j is r of i when j's coordinate differs from i's by more than 0.2 that way):
        1 is right of 0, in front of 0      0 is left of 1, behind 1
        2 is right of 0 (same y: neither)   0 is left of 2
        3 is right of 0, behind 0           0 is left of 3, in front of 3
        2 is right of 1, behind 1           1 is left of 2, in front of 2
        3 is right of 1, behind 1           1 is left of 3, in front of 3
        3 is left of 2, behind 2            2 is right of 3, in front of 3
    """
    xy = np.array([[-2, 0], [-1, -2], [2, 0], [0, 2]], np.float32)
    attrs = np.array([[LARGE, RED, METAL, CUBE], [SMALL, RED, RUBBER, CUBE], [SMALL, BLUE, RUBBER, SPHERE],
                      [LARGE, GREEN, METAL, CYLINDER]], np.int64)
    d = xy[None, :, :] - xy[:, None, :]  # [i, j] = c_j - c_i
    rel = np.stack([d[..., 0] < -0.2, d[..., 0] > 0.2, d[..., 1] > 0.2, d[..., 1] < -0.2], -1)
    coords = np.concatenate([xy, np.full((4, 1), 0.5, np.float32)], 1)
    return StaticScene("CLEVR_hand_000000.png", "hand", attrs, rel, coords, 0)


# the facts above as (subject, relation, anchor): "the <subject> is <r> the <anchor>"
FACTS = {(1, RIGHT, 0), (1, FRONT, 0), (0, LEFT, 1), (0, BEHIND, 1), (2, RIGHT, 0), (0, LEFT, 2),
         (3, RIGHT, 0), (3, BEHIND, 0), (0, LEFT, 3), (0, FRONT, 3), (2, RIGHT, 1), (2, BEHIND, 1),
         (1, LEFT, 2), (1, FRONT, 2), (3, RIGHT, 1), (3, BEHIND, 1), (1, LEFT, 3), (1, FRONT, 3),
         (3, LEFT, 2), (3, BEHIND, 2), (2, RIGHT, 3), (2, FRONT, 3)}


def fits(key, o: int) -> bool:
    return all(k < 0 or k == a for k, a in zip(key, hand_scene().attrs[o]))


def picks(key) -> list[int]:
    return [o for o in range(4) if fits(key, o)]


def test_hand_scene_relations_follow_the_comments():
    s = hand_scene()
    got = {(j, r, i) for i in range(4) for j in range(4) for r in range(4) if s.rel[i, j, r]}
    assert got == FACTS


def test_hand_scene_existence_and_counting():
    s = hand_scene()
    # a large green metal cylinder is there (object 3); no blue cube (the blue object is a sphere)
    assert evaluate(exist_program((LARGE, GREEN, METAL, CYLINDER)), s) == "yes"
    assert evaluate(exist_program((_, BLUE, _, CUBE)), s) == "no"
    assert holds(Text(exist_program((_, BLUE, _, CUBE)), "no"), s) is True
    assert scene_existence((LARGE, GREEN, METAL, CYLINDER), True) == "There is a large green metal cylinder."
    assert scene_existence((_, BLUE, _, CUBE), False) == "There is no blue cube."
    # red cubes: 0 and 1 -> 2; things: 4; metal things: 0 and 3 -> 2; gray things: 0
    assert evaluate(count_program((_, RED, _, CUBE)), s) == "2"
    assert evaluate(count_program((_, _, _, _)), s) == "4"
    assert evaluate(count_program((_, _, METAL, _)), s) == "2"
    assert evaluate(count_program((_, GRAY, _, _)), s) == "0"
    assert scene_count((_, RED, _, CUBE), 2) == "There are exactly 2 red cubes."
    assert scene_count((_, _, _, SPHERE), 1) == "There is exactly 1 sphere."
    assert scene_count((_, GRAY, _, _), 0) == "There are no gray things."  # VALSE's "no", not "exactly 0"
    # plurality: one sphere (2), several cubes (0, 1)
    assert holds(Text(count_program((_, _, _, SPHERE)), "1"), s) is True
    assert holds(Text(count_program((_, _, _, SPHERE)), "several"), s) is False
    assert holds(Text(count_program((_, _, _, CUBE)), "several"), s) is True
    assert holds(Text(count_program((_, _, _, CUBE)), "1"), s) is False
    assert scene_plurality((_, _, _, CUBE), True) == "There are multiple cubes."
    assert scene_plurality((_, _, _, SPHERE), False) == "There is exactly one sphere."
    # the candidates' counts are the hand counts
    match, count = describe_objects(StaticBatch.from_scenes([s]))
    for key in [(_, RED, _, CUBE), (_, _, _, _), (_, _, METAL, _), (LARGE, _, _, _), (SMALL, BLUE, RUBBER, SPHERE)]:
        assert int(count[0, key_id(key)]) == len(picks(key)), key
        assert match[0, :4, key_id(key)].nonzero().flatten().tolist() == picks(key)


def test_hand_scene_relations_and_actant_swap():
    s = hand_scene()
    cube, sphere, cyl, small_cube = (_, _, METAL, CUBE), (_, BLUE, _, SPHERE), (_, _, _, CYLINDER), (SMALL, _, _, CUBE)
    # "The blue sphere is right of the metal cube.": 2 is right of 0 -> true; behind / left / front: false
    assert scene_relation(sphere, RIGHT, cube) == "The blue sphere is to the right of the metal cube."
    assert evaluate(relation_program(sphere, RIGHT, cube), s) == "yes"
    for r in (LEFT, BEHIND, FRONT):
        assert evaluate(relation_program(sphere, r, cube), s) == "no", RELATIONS[r]
    # actant swap: "The metal cube is right of the blue sphere." 0 is left of 2 -> false
    assert evaluate(relation_program(cube, RIGHT, sphere), s) == "no"
    # "The cylinder is behind the small cube." (3 behind 1) true; swapped "The small cube is behind the
    # cylinder." false (1 is in front of 3)
    assert evaluate(relation_program(cyl, BEHIND, small_cube), s) == "yes"
    assert evaluate(relation_program(small_cube, BEHIND, cyl), s) == "no"
    # "the red cube" is not unique (0 and 1): no answer either way, as CLEVR's unique
    assert evaluate(relation_program(sphere, RIGHT, (_, RED, _, CUBE)), s) is None
    assert evaluate(relation_program((_, RED, _, CUBE), LEFT, sphere), s) is None


def test_hand_scene_candidates_are_true_by_the_hand_facts():
    """The generator's candidate rows on 60 copies of the hand scene (each copy draws its own noise)
    agree with the facts above, not only with the executor."""
    s = hand_scene()
    rows = candidates(StaticBatch.from_scenes([s] * 60), 0, seed=4)
    for name in ("relations", "actant-swap"):
        R = rows[name]
        assert R.video.size == 60  # every copy has a pair of uniquely described objects
        for a, b, r, ground in zip(R.a, R.b, R.n, R.ground):
            (j, _), (i, _) = ground
            assert picks(KEYS[a]) == [j] and picks(KEYS[b]) == [i]  # unique descriptions
            assert (j, r, i) in FACTS
            if name == "actant-swap":
                assert (i, r, j) not in FACTS
        if name == "relations":
            for (j, _), (i, _), ok in zip([g[0] for g in R.ground], [g[1] for g in R.ground], R.foil_ok):
                assert ok.tolist() == [(j, r, i) not in FACTS for r in range(4)]
    E = rows["existence"]
    for key, yes in zip(E.a, E.flag):
        assert bool(picks(KEYS[key])) == bool(yes)
    for name in ("counting-balanced", "counting-small-numbers", "counting-adversarial"):
        for key, n in zip(rows[name].a, rows[name].n):
            assert len(picks(KEYS[key])) == n
        assert (rows[name].n >= 4).all() == (name == "counting-adversarial")  # 4 things is the only >= 4
    F = rows["foil-it"]
    for key, ok in zip(F.a, F.foil_ok):
        k = KEYS[key]
        # the foil's shape: not the caption's, and no object fits the other words with it; a shape is a
        # class (CLEVR's "ball" is a sphere), so no foil is true under a synonym
        assert ok.tolist() == [sh != k[3] and not picks((*k[:3], sh)) for sh in range(3)]


@pytest.fixture(scope="module")
def clevr_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("clevr_foils") / "c.h5"
    assert main(["pack", "--clevr", "2000", "--out", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def clevr_pairs(clevr_store):
    with StaticStore(clevr_store) as s:
        return generate_pairs(s, seed=7, batch_videos=256)


def test_every_clevr_caption_true_every_foil_false(clevr_store, clevr_pairs):
    per = collections.Counter(p.instrument for p in clevr_pairs)
    assert set(per) == set(STATIC_INSTRUMENTS) and min(per.values()) > 1000, per
    with StaticStore(clevr_store) as s:
        scenes = {sc.image_filename: sc for sc in s.scenes()}
    for p in clevr_pairs:
        scene = scenes[p.media_file]
        assert holds(p.caption_text, scene) is True, (p.id, p.caption)
        assert holds(p.foil_text, scene) is False, (p.id, p.foil)
        # the programs are CLEVR's program JSON, run on the scene's CLEVR JSON too
        assert holds(p.caption_text, scene.to_json()) is True
        assert all({"type", "inputs", "side_inputs"} <= set(n) for n in json.loads(p.caption_text.program))
        assert p.keyframes == [] and p.scene_kind == "static"
        # grounded: the objects the caption is about (none for "there is no ..." or "exactly 0")
        assert bool(p.object_indices) == (p.caption_text.answer not in ("no", "0")), p
        assert [describe(scene.attrs[k]) for k in p.object_indices] == p.objects
    ids = [p.id for p in clevr_pairs]
    assert len(set(ids)) == len(ids) and all(":tensorqa-clevr:" in i for i in ids)


def test_clevr_balance_and_text_only_baseline(clevr_pairs):
    by = collections.defaultdict(list)
    for p in clevr_pairs:
        by[p.instrument].append(p)
    for name in ("existence", "plurals", "relations", "foil-it", "counting-balanced", "counting-small-numbers"):
        c = collections.Counter(str(p.classes) for p in by[name])
        f = collections.Counter(str(p.classes_foil) for p in by[name])
        assert c == f, (name, c - f, f - c)
    assert all(int(p.classes) >= 4 and int(p.classes_foil) <= 3 for p in by["counting-adversarial"])
    inst = [p.instrument for p in clevr_pairs]
    base = baseline_by_instrument(inst, [p.id for p in clevr_pairs], [p.caption for p in clevr_pairs],
                                  [p.foil for p in clevr_pairs])
    for name, acc in base.items():
        if name == "counting-adversarial":
            assert acc == 100.0  # by design (VALSE): captions >= 4, foils 0-3
        else:
            assert 45.0 <= acc <= 55.0, (name, acc)
    assert base["actant-swap"] == 50.0  # the same words: every pair ties


def test_clevr_same_seed_same_pairs_whatever_the_batch_size(clevr_store):
    key = lambda ps: [(p.id, p.caption, p.foil, p.caption_text, p.foil_text, p.object_indices) for p in ps]
    with StaticStore(clevr_store) as s:
        a = generate_pairs(s, seed=7, max_videos=400, batch_videos=400)
        b = generate_pairs(s, seed=7, max_videos=400, batch_videos=37)
        c = generate_pairs(s, seed=8, max_videos=400, batch_videos=400)
    assert key(a) == key(b)
    assert key(a) != key(c)


def test_clevr_cli_records_and_stats(clevr_store, tmp_path, capsys):
    out = tmp_path / "set"
    assert main(["foils", str(clevr_store), "--out", str(out), "--max-videos", "200", "--batch", "50"]) == 0
    assert "CLEVR scenes" in capsys.readouterr().out
    table = pq.read_table(out / "pairs.parquet").to_pylist()
    assert {r["instrument"] for r in table} == set(STATIC_INSTRUMENTS)
    row = table[0]
    assert row["scene_kind"] == "static" and row["keyframes"] == [] and row["object_indices"]
    records = json.loads((out / "valse" / "relations.json").read_text())
    r = next(iter(records.values()))
    assert r["image_file"].endswith(".png") and r["video_file"] is None and r["dataset"] == "tensorqa-clevr"
    assert isinstance(r["caption_program"], list) and r["caption_program"][-1]["type"] == "exist"
    assert r["grounding"]["keyframes"] == [] and len(r["grounding"]["object_indices"]) == 2
    meta = json.loads((out / "meta.json").read_text())
    assert meta["scene_kind"] == "static" and set(meta["text_only_unigram_acc_r_per_phenomenon"]) == \
        set(STATIC_INSTRUMENTS.values()) | {"counting-adversarial"}
    assert main(["stats", str(out), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert set(s["pairs_per_phenomenon"]) == set(STATIC_INSTRUMENTS.values()) | {"counting-adversarial"}
    assert "counting-adversarial" in s["notes"] and "by design" in s["notes"]["counting-adversarial"]
    assert main(["stats", str(out)]) == 0
    text = capsys.readouterr().out
    assert "phenomenon" in text and "note: counting-adversarial" in text


def test_bad_stores_get_one_line(tmp_path, capsys):
    import h5py

    odd = tmp_path / "odd.h5"
    with h5py.File(odd, "w") as f:
        f.attrs["format"] = "something else"
    text = tmp_path / "t.h5"
    text.write_text("not hdf5")
    assert main(["foils", str(odd), "--out", str(tmp_path / "o1")]) == 2
    assert main(["foils", str(text), "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err
    assert err.count("tensorqa: error:") == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 2
