"""Smoke tests of the benchmark scripts a device session runs unattended (``benchmarks/gpu_check.sh``):
they must not first fail on the GPU. Here on the CPU, on a few videos."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from tensorqa.grid import GridContext, evaluate
from tensorqa.pack import pack_default
from tensorqa.program_shapes import PROGRAM_SHAPES
from tensorqa.store import open_store

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return pack_default(tmp_path_factory.mktemp("bench") / "s.h5", videos=6, seed=2, progress=False)


def test_grid_bandwidth_with_profile(store, tmp_path):
    out = tmp_path / "bw.json"
    assert _script("grid_bandwidth").main(["--store", str(store), "--device", "cpu", "--batch-videos", "3", "6",
                                           "--repeats", "1", "--copy-gib", "0.01", "--profile",
                                           "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [r["batch_videos"] for r in result["runs"]] == [3, 6]
    for run in result["runs"]:
        assert run["videos"] == 6 and run["programs"] > 0 and run["vs_floor"] > 0
        profile = run["profile"]["templates"]
        assert set(profile) == set(PROGRAM_SHAPES) == set(run["per_template_seconds"])
        assert all(t["host_ops"] > 0 and t["kernels"] == 0 for t in profile.values())  # no GPU here


def test_grid_bandwidth_counts_a_shared_mask_once(store):
    """The pair templates share one ``real`` mask in a context: the second grid's bytes are its
    answer alone (its ``defined`` is that mask too)."""
    written_bytes = _script("grid_bandwidth").written_bytes
    with open_store(store) as src, torch.inference_mode():
        batch = next(src.blocks(6, 0, 6))
    ctx = GridContext(batch, "agqa")
    shared: list = []
    first = written_bytes(evaluate("andObjRelExists", batch, "agqa", context=ctx), shared)
    second = evaluate("xorObjRelExists", batch, "agqa", context=ctx)
    assert second.real is shared[0] and second.defined is second.real
    assert written_bytes(second, shared) == second.answer.numel() * 8 == first - second.real.numel()
