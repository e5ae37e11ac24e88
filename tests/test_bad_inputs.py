"""Issue 20: untrusted files, tampered stores, concurrent runs and the bad inputs a careless user
tries. One test (at least) per numbered item; every user error is exit status 2, one stderr line
``tensorqa: error: ...`` naming the file or flag, no traceback, no ``.partial`` left and nothing
previously written lost."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tensorqa.cli import main

from helpers import REPO

ROOT = REPO
FSIZE = """import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
from tensorqa.cli import main
sys.exit(main(sys.argv[2:]))
"""


def run(*args, cwd=None, prefix=()):
    return subprocess.run([sys.executable, *prefix, *(() if prefix else ("-m", "tensorqa.cli")), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=600)


def assert_user_error(result, *needles):
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tensorqa: error: "), result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def error(capsys, *args, needles=()):
    """In process: ``main(args)`` is 2 with one stderr line holding every needle."""
    assert main([str(a) for a in args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tensorqa: error: "), err
    for n in needles:
        assert n in err[0], (n, err[0])
    return err[0]


def no_partials(*folders):
    for folder in folders:
        assert not [p for p in Path(folder).rglob("*") if p.name.endswith(".partial")], list(Path(folder).rglob("*"))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("bad") / "s.h5"
    assert main(["pack", "--videos", "3", "--seed", "1", "--out", str(path), "--quiet"]) == 0
    return path


@pytest.fixture(scope="module")
def pool(tmp_path_factory, store):
    out = tmp_path_factory.mktemp("bad") / "pool"
    assert main(["generate", str(store), "--out", str(out), "--templates", "objWhat", "relTime", "--quiet"]) == 0
    return out


@pytest.fixture
def device_file(tmp_path):
    """A character device where one can be used (/dev/full, as root: the rename would replace it),
    else a fifo standing in for it (not a regular file either)."""
    full = Path("/dev/full")
    if full.exists() and stat.S_ISCHR(full.stat().st_mode) and os.access(full, os.W_OK):
        return full
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return fifo


def assert_still_device(path):
    mode = path.stat().st_mode
    assert stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


# -- 1. pickles run code ------------------------------------------------------------------------------
class _Payload:
    """Unpickling it runs ``os.system(touch <marker>)``: the classic malicious pickle."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_1_a_malicious_pickle_runs_nothing(tmp_path, capsys):
    marker = tmp_path / "pwned"
    evil = tmp_path / "AGQA_train_stsgs.pkl"
    evil.write_bytes(pickle.dumps({"V1": _Payload(marker)}))
    # the payload does work when loaded by pickle itself (the test is real)
    pickle.loads(pickle.dumps(_Payload(tmp_path / "control")))
    assert (tmp_path / "control").exists()
    out = tmp_path / "x.h5"
    line = error(capsys, "pack", "--agqa-stsgs", evil, "--out", out, "--quiet", needles=(evil.name, "posix.system"))
    assert "unsafe" in line and not marker.exists() and not out.exists()
    ag = tmp_path / "ag"
    ag.mkdir()
    (ag / "object_bbox_and_relationship.pkl").write_bytes(pickle.dumps({"V1.mp4/000001.png": [_Payload(marker)]}))
    (ag / "person_bbox.pkl").write_bytes(pickle.dumps({}))
    csv = tmp_path / "Charades_v1_train.csv"
    csv.write_text("id,actions,length\nV1,c001 1.0 2.0,10\n")
    error(capsys, "pack", "--action-genome", ag, "--charades", csv, "--out", out, "--quiet",
          needles=("object_bbox_and_relationship.pkl", "unsafe"))
    assert not marker.exists() and not out.exists()
    no_partials(tmp_path)


def test_1_numpy_arrays_still_load_and_help_says_what_is_trusted(tmp_path, capsys):
    from tensorqa.scenes.loaders.safe_pickle import loads_untrusted

    data = {"bbox": np.arange(4, dtype=np.float32).reshape(1, 4), "score": np.float32(0.5), "x": [1, "a", None, (2.0,)]}
    back = loads_untrusted(pickle.dumps(data))
    assert np.array_equal(back["bbox"], data["bbox"]) and back["score"] == 0.5 and back["x"] == [1, "a", None, (2.0,)]
    with pytest.raises(SystemExit):
        main(["pack", "--help"])
    assert "restricted unpickler" in capsys.readouterr().out
    assert "restricted unpickler" in (ROOT / "docs" / "reference" / "errors.md").read_text()


# -- 2. --out replaces device files ---------------------------------------------------------------------
def test_2_out_that_is_a_device_is_refused_before_any_work(tmp_path, store, pool, device_file, capsys):
    d = device_file
    error(capsys, "pack", "--videos", "3", "--out", d, "--quiet", needles=(str(d), "refusing to replace"))
    error(capsys, "export-agqa", store, "--out", d, needles=(str(d),))
    error(capsys, "baseline", "--pool", pool, "--kind", "random", "--out", d, needles=(str(d),))
    error(capsys, "ablate", store, "--ablate", "before=while", "--templates", "objWhat", "--out", d, "--quiet",
          needles=("--out", str(d)))
    error(capsys, "ablate", store, "--ablate", "before=while", "--templates", "objWhat", "--questions", d, "--quiet",
          needles=("--questions", str(d)))
    for command in ("balance", "split", "decompose"):
        error(capsys, command, pool, "--out", d, "--quiet", needles=(str(d),))
    error(capsys, "generate", store, "--out", d, "--quiet", needles=(str(d),))
    assert_still_device(d)
    no_partials(tmp_path)


# -- 3. two generate runs into one --out ------------------------------------------------------------------
def test_3_a_second_generate_into_the_same_folder_is_refused(tmp_path, store, capsys):
    from tensorqa.agqa.options import shard_lock_name
    from tensorqa.outputs import output_lock

    out = tmp_path / "pool"
    with output_lock(out, shard_lock_name(0, 1)):  # a run in progress holds the shard
        error(capsys, "generate", store, "--out", out, "--templates", "objWhat", "--quiet",
              needles=(str(out), "another tensorqa run"))
    assert not (out / "data").exists() or not list((out / "data").iterdir())
    # released: a run goes through and leaves no lock file behind
    assert main(["generate", str(store), "--out", str(out), "--templates", "objWhat", "--quiet"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "data"]


def test_3_a_run_of_another_shard_count_is_refused_too(tmp_path, store, capsys):
    # a run writing 2 shards holds .lock-0000{0,1}-of-00002; a one-shard run takes another lock
    # file, so the folder-wide check refuses it (the two pools would mix)
    from tensorqa.agqa.options import shard_lock_name
    from tensorqa.outputs import output_lock

    out = tmp_path / "pool"
    with output_lock(out, shard_lock_name(0, 2)), output_lock(out, shard_lock_name(1, 2)):
        error(capsys, "generate", store, "--out", out, "--templates", "objWhat", "--quiet",
              needles=(str(out), "another tensorqa run", "2 shards"))
        error(capsys, "generate", store, "--out", out, "--templates", "objWhat", "--jobs", "3", "--quiet",
              needles=(str(out), "another tensorqa run"))
    assert not list(out.glob(".lock-*"))
    # a lock file left by a killed run (nobody holds it) does not stop a run
    (out / shard_lock_name(0, 7)).touch()
    assert main(["generate", str(store), "--out", str(out), "--templates", "objWhat", "--quiet"]) == 0


@pytest.mark.slow  # two real processes at once
def test_3_two_real_runs_at_once(tmp_path, store):
    """Two processes into one folder: one writes the pool, the other is refused (or, when it
    starts after the first is done, finds it complete); never a crash on a vanished .partial."""
    out = tmp_path / "pool"
    args = [sys.executable, "-m", "tensorqa.cli", "generate", str(store), "--out", str(out), "--quiet"]
    first = subprocess.Popen(args + ["--seed", "1"], stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    second = subprocess.run(args + ["--seed", "2"], capture_output=True, text=True)
    first_err = first.communicate()[1]
    assert first.returncode == 0, first_err
    if second.returncode != 0:
        assert_user_error(second, str(out))
    no_partials(out)
    assert not list(out.glob(".lock-*"))


# -- 4. --jobs: SIGTERM while starting, absurd counts, leaked semaphores ------------------------------------
@pytest.mark.slow  # job processes
def test_4_jobs_bounds(tmp_path, store, capsys):
    out = tmp_path / "pool"
    error(capsys, "generate", store, "--out", out, "--jobs", "100000", "--quiet", needles=("--jobs", "100,000"))
    assert not out.exists()
    # more processes than videos: one per video (3 shards), not 64 idle ones
    r = run("generate", store, "--out", out, "--templates", "objWhat", "--jobs", "64", "--quiet")
    assert r.returncode == 0, r.stderr
    assert len(list((out / "data").glob(".done-*-of-00003.json"))) == 3
    assert {p.name.split("-")[1] for p in (out / "data").glob("*.parquet")} == {"00000", "00001", "00002"}
    assert "leaked" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not list(out.glob(".lock-*"))


def test_4_sigterm_while_the_processes_start(tmp_path, store):
    out = tmp_path / "pool"
    p = subprocess.Popen([sys.executable, "-m", "tensorqa.cli", "generate", str(store), "--out", str(out),
                          "--templates", "objWhat", "--jobs", "3", "--quiet"], stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not list(out.glob(".lock-*")) and time.time() < deadline and p.poll() is None:
        time.sleep(0.02)  # the locks are taken just before the processes start
    p.send_signal(signal.SIGTERM)
    err = p.communicate(timeout=120)[1]
    assert "Traceback" not in err and "AssertionError" not in err and "leaked" not in err, err
    if p.returncode != 0:  # a run fast enough to end first is fine too
        lines = err.strip().splitlines()
        assert p.returncode in (2, -signal.SIGTERM) and len(lines) <= 1, err
    no_partials(out)


# -- 5. full disk -----------------------------------------------------------------------------------------
def _with_file_limit(tmp_path, limit, *args):
    script = tmp_path / "fsize.py"
    script.write_text(FSIZE)
    return subprocess.run([sys.executable, str(script), str(limit), *map(str, args)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=600)


@pytest.mark.slow  # every command under a file-size limit, each in its own process
def test_5_full_disk_names_the_file_and_leaves_no_partial(tmp_path, store):
    # RLIMIT_FSIZE makes every write past the limit fail (EFBIG) as a full disk does (ENOSPC)
    work = tmp_path / "w"
    work.mkdir()
    assert_user_error(_with_file_limit(work, 20_000, "pack", "--videos", "30", "--out", "x.h5", "--quiet"), "x.h5")
    assert_user_error(_with_file_limit(work, 2_000, "generate", store, "--out", "pool", "--templates", "objWhat",
                                       "--quiet"), "pool/data/")
    assert_user_error(_with_file_limit(work, 2_000, "export-agqa", store, "--out", "g.pkl", "--quiet"), "g.pkl")
    no_partials(work)
    assert not (work / "x.h5").exists() and not (work / "g.pkl").exists()


# -- 6. outputs checked before work ---------------------------------------------------------------------
def test_6_export_into_a_folder_is_refused_before_the_pickle_is_written(tmp_path, store, capsys):
    folder = tmp_path / "existing"
    folder.mkdir()
    (folder / "keep.txt").write_text("keep")
    error(capsys, "export-agqa", store, "--out", folder, needles=(str(folder), "is a folder"))
    assert [p.name for p in tmp_path.iterdir()] == ["existing"] and (folder / "keep.txt").read_text() == "keep"
    a_file = tmp_path / "a_file"
    a_file.write_text("keep")
    for args in (["baseline", "--pool", tmp_path / "nopool", "--kind", "random", "--out", a_file / "p.json"],
                 ["evaluate", "--hierarchies", tmp_path / "nohier", "--predictions", a_file, "--out", a_file],
                 ["decompose", tmp_path / "nopool", "--out", a_file, "--quiet"]):
        error(capsys, *args, needles=("a_file",))  # the output, before the missing input
    assert a_file.read_text() == "keep"


# -- 7. tampered stores --------------------------------------------------------------------------------------
def _tampered(tmp_path, store, change):
    path = tmp_path / "t.h5"
    shutil.copy(store, path)
    with h5py.File(path, "r+") as f:
        change(f)
    return path


def _replace(f, name, data):
    del f[name]
    f.create_dataset(name, data=data)


@pytest.mark.parametrize("case, needle", [
    ("rel_bits float", "'rel_bits' has dtype float64"),
    ("inst_cls out of vocabulary", "'inst_cls'"),
    ("num_frames too large", "'num_frames'"),
    ("num_frames negative", "'num_frames'"),
    ("duplicate video_id", "'video_id'"),
])
def test_7_tampered_stores_are_refused_on_open(tmp_path, store, capsys, case, needle):
    def change(f):
        if case == "rel_bits float":
            _replace(f, "rel_bits", f["rel_bits"][:].astype(np.float64))
        elif case == "inst_cls out of vocabulary":
            cls = f["inst_cls"][:]
            cls[0, 0] = 999
            _replace(f, "inst_cls", cls)
            n = f["num_inst"][:]
            n[0] = max(n[0], 1)
            _replace(f, "num_inst", n)
        elif case == "num_frames too large":
            n = f["num_frames"][:]
            n[1] = f["frame_ids"].shape[1] + 5
            _replace(f, "num_frames", n)
        elif case == "num_frames negative":
            n = f["num_frames"][:]
            n[2] = -1
            _replace(f, "num_frames", n)
        else:
            ids = f["video_id"][:]
            ids[1] = ids[0]
            _replace(f, "video_id", ids)

    bad = _tampered(tmp_path, store, change)
    for command in (["info", bad], ["generate", bad, "--out", tmp_path / "pool", "--quiet"]):
        error(capsys, *command, needles=(str(bad), needle))
    assert not (tmp_path / "pool").exists()


# -- 8. Charades CSV values ---------------------------------------------------------------------------------
@pytest.mark.parametrize("body, needle", [
    (b"id,actions,length\nAAAAA,c001 1.0 2.0,10\nBB\xff\xfeB,c001 1.0 2.0,10\n", ":3: not UTF-8"),
    (b"id,actions,length\nAAAAA,c001 nan 2.0,10\n", "not a finite number"),
    (b"id,actions,length\nAAAAA,c001 -3.0 2.0,10\n", "negative time"),
    (b"id,actions,length\nAAAAA,c001 1.0 2.0,inf\n", "length"),
])
def test_8_bad_charades_values(tmp_path, capsys, body, needle):
    csv = tmp_path / "Charades_v1_train.csv"
    csv.write_bytes(body)
    error(capsys, "pack", "--charades", csv, "--out", tmp_path / "x.h5", "--quiet", needles=(csv.name, needle))
    assert not (tmp_path / "x.h5").exists()
    no_partials(tmp_path)


# -- 9. bad flag values ------------------------------------------------------------------------------------
@pytest.mark.parametrize("command, args, needle", [
    ("generate", ["--seed", "-1"], "--seed"),
    ("generate", ["--device", "tpu"], "--device tpu"),
    ("generate", ["--num-shards", "0"], "--num-shards"),
    ("ablate", ["--ablate", "before=while", "--device", "tpu"], "--device tpu"),
    ("balance", ["--ratio-bound", "inf"], "ratio_bound"),
    ("balance", ["--shares", "query=nan"], "structure shares"),
    ("split", ["--max-steps", "-1"], "--max-steps"),
    ("baseline", ["--seed", "-1"], "--seed"),
    ("pack", ["--videos", "10000000000000"], "--videos"),
])
def test_9_bad_flag_values(tmp_path, store, pool, capsys, command, args, needle):
    out = tmp_path / "out"
    if command in ("generate", "ablate"):
        argv = [command, store, *([] if command == "ablate" else ["--out", out]), *args, "--quiet"]
    elif command == "baseline":
        argv = [command, "--pool", pool, "--kind", "random", "--out", out, *args]
    elif command == "pack":
        argv = [command, "--out", out, *args, "--quiet"]
    else:
        argv = [command, pool, "--out", out, *args, "--quiet"]
    start = time.perf_counter()
    error(capsys, *argv, needles=(needle,))
    assert time.perf_counter() - start < 60 and not out.exists()


def test_9_seed_and_device_errors_have_no_traceback(tmp_path, store):
    assert_user_error(run("generate", store, "--out", tmp_path / "p", "--seed", -1, "--quiet"), "--seed")
    assert_user_error(run("ablate", store, "--ablate", "before=while", "--device", "tpu", "--quiet"), "--device")


# -- 10. split / stats / decompose inputs -----------------------------------------------------------------
def test_10_split_inputs(tmp_path, pool, capsys):
    out = tmp_path / "out"
    binary = tmp_path / "train.txt"
    binary.write_bytes(b"\x00\xff\xfe\x01binary")
    error(capsys, "split", pool, "--out", out, "--train-videos", binary, "--quiet", needles=(binary.name,))
    for name, value, needle in (("steps.json", {"objWhat": "four"}, "objWhat"), ("steps.json", [1, 2], "JSON object"),
                                ("novel.json", [1], "JSON object"), ("novel.json", {"sequencing_actions": 5}, "sequencing_actions"),
                                ("novel.json", {"object_relation_pairs": [["cup"]]}, "object_relation_pairs")):
        path = tmp_path / name
        path.write_text(json.dumps(value))
        flag = "--steps-table" if name.startswith("steps") else "--novel"
        error(capsys, "split", pool, "--out", out, flag, path, "--quiet", needles=(flag, needle))
    assert not out.exists()


def test_10_stats_on_shards_that_disagree(tmp_path, pool, capsys):
    bad = tmp_path / "pool"
    shutil.copytree(pool, bad)
    shard = sorted((bad / "data").glob("train-*.parquet"))[0]
    other = bad / "data" / shard.name.replace("00000-of-00001", "00001-of-00002")
    table = pq.read_table(shard)
    # a complete 2-shard pool (both shards' files and done markers), whose shard 1 disagrees
    for f in (bad / "data").glob("*-of-00001*"):
        f.rename(f.with_name(f.name.replace("00000-of-00001", "00000-of-00002")))
    (bad / "data" / ".done-00001-of-00002.json").write_text("{}")
    pq.write_table(table.set_column(table.schema.get_field_index("steps"), "steps",
                                    table["steps"].cast(pa.int64())), other)
    error(capsys, "stats", bad, needles=(other.name, "'steps'"))
    pq.write_table(table.drop(["structural"]), other)
    error(capsys, "stats", bad, needles=(other.name, "structural"))


def test_10_decompose_of_a_program_nested_thousands_deep(tmp_path, pool, store):
    bad = tmp_path / "pool"
    shutil.copytree(pool, bad)
    shard = sorted((bad / "data").glob("train-*.parquet"))[0]
    table = pq.read_table(shard)
    deep = "Exists(" * 5000 + "cup" + ")" * 5000
    programs = [deep] + table["program"].to_pylist()[1:]
    pq.write_table(table.set_column(table.schema.get_field_index("program"), "program", pa.array(programs)), shard)
    line = assert_user_error(run("decompose", bad, "--out", tmp_path / "d", "--store", store, "--quiet"), "nests")
    assert len(line) < 400
    assert not (tmp_path / "d").exists()


# -- 11. a CSV named neither train nor test -----------------------------------------------------------------
def test_11_a_csv_without_split_in_its_name(tmp_path, capsys):
    csv = tmp_path / "charades.csv"
    csv.write_text("id,actions,length\nAAAAA,c001 1.0 2.0,10\n")
    line = error(capsys, "pack", "--charades", csv, "--out", tmp_path / "x.h5", "--quiet", needles=(csv.name, "train"))
    assert "split=" not in line  # no flag the command line does not have


# -- 12. decompose writes AGQA-Decomp's exact layout ----------------------------------------------------------
def test_12_the_hierarchy_folder_holds_only_agqa_decomp_files(tmp_path, pool, store, capsys):
    out = tmp_path / "d"
    assert main(["decompose", str(pool), "--out", str(out), "--limit", "2", "--quiet"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.iterdir()) == ["decompose", "hierarchies", "parquet"]
    folder = out / "hierarchies"
    entries = list(folder.iterdir())
    assert entries and all(p.is_file() for p in entries)
    assert all(re.fullmatch(r"[^/]+\.json", p.name) for p in entries) and (folder / "isolated.json").exists()
    # what the official evaluation does: open every entry but isolated.json as a JSON file
    for p in entries:
        if p.name != "isolated.json":
            with open(p) as f:
                assert isinstance(json.load(f), dict)
    # evaluate / baseline take the output folder or its hierarchies/ folder
    preds = tmp_path / "p.json"
    assert main(["baseline", "--hierarchies", str(out), "--kind", "most-likely", "--out", str(preds)]) == 0
    for h in (out, folder):
        assert main(["evaluate", "--hierarchies", str(h), "--predictions", str(preds)]) == 0
    capsys.readouterr()


# -- 13. Hugging Face datasets loads a pool with an empty split ----------------------------------------------
def test_13_datasets_loads_a_pool_whose_test_split_is_empty(tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    from tensorqa.scenes.pack import pack_scenes
    from tensorqa.scenes.synthetic import synthesize

    store = tmp_path / "train_only.h5"
    scenes = [dataclasses.replace(s, split="train") for s in synthesize(2, seed=4)]
    pack_scenes(scenes, store, source="test", progress=False)
    out = tmp_path / "pool"
    assert main(["generate", str(store), "--out", str(out), "--templates", "objWhat", "--quiet"]) == 0
    assert main(["balance", str(out), "--out", str(tmp_path / "bal"), "--quiet"]) == 0
    assert main(["split", str(tmp_path / "bal"), "--out", str(tmp_path / "split"), "--quiet"]) == 0
    capsys.readouterr()
    for folder in (out, tmp_path / "bal", tmp_path / "split"):
        assert not list((folder / "data").glob("test-*")) and list((folder / "data").glob("train-*.parquet"))
        card = (folder / "README.md").read_text()
        assert "split: train" in card and "split: test" not in card
        rows = pq.read_table(folder / "data").num_rows
        ds = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf-cache"))
        assert list(ds) == ["train"] and ds["train"].num_rows == rows > 0
        # the files alone, without the card: splits named by the file names
        ds = datasets.load_dataset("parquet", data_dir=str(folder / "data"), cache_dir=str(tmp_path / "hf-cache"))
        assert list(ds) == ["train"] and ds["train"].num_rows == rows


# -- 14. the documented tour's public API imports ---------------------------------------------------------------------
def test_14_every_name_of_the_documented_tour_imports():
    import importlib

    import tensorqa

    tour = (ROOT / "docs/benchmarks/agqa.md").read_text()  # the tour of the AGQA page
    names = sorted(set(re.findall(r"\btensorqa\.[A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9_]", tour)))
    assert "tensorqa.parse_program" in names and len(names) >= 4
    for name in names:
        parts = name.split(".")
        obj = importlib.import_module(parts[0])
        for i, part in enumerate(parts[1:], 1):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                obj = importlib.import_module(".".join(parts[: i + 1]))
        assert obj is not None, name
    assert tensorqa.parse_program("Exists(cup, Iterate(video, Filter(frame, [objects])))")
    assert callable(tensorqa.run_program) and {"parse_program", "run_program"} <= set(tensorqa.__all__)
