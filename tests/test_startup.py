"""Start-up: ``import tensorqa`` is light and changes nothing in the process; the command line's
process-wide set-up (:mod:`tensorqa.startup`) is made by ``tensorqa.cli.main`` alone. Each check
runs in a fresh interpreter, since this test session has long loaded torch and pyarrow."""

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("torch", "pyarrow", "h5py", "numba", "matplotlib", "pandas", "sympy", "triton")


def child(code: str, env: dict | None = None) -> str:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.parametrize("module", ["tensorqa", "tensorqa.cli", "tensorqa.agqa"])
def test_importing_loads_no_heavy_library(module):
    loaded = json.loads(child(f"import sys, json, {module}; "
                              f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"))
    assert loaded == []


def test_importing_tensorqa_changes_nothing_in_the_process():
    code = ("import gc, json, os; before = [dict(os.environ), gc.get_threshold(), gc.isenabled()]; "
            "import tensorqa, tensorqa.cli; after = [dict(os.environ), gc.get_threshold(), gc.isenabled()]; "
            "print(json.dumps([before, after]))")
    env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_PURGE_DELAY"}
    before, after = json.loads(child(code, env))
    assert before == after
    assert "MIMALLOC_PURGE_DELAY" not in after[0]


def test_public_names_load_on_first_use():
    import tensorqa

    code = ("import sys, tensorqa; names = {n: getattr(tensorqa, n) for n in tensorqa.__all__}; "
            "from tensorqa.scenes.store import open_store; from tensorqa.agqa.executor import run_program; "
            "print(names['open_store'] is open_store, names['run_program'] is run_program, 'torch' in sys.modules, "
            "set(tensorqa.__all__) <= set(dir(tensorqa)))")
    assert child(code) == "True True True True"
    assert set(tensorqa.__all__) == {"TensorQAError", "Vocab", "vocab", "SceneBatch", "VideoScene", "SceneStore",
                                     "open_store", "write_store", "export_agqa", "parse_program", "run_program"}
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        tensorqa.nothing  # noqa: B018
    from tensorqa import kernels  # a subpackage still imports through the package

    assert kernels.__name__ == "tensorqa.kernels"


def test_configure_process_keeps_arrows_freed_memory():
    # mimalloc reads MIMALLOC_PURGE_DELAY when pyarrow loads; a user's own value wins
    code = ("import os; from tensorqa.startup import configure_process; configure_process(); "
            "import pyarrow; print(os.environ['MIMALLOC_PURGE_DELAY'])")
    env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_PURGE_DELAY"}
    assert child(code, env) == "-1"
    env["MIMALLOC_PURGE_DELAY"] = "10"
    assert child(code, env) == "10"
    # too late once pyarrow is loaded: it says so and leaves the environment alone
    late = ("import os, pyarrow; from tensorqa.memory import keep_arrows_freed_memory; "
            "print(keep_arrows_freed_memory(), 'MIMALLOC_PURGE_DELAY' in os.environ)")
    env.pop("MIMALLOC_PURGE_DELAY")
    assert child(late, env) == "False False"


def test_the_command_line_sets_up_its_process(tmp_path):
    # main() makes the set-up before its command runs: a command that loads pyarrow sees it
    code = ("import os, sys; from tensorqa.cli import main; from tensorqa.cli.commands import COMMANDS; "
            "COMMANDS['info'] = (COMMANDS['info'][0], lambda a: print(os.environ.get('MIMALLOC_PURGE_DELAY')) or 0, ''); "
            f"sys.exit(main(['info', {str(tmp_path / 'x.h5')!r}]))")
    env = {k: v for k, v in os.environ.items() if k != "MIMALLOC_PURGE_DELAY"}
    assert child(code, env) == "-1"


def test_arrow_without_pandas_builds_and_writes_without_pandas(tmp_path):
    pytest.importorskip("pandas")
    out = tmp_path / "t.parquet"
    code = ("import sys, numpy as np; from tensorqa.startup import arrow_without_pandas; made = arrow_without_pandas(); "
            "import pyarrow as pa, pyarrow.parquet as pq; "
            "t = pa.table({'a': pa.array(np.arange(3)), 'b': pa.array(['x', 'y', 'z']), 'c': [1.5, None, 2.0]}); "
            f"pq.write_table(t, {str(out)!r}); back = pq.read_table({str(out)!r}); "
            "before = 'pandas' in sys.modules; df = back.to_pandas(); "  # what needs pandas still gets it
            "print(made, before, back.equals(t), list(df['b']), 'pandas' in sys.modules)")
    assert child(code) == "True False True ['x', 'y', 'z'] True"
    # where pandas (or pyarrow) is loaded already it does nothing
    assert child("import pandas; from tensorqa.startup import arrow_without_pandas; print(arrow_without_pandas())") \
        == "False"
    assert child("import pyarrow; from tensorqa.startup import arrow_without_pandas; print(arrow_without_pandas())") \
        == "False"
