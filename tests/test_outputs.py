"""The output layer (tensorqa/outputs.py) over every command: names from data never leave --out,
writes never follow links planted inside it, no output replaces an input, incomplete pools are
refused by every reader, and a refused write (a full disk) ends in one line naming the file with no
partial or half-written file left; SIGINT / SIGTERM leave no partial file either."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tensorqa.cli import main
from tensorqa.errors import TensorQAError
from tensorqa.outputs import file_name, new_file, output_folder, output_path, write_atomic


def one_error(capsys, argv, *needles) -> str:
    """``main(argv)`` is 2 with one ``tensorqa: error:`` line holding every needle."""
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tensorqa: error: "), err
    for n in needles:
        assert str(n) in err[0], (n, err[0])
    return err[0]


def digest(path: Path) -> str:
    """SHA-256 of a file, or of a folder's files (names and bytes)."""
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if p.is_file():
            h.update(str(p.relative_to(path) if path.is_dir() else p.name).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A 3-video store, a 2-template pool, its decomposition and random predictions."""
    d = tmp_path_factory.mktemp("outputs")
    assert main(["pack", "--videos", "3", "--seed", "1", "--out", str(d / "s.h5"), "--quiet"]) == 0
    assert main(["generate", str(d / "s.h5"), "--out", str(d / "pool"), "--templates", "objWhat", "relTime",
                 "--quiet"]) == 0
    assert main(["decompose", str(d / "pool"), "--out", str(d / "dec"), "--quiet"]) == 0
    assert main(["baseline", "--hierarchies", str(d / "dec"), "--kind", "random", "--out", str(d / "pred.json")]) == 0
    (d / "scores.json").write_text(json.dumps([{"id": "a", "caption_score": 0.6, "foil_score": 0.4}]))
    return d


def clevr_scenes(path: Path, split: str, scenes: int = 4) -> Path:
    """A CLEVR scenes file of three objects per scene, every scene of ``split``."""
    objects = [{"color": "red", "size": "large", "shape": "cube", "material": "rubber", "3d_coords": [1, 2, 0.5]},
               {"color": "blue", "size": "small", "shape": "sphere", "material": "metal", "3d_coords": [-1, 0, 0.3]},
               {"color": "green", "size": "large", "shape": "cylinder", "material": "rubber",
                "3d_coords": [0, -2, 0.5]}]
    rels = {"left": [[1], [], [0, 1]], "right": [[2], [0, 2], []], "front": [[2], [0, 2], []],
            "behind": [[1], [], [0, 1]]}
    path.write_text(json.dumps({"info": {"split": split}, "scenes": [
        {"image_filename": f"CLEVR_x_{i:06d}.png", "split": split, "objects": objects, "relationships": rels}
        for i in range(scenes)]}))
    return path


# ---- 1. names from data ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["", ".", "..", "../x", "/abs/dir/ABS", "a/b", "a\\b", "a\0b", "..\\x"])
def test_a_name_that_is_not_one_file_name_is_refused(tmp_path, name):
    with pytest.raises(TensorQAError, match="cannot be a file name"):
        file_name(name, tmp_path, "split")
    with pytest.raises(TensorQAError):
        output_path(tmp_path, name)


@pytest.mark.parametrize("name", ["train", "val", "CLEVR_val_000001.png", "..x", "x..", "a b"])
def test_a_plain_name_lands_inside_the_folder(tmp_path, name):
    assert output_path(tmp_path, name) == tmp_path / name


def test_a_path_through_a_linked_subfolder_is_outside(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "data").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(TensorQAError, match="outside the output folder"):
        output_path(tmp_path / "out", "data", "train.parquet")
    with pytest.raises(TensorQAError, match="symbolic link"):
        output_folder(tmp_path / "out" / "data", tmp_path / "out")


@pytest.mark.parametrize("engine", ["torch", "compiled"])
@pytest.mark.parametrize("split", ["ABSOLUTE", "../x", "..", "a/b"])
def test_a_clevr_split_never_becomes_a_path_outside_out(tmp_path, capsys, engine, split):
    """Issue 34 item 1: a scene file's split ``/abs/dir/ABS`` or ``../x`` wrote outside --out."""
    if split == "ABSOLUTE":
        (tmp_path / "victim").mkdir()
        split = str(tmp_path / "victim" / "ABS")
    scenes = clevr_scenes(tmp_path / "S.json", split)
    work = tmp_path / "run"
    work.mkdir()
    if main(["pack", "--clevr-scenes", str(scenes), "--out", str(work / "c.h5")]) != 0:  # refused where read
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
        return
    before = files_under(tmp_path)
    out = work / "out" / "pool"
    one_error(capsys, ["generate", work / "c.h5", "--out", out, "--format", "parquet", "--engine", engine,
                       "--quiet"], "split")
    made = files_under(tmp_path) - before
    assert all(out in p.parents for p in made), made  # nothing outside --out
    assert not [p for p in made if p.name.endswith(".partial")]


# ---- 2. links planted inside --out -----------------------------------------------------------------------

def test_new_file_and_rename_replace_a_link_never_its_target(tmp_path):
    target = tmp_path / "target"
    target.write_text("SECRET")
    (tmp_path / "a.partial").symlink_to(target)
    os.close(new_file(tmp_path / "a.partial"))
    assert target.read_text() == "SECRET" and not (tmp_path / "a.partial").is_symlink()
    (tmp_path / "b").symlink_to(target)
    write_atomic(tmp_path / "b", "new")
    assert target.read_text() == "SECRET" and (tmp_path / "b").read_text() == "new"
    assert not (tmp_path / "b").is_symlink()


def _plant(out: Path, name: str, target: Path) -> None:
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    (out / name).symlink_to(target)


LINKED_FILES = [  # (command line with OUT for --out, link planted at OUT/<name>)
    (["generate", "{s}", "--out", "OUT", "--templates", "objWhat", "--quiet"], "README.md"),
    (["generate", "{s}", "--out", "OUT", "--templates", "objWhat", "--quiet"], "data/train-00000-of-00001.parquet"),
    (["generate", "{s}", "--out", "OUT", "--templates", "objWhat", "--quiet"],
     "data/train-00000-of-00001.parquet.partial"),
    (["generate", "{s}", "--out", "OUT", "--templates", "objWhat", "--quiet"], "data/.done-00000-of-00001.json.partial"),
    (["generate", "{s}", "--out", "OUT", "--templates", "objWhat", "--format", "agqa-json", "--quiet"],
     "agqa/train-00000-of-00001.json.partial"),
    (["balance", "{pool}", "--out", "OUT", "--quiet"], "data/train-00000-of-00001.parquet.partial"),
    (["split", "{pool}", "--out", "OUT", "--quiet"], "README.md"),
    (["evaluate", "--hierarchies", "{dec}", "--predictions", "{pred}", "--out", "OUT"], "accuracy.csv"),
    (["evaluate", "--hierarchies", "{dec}", "--predictions", "{pred}", "--out", "OUT"], "summary.json.partial"),
    (["baseline", "--pool", "{pool}", "--kind", "random", "--out", "OUT/p.json"], "p.json.partial"),
    (["report", "{pool}", "--out", "OUT"], "summary.json"),
    (["foils", "{s}", "--out", "OUT", "--max-videos", "3", "--quiet"], "meta.json"),
    (["ablate", "{s}", "--ablate", "before=while", "--out", "OUT/a.json", "--quiet"], "a.json.partial"),
]


@pytest.mark.parametrize("argv, name", LINKED_FILES, ids=[f"{a[0]}-{n}" for a, n in LINKED_FILES])
def test_a_link_planted_in_out_is_replaced_not_written_through(work, tmp_path, capsys, argv, name):
    """Issue 34 item 2: ``evaluate --out ev`` with ev/accuracy.csv a link wrote the CSV into its target."""
    target = tmp_path / "target"
    target.write_text("SECRET")
    out = tmp_path / "OUT"
    _plant(out, name, target)
    args = [a.format(s=work / "s.h5", pool=work / "pool", dec=work / "dec", pred=work / "pred.json")
            .replace("OUT", str(out)) for a in argv]
    assert main(args) == 0, capsys.readouterr().err
    assert target.read_text() == "SECRET"
    assert not (out / name).is_symlink()


LINKED_FOLDERS = [
    (["generate", "{s}", "--out", "OUT", "--templates", "objWhat", "--quiet"], "data"),
    (["generate", "{s}", "--out", "OUT", "--templates", "objWhat", "--format", "agqa-json", "--quiet"], "agqa"),
    (["balance", "{pool}", "--out", "OUT", "--quiet"], "data"),
    (["split", "{pool}", "--out", "OUT", "--quiet"], "data"),
    (["foils", "{s}", "--out", "OUT", "--max-videos", "3", "--quiet"], "valse"),
]


@pytest.mark.parametrize("argv, name", LINKED_FOLDERS, ids=[f"{a[0]}-{n}" for a, n in LINKED_FOLDERS])
def test_a_linked_subfolder_is_refused_or_replaced(work, tmp_path, capsys, argv, name):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("SECRET")
    out = tmp_path / "OUT"
    _plant(out, name, elsewhere)
    args = [a.format(s=work / "s.h5", pool=work / "pool").replace("OUT", str(out)) for a in argv]
    rc = main(args)
    err = capsys.readouterr().err.strip().splitlines()
    if rc == 2:
        assert len(err) == 1 and "symbolic link" in err[0] and str(out / name) in err[0], err
    else:
        assert rc == 0 and not (out / name).is_symlink()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep"] and (elsewhere / "keep").read_text() == "SECRET"


# ---- 3. an output is never an input ---------------------------------------------------------------------

SAME_AS_INPUT = [  # the output argument is the input (X)
    ["export-agqa", "X", "--out", "X"],
    ["ablate", "X", "--ablate", "before=while", "--out", "X", "--quiet"],
    ["ablate", "X", "--ablate", "before=while", "--questions", "X", "--quiet"],
    ["score-foils", "X", "--out", "X"],
    ["pack", "--charades", "X", "--out", "X", "--quiet"],
    ["pack", "--clevr-scenes", "X", "--out", "X"],
    ["generate", "X", "--out", "X", "--quiet"],
    ["show", "X", "v", "--out", "X"],
    ["balance", "P", "--out", "P", "--quiet"],
    ["split", "P", "--out", "P/", "--quiet"],
    ["decompose", "P", "--out", "P", "--quiet"],
    ["report", "P", "--out", "P"],
]


@pytest.mark.parametrize("argv", SAME_AS_INPUT, ids=[" ".join(a[:2]) + " " + a[-2] for a in SAME_AS_INPUT])
def test_an_output_that_is_an_input_is_refused(work, tmp_path, capsys, monkeypatch, argv):
    """Issue 34 item 3: ``export-agqa s.h5 --out s.h5`` replaced the store, exit 0."""
    x = tmp_path / "in.h5"
    x.write_bytes((work / "s.h5").read_bytes())
    pool = work / "pool"
    before = digest(x), digest(pool)
    monkeypatch.chdir(tmp_path)  # the input by its full path, the output as ./in.h5: one file named two ways
    args, seen = [], False
    for a in argv:
        if a == "X":
            args.append("./in.h5" if seen else str(x))
            seen = True
        else:
            args.append(str(pool) + a[1:] if a.startswith("P") else a)
    one_error(capsys, args, "is the input")
    assert (digest(x), digest(pool)) == before


def test_an_input_inside_the_output_folder_is_never_replaced(work, tmp_path, capsys):
    """The store named as a file the command writes in its output folder: refused, left whole."""
    store = tmp_path / "out" / "pairs.parquet"
    store.parent.mkdir()
    store.write_bytes((work / "s.h5").read_bytes())
    before = digest(store)
    one_error(capsys, ["foils", store, "--out", store.parent, "--max-videos", "3", "--quiet"], "input of this run")
    assert digest(store) == before and not (store.parent / "valse").exists()


# ---- 6. incomplete pools ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def half_pool(work):
    """Shard 1 of 2 written, shard 0 never (its run was killed)."""
    out = work / "half"
    assert main(["generate", str(work / "s.h5"), "--out", str(out), "--templates", "objWhat", "--num-shards", "2",
                 "--shard-index", "1", "--quiet"]) == 0
    return out


READERS = [["stats", "H"], ["report", "H", "--out", "R"], ["baseline", "--pool", "H", "--kind", "random", "--out", "R"],
           ["balance", "H", "--out", "R", "--quiet"], ["split", "H", "--out", "R", "--quiet"],
           ["decompose", "H", "--out", "R", "--quiet"]]


@pytest.mark.parametrize("argv", READERS, ids=[a[0] for a in READERS])
def test_every_pool_reader_refuses_an_incomplete_pool(half_pool, tmp_path, capsys, argv):
    """Issue 34 item 6: stats, report and baseline --pool read a pool missing shard 0 of 2 as complete."""
    args = [{"H": str(half_pool), "R": str(tmp_path / "r")}.get(a, a) for a in argv]
    one_error(capsys, args, half_pool, "incomplete pool", "00000 of 00002")


def test_a_shard_whose_done_marker_is_missing_is_incomplete(work, tmp_path, capsys):
    """Files renamed into place, then killed before the marker: the shard is not complete."""
    import shutil

    pool = tmp_path / "pool"
    shutil.copytree(work / "pool", pool)
    for f in (pool / "data").iterdir():
        f.rename(f.with_name(f.name.replace("-of-00001", "-of-00002")))
    (pool / "data" / ".done-00000-of-00002.json").rename(pool / "data" / ".done-00001-of-00002.json")
    for f in (pool / "data").glob("*-00001-of-00002.parquet"):
        f.rename(f.with_name(f.name.replace("-00001-of", "-00000-of")))
    shutil.copy(next((pool / "data").glob("train-*")), pool / "data" / "train-00001-of-00002.parquet")
    one_error(capsys, ["stats", pool], "incomplete pool", ".done-00000-of-00002.json")


# ---- 13. a refused write, interrupts ---------------------------------------------------------------------

# A full disk, simulated by a file-size limit of 0 bytes: every write to a file fails (EFBIG)
_LIMITED = ("import resource, signal, sys, tempfile\n"
            "from tensorqa.cli import main\n"
            "tempfile.gettempdir()\n"  # it probes the folder by writing a file
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))\n"
            "sys.exit(main(sys.argv[1:]))\n")

FULL = [  # (command line with O for the output, the file the one line must name)
    (["pack", "--videos", "3", "--out", "O/s.h5", "--quiet"], "O/s.h5"),
    (["export-agqa", "{s}", "--out", "O/g.pkl"], "O/g.pkl"),
    (["generate", "{s}", "--out", "O", "--templates", "objWhat", "--quiet"], "O/data/train-00000-of-00001.parquet"),
    (["generate", "{s}", "--out", "O", "--templates", "objWhat", "--format", "agqa-json", "--quiet"],
     "O/agqa/train-00000-of-00001.json"),
    (["balance", "{pool}", "--out", "O", "--quiet"], "O/data/train-00000-of-00001.parquet"),
    (["split", "{pool}", "--out", "O", "--quiet"], "O/data/train-00000-of-00001.parquet"),
    (["evaluate", "--hierarchies", "{dec}", "--predictions", "{pred}", "--out", "O"], "O/accuracy.csv"),
    (["baseline", "--pool", "{pool}", "--kind", "random", "--out", "O/p.json"], "O/p.json"),
    (["baseline", "--hierarchies", "{dec}", "--kind", "random", "--out", "O/p.json"], "O/p.json"),
    (["ablate", "{s}", "--ablate", "before=while", "--questions", "O/q.parquet", "--quiet"], "O/q.parquet"),
    (["ablate", "{s}", "--ablate", "before=while", "--out", "O/a.json", "--quiet"], "O/a.json"),
    (["foils", "{s}", "--out", "O", "--max-videos", "3", "--quiet"], "O/valse/"),
    (["score-foils", "{scores}", "--out", "O/m.json"], "O/m.json"),
    (["report", "{pool}", "--out", "O"], "O/summary.json"),
    (["show", "{s}", "{video}", "--out", "O/v.html"], "O/v.html"),
    (["decompose", "{pool}", "--out", "O/d", "--quiet"], "O/d.partial/"),
    (["pack", "--clevr", "20", "--out", "O/c.h5"], "O/c.h5"),
    (["generate", "{c}", "--out", "O/q.json", "--engine", "torch", "--quiet"], "O/q.json"),
    (["generate", "{c}", "--out", "O", "--format", "parquet", "--engine", "torch", "--quiet"], "O/data/train-00000"),
    (["generate", "{c}", "--out", "O", "--format", "parquet", "--engine", "compiled", "--quiet"], "O/data/train-00000"),
]


@pytest.fixture(scope="module")
def clevr_store(work):
    path = work / "c.h5"
    assert main(["pack", "--clevr", "20", "--out", str(path)]) == 0
    return path


@pytest.mark.slow  # an interpreter per command (about a minute on 2 cores)
@pytest.mark.parametrize("argv, named", FULL, ids=[" ".join(a[:1] + a[-2:]) for a, _ in FULL])
def test_a_refused_write_names_the_file_and_leaves_nothing_half_written(work, clevr_store, tmp_path, argv, named):
    """Issue 34 item 13: on a full disk every command ends in one line naming the file; no
    final-named file is left half-written, no ``.partial`` file stays."""
    from tensorqa.scenes.store import open_store

    with open_store(work / "s.h5") as s:
        video = s.video_ids[0]
    out = tmp_path / "O"
    args = [str(out) + a[1:] if a == "O" or a.startswith("O/") else
            a.format(s=work / "s.h5", pool=work / "pool", dec=work / "dec", pred=work / "pred.json", c=clevr_store,
                     video=video, scores=work / "scores.json") for a in argv]
    r = subprocess.run([sys.executable, "-c", _LIMITED, *args], capture_output=True, text=True,
                       env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=600)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(err) == 1 and err[0].startswith("tensorqa: error: "), r.stderr
    assert str(out) + named[1:] in err[0], (named, err[0])
    # no file stays (a resumable decompose keeps its DIR.partial stage, as documented)
    left = [p for p in files_under(tmp_path) if out / "d.partial" not in p.parents]
    assert left == [], left


@pytest.mark.slow  # a 30-video run interrupted twice (about 20 s)
@pytest.mark.parametrize("sig, code, line", [(signal.SIGINT, 130, "tensorqa: interrupted (SIGINT)"),
                                             (signal.SIGTERM, 143, "tensorqa: terminated (SIGTERM)")])
def test_an_interrupt_leaves_no_partial_file(tmp_path, sig, code, line):
    """Issue 34 item 13: after SIGINT / SIGTERM no ``.partial`` stays; SIGTERM with --jobs 1 says so."""
    assert main(["pack", "--videos", "30", "--out", str(tmp_path / "s.h5"), "--quiet"]) == 0
    out = tmp_path / "pool"
    p = subprocess.Popen([sys.executable, "-m", "tensorqa.cli", "generate", str(tmp_path / "s.h5"), "--out", str(out),
                          "--jobs", "1", "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline = time.monotonic() + 120
    while not list(out.glob("data/*.partial")) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, "the run ended before it could be interrupted"
    p.send_signal(sig)
    err = p.communicate(timeout=120)[1].strip().splitlines()
    assert p.returncode == code and err == [line], (p.returncode, err)
    assert not [f for f in out.rglob("*") if ".partial" in f.name]
    assert not list(out.glob("data/*.parquet"))  # no final-named file of the interrupted shard
