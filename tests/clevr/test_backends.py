"""numba is an optional extra: without it every CLEVR output comes from the torch backend, the same
bytes as the numba backend's."""

from __future__ import annotations

import sys

import pyarrow.parquet as pq
import pytest

from tensorqa.clevr.generate import Options, generate_store
from tensorqa.errors import TensorQAError
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_store import write_static_store


def _hide_numba(monkeypatch):
    """``import numba`` (and the store's compiled name parser) raise ImportError from here on."""
    for name in [m for m in sys.modules if m == "numba" or m.startswith("numba.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.setitem(sys.modules, "tensorqa.scenes.image_indices", None)


def test_without_numba_the_torch_backend_writes_the_numba_backends_questions(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    store = write_static_store(tmp_path / "s.h5", sample_scenes(40, seed=3))
    with_numba = generate_store(store, tmp_path / "numba.json", opt=Options())
    generate_store(store, tmp_path / "numba_pq", fmt="parquet", opt=Options())
    _hide_numba(monkeypatch)
    with pytest.raises(ImportError):
        import numba  # noqa: F401
    store2 = write_static_store(tmp_path / "s2.h5", sample_scenes(40, seed=3))  # packing needs no numba either
    without = generate_store(store2, tmp_path / "torch.json", opt=Options())
    generate_store(store2, tmp_path / "torch_pq", fmt="parquet", opt=Options())
    assert (with_numba["engine"], without["engine"]) == ("compiled", "torch")
    assert without["questions"] == with_numba["questions"] > 40
    assert (tmp_path / "torch.json").read_bytes() == (tmp_path / "numba.json").read_bytes()
    rows = [[pq.read_table(f).to_pylist() for f in sorted((tmp_path / d / "data").glob("*.parquet"))]
            for d in ("numba_pq", "torch_pq")]
    assert rows[0] and rows[0] == rows[1]
    # one Parquet writer for both backends: the same files, byte for byte
    files = [sorted((tmp_path / d / "data").glob("*.parquet")) for d in ("numba_pq", "torch_pq")]
    assert [f.name for f in files[0]] == [f.name for f in files[1]]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(*files))
    with pytest.raises(TensorQAError, match=r"needs numba"):
        generate_store(store2, tmp_path / "x.json", opt=Options(engine="compiled"))


def test_the_numba_path_imports_no_torch(tmp_path):
    """The whole command on the numba backend never imports torch (its import was most of the start-up)."""
    import subprocess

    pytest.importorskip("numba")
    store = write_static_store(tmp_path / "s.h5", sample_scenes(5, seed=1))
    code = ("import sys\nfrom tensorqa.cli import main\n"
            f"rc = main(['generate', {str(store)!r}, '--out', {str(tmp_path / 'q.json')!r}])\n"
            "print(rc, sorted(m for m in ('torch', 'triton') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "0 []", out
    assert "compiled engine" in out
