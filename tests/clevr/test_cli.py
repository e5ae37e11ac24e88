"""The CLEVR commands end to end: pack, generate (JSON and Parquet), stats, ablate; bad input
exits 2 with one line."""

from __future__ import annotations

import json

import pytest

from tensorqa.cli import main
from tensorqa.clevr import run_program
from tensorqa.clevr.analyses import load_pool
from tensorqa.scenes.static_store import StaticStore


def test_pack_generate_stats_ablate(tmp_path, capsys):
    s = tmp_path / "s.h5"
    assert main(["pack", "--clevr", "30", "--out", str(s), "--seed", "2"]) == 0
    assert main(["generate", str(s), "--out", str(tmp_path / "q.json"), "--templates-per-image", "5"]) == 0
    assert main(["generate", str(s), "--out", str(tmp_path / "pool"), "--format", "parquet", "--templates-per-image", "5"]) == 0
    js, pq = load_pool(tmp_path / "q.json"), load_pool(tmp_path / "pool")
    assert len(js) == len(pq) == 150
    assert [q["question"] for q in js] == [q["question"] for q in pq]
    assert {q["answer"] for q in pq} <= {"yes", "no"} | {str(i) for i in range(11)} | {
        "small", "large", "gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow", "rubber", "metal",
        "cube", "sphere", "cylinder"}
    with StaticStore(s) as st:
        scenes = {x.image_filename: x.to_json() for x in st.scenes()}
    for q in js:  # the released program spelling (value_inputs, _output) runs as is
        assert run_program(q["program"], scenes[q["image_filename"]]) == q["answer"]
    capsys.readouterr()
    assert main(["stats", str(tmp_path / "q.json"), "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["questions"] == 150 and sum(v["questions"] for v in st["question_types"].values()) == 150
    assert main(["ablate", str(tmp_path / "q.json"), "--scenes", str(s), "--ablate", "absolute-relate", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["absolute-relate"]
    if "0" in rep:
        assert rep["0"]["share"] == 1.0  # no relation: nothing to ablate


def test_ablations_on_a_hand_worked_question(tmp_path):
    from tensorqa.clevr.analyses import _absolute_relate

    scene = {"objects": [{"3d_coords": [-2, 0, 0.35]}, {"3d_coords": [2, 0, 0.35]}],
             "relationships": {"left": [[], [0]], "right": [[1], []], "behind": [[], []], "front": [[], []]}}
    assert _absolute_relate(scene, [0], ["right"]) == [1]  # (2, 0) . right = 1.31 > 0
    assert _absolute_relate(scene, [1], ["left"]) == [0]


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    assert main(["pack", "--clevr-scenes", str(tmp_path / "none.json"), "--out", str(tmp_path / "s.h5")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tensorqa: error:") and err.count("\n") == 1
    s = tmp_path / "s.h5"
    assert main(["pack", "--clevr", "3", "--out", str(s)]) == 0
    bad = tmp_path / "tpl"
    bad.mkdir()
    (bad / "x.json").write_text("[{\"text\": [\"?\"], \"nodes\": [{\"type\": \"frobnicate\", \"inputs\": []}], \"params\": []}]")
    capsys.readouterr()
    assert main(["generate", str(s), "--out", str(tmp_path / "q.json"), "--templates-dir", str(bad)]) == 2
    assert "unknown node type 'frobnicate'" in capsys.readouterr().err
    assert main(["generate", str(s), "--out", str(tmp_path / "q.json"), "--templates-per-image", "0"]) == 2


def test_cogent_files_are_not_scene_files(tmp_path, capsys):
    # CLEVR-CoGenT's condition files hold colour constraints per shape, not scenes (its layout:
    # {"cube": [colours], "cylinder": [...], "sphere": [...]}): a one-line error, no traceback
    cogent = tmp_path / "CoGenT_A.json"
    cogent.write_text('{"cube": ["gray", "blue", "brown", "yellow"], "cylinder": ["red", "green", "purple", "cyan"], '
                      '"sphere": ["gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow"]}')
    assert main(["pack", "--clevr-scenes", str(cogent), "--out", str(tmp_path / "s.h5")]) == 2
    assert "not a CLEVR scenes file" in capsys.readouterr().err


def test_parquet_pool_has_a_card_and_the_scenes_split(tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    s, pool = tmp_path / "s.h5", tmp_path / "pool"
    assert main(["pack", "--clevr", "6", "--clevr-split", "val", "--out", str(s)]) == 0
    assert main(["generate", str(s), "--out", str(pool), "--format", "parquet", "--engine", "torch",
                 "--templates-per-image", "2"]) == 0
    capsys.readouterr()
    assert [p.name for p in (pool / "data").iterdir()] == ["val-00000-of-00001.parquet"]
    card = (pool / "README.md").read_text()
    assert "  - split: val\n    path: data/val-*" in card and "split: train" not in card
    ds = datasets.load_dataset(str(pool), cache_dir=str(tmp_path / "hf-cache"))
    assert list(ds) == ["val"] and ds["val"].num_rows == 12
    assert set(ds["val"]["split"]) == {"val"} and ds["val"][0]["image_filename"].startswith("CLEVR_val_")
