"""The command line: real runs on small inputs, and one-line errors (no traceback) for bad input."""

import subprocess
import sys

import pytest
from helpers import run_tensorqa as tensorqa  # in this process; the tests of a real process start one


def tensorqa_process(*args, cwd=None):
    """``tensorqa ARGS`` as a user runs it: a new interpreter through the package's entry point."""
    return subprocess.run([sys.executable, "-m", "tensorqa.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_a_user_error_in_a_real_process(tmp_path):
    # the entry point end to end: one line on stderr, exit 2, no traceback
    assert_user_error(tensorqa_process("info", tmp_path / "nope.h5"), "nope.h5", "no such file")


def assert_user_error(result, *needles):
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tensorqa: error: "), result.stderr
    assert "Traceback" not in result.stderr
    for n in needles:
        assert n in lines[0]


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "small.h5"
    r = tensorqa("pack", "--videos", 40, "--seed", 3, "--out", path, "--quiet")
    assert r.returncode == 0, r.stderr
    assert "40 videos" in r.stdout
    return path


def test_pack_and_info(small_store):
    r = tensorqa("info", small_store)
    assert r.returncode == 0, r.stderr
    assert "videos            40" in r.stdout and "vocab" in r.stdout
    r = tensorqa("info", small_store, "--json")
    import json

    info = json.loads(r.stdout)
    assert info["videos"] == 40 and info["source"] == "default" and info["keyframes"] > 40


def test_a_closed_pipe_ends_quietly(small_store):
    """``tensorqa info store | head -1``: the reader closes the pipe before the command prints; the
    command stops with SIGPIPE's status (141, as a shell reports) and no traceback."""
    p = subprocess.Popen([sys.executable, "-m", "tensorqa.cli", "info", str(small_store)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # before the interpreter has even imported tensorqa
    err = p.stderr.read().decode()
    assert p.wait() == 141 and err == "", err


def test_pack_charades_real_csv(tmp_path, shared_data):
    # the real test CSV: 1,863 videos with their real action intervals
    out = tmp_path / "charades.h5"
    r = tensorqa("pack", "--charades", shared_data / "charades/Charades_v1_test.csv", "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    assert "1,863 videos" in r.stdout


def test_missing_inputs(tmp_path):
    assert_user_error(tensorqa("info", tmp_path / "nope.h5"), "nope.h5", "no such file")
    assert_user_error(tensorqa("pack", "--charades", tmp_path / "nope.csv", "--out", tmp_path / "x.h5"), "nope.csv")
    assert_user_error(tensorqa("pack", "--agqa-stsgs", tmp_path / "nope.pkl", "--out", tmp_path / "x.h5"), "nope.pkl")
    csv = tmp_path / "Charades_v1_test.csv"  # a well-formed one-video CSV: the Action Genome folder is what is missing
    csv.write_text("id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length\n"
                   "AB12C,s,Kitchen,6,7,Yes,x,cup,x,c061 1.0 5.0,20.0\n")
    assert_user_error(tensorqa("pack", "--action-genome", tmp_path, "--charades", csv, "--out", tmp_path / "x.h5"))


def test_wrong_format_inputs(tmp_path):
    text = tmp_path / "notes.h5"
    text.write_text("hello")
    assert_user_error(tensorqa("info", text), "notes.h5", "HDF5")
    csv = tmp_path / "bad.csv"
    csv.write_text("id,actions,length\nAAAAA,c999 1.0 2.0,10\n")
    assert_user_error(tensorqa("pack", "--charades", csv, "--out", tmp_path / "x.h5"), "bad.csv")


def test_truncated_store(tmp_path, small_store):
    data = small_store.read_bytes()
    cut = tmp_path / "cut.h5"
    cut.write_bytes(data[: len(data) // 3])
    assert_user_error(tensorqa("info", cut), "cut.h5")


def test_impossible_parameters(tmp_path):
    assert_user_error(tensorqa("pack", "--videos", 0, "--out", tmp_path / "x.h5"), "--videos")
    assert_user_error(tensorqa("pack", "--videos", 5, "--out", tmp_path / "no/such/dir/x.h5"), "does not exist")


@pytest.mark.parametrize("args, needle", [
    (["--max-videos", 0], "--max-videos"), (["--max-videos", -3], "--max-videos"),
    (["--batch-videos", 0], "--batch-videos"), (["--jobs", 0], "--jobs"), (["--threads", 0], "--threads"),
    (["--num-shards", 2, "--shard-index", 2], "shard index 2"), (["--templates", "objNope"], "objNope"),
])
def test_impossible_generate_parameters(tmp_path, small_store, args, needle):
    out = tmp_path / "pool"
    assert_user_error(tensorqa("generate", small_store, "--out", out, "--quiet", *args), needle)
    assert not out.exists()  # refused before anything is written


def test_failed_pack_keeps_the_existing_store(tmp_path, small_store):
    out = tmp_path / "keep.h5"
    out.write_bytes(small_store.read_bytes())
    before = out.read_bytes()
    csv = tmp_path / "bad.csv"
    csv.write_text("id,actions,length\nAAAAA,c999 1.0 2.0,10\n")
    assert_user_error(tensorqa("pack", "--charades", csv, "--out", out))
    assert out.read_bytes() == before
    assert not list(tmp_path.glob("*.partial"))


@pytest.fixture(scope="module")
def small_pool(tmp_path_factory, small_store):
    out = tmp_path_factory.mktemp("cli") / "pool"
    r = tensorqa("generate", small_store, "--out", out, "--max-videos", 6, "--quiet")
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("command, args, needle", [
    ("balance", ["--shard-rows", 0], "shard_rows"), ("balance", ["--ratio-bound", 0.5], "ratio_bound"),
    ("balance", ["--ratio-bound", "nan"], "ratio_bound"), ("balance", ["--max-steps", 0], "max_steps"),
    ("split", ["--shard-rows", -5], "shard_rows"),
])
def test_impossible_pool_parameters(tmp_path, small_pool, command, args, needle):
    out = tmp_path / "out"
    assert_user_error(tensorqa(command, small_pool, "--out", out, "--quiet", *args), needle)
    assert not out.exists()  # refused before the pool is read


@pytest.mark.parametrize("args, needle", [
    (["--overlap-margin", -1], "--overlap-margin"), (["--overlap-margin", "nan"], "--overlap-margin"),
    (["--fps", 30], "--fps"),  # frame rates belong to Action Genome frame numbers
])
def test_impossible_pack_parameters(tmp_path, args, needle):
    out = tmp_path / "x.h5"
    assert_user_error(tensorqa("pack", "--videos", 3, "--out", out, "--quiet", *args), needle)
    assert not out.exists()


def test_output_paths_that_cannot_be_written(tmp_path, small_store, small_pool):
    # a file where a folder goes, a folder where a file goes, a path under a file: one line each
    a_file = tmp_path / "a_file"
    a_file.write_text("keep me")
    assert_user_error(tensorqa("generate", small_store, "--out", a_file, "--quiet"), "is a file")
    assert_user_error(tensorqa("pack", "--videos", 2, "--out", tmp_path, "--quiet"), "is a folder")
    assert_user_error(tensorqa("pack", "--videos", 2, "--out", a_file / "x.h5", "--quiet"), "a_file")
    assert_user_error(tensorqa("balance", small_pool, "--out", a_file / "balanced", "--quiet"), "a_file")
    assert_user_error(tensorqa("split", small_pool, "--out", a_file, "--quiet"), "a_file")
    assert a_file.read_text() == "keep me"


@pytest.mark.parametrize("damage", ["truncated", "not parquet"])
def test_damaged_pool_shards(tmp_path, small_pool, damage):
    import shutil

    pool = tmp_path / "pool"
    shutil.copytree(small_pool, pool)
    shard = sorted((pool / "data").glob("train-*.parquet"))[0]
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2] if damage == "truncated" else b"hello")
    for args in (["stats", pool], ["balance", pool, "--out", tmp_path / "b", "--quiet"],
                 ["split", pool, "--out", tmp_path / "s", "--quiet"],
                 ["decompose", pool, "--out", tmp_path / "d", "--limit", 1, "--quiet"],
                 ["baseline", "--pool", pool, "--kind", "random", "--out", tmp_path / "p.json"]):
        assert_user_error(tensorqa(*args), shard.name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pool"]  # nothing written


def test_every_help_answers_without_loading_the_machinery():
    # each command imports its machinery when it runs: the parser and every --help load none of it
    code = ("import contextlib, io, json, sys; from tensorqa.cli import build_parser; from tensorqa.cli.commands import COMMANDS\n"
            "said = {}\n"
            "for argv in [[]] + [[name] for name in COMMANDS]:\n"
            "    out = io.StringIO()\n"
            "    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
            "        build_parser().parse_args(argv + ['--help'])\n"
            "    said[' '.join(argv)] = out.getvalue()\n"
            "heavy = sorted(m for m in ('torch', 'pyarrow', 'h5py', 'numba', 'matplotlib', 'pandas') if m in sys.modules)\n"
            "print(json.dumps([said, heavy]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import json

    said, heavy = json.loads(r.stdout)
    assert heavy == []
    assert len(said) == 16  # tensorqa and its 15 commands
    for name, text in said.items():
        assert text.startswith(f"usage: tensorqa {name}".rstrip()), (name, text[:80])
    assert all(f"    {name}" in said[""] for name in said if name)  # the top level lists each command
    for cmd in ([], ["generate"], ["show"]):  # the real entry point, as a user runs it
        r = tensorqa_process(*cmd, "--help")
        assert r.returncode == 0 and r.stdout.startswith("usage: tensorqa") and not r.stderr, r.stderr
