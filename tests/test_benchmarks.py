"""Smoke tests of the benchmark scripts a device session runs unattended (``benchmarks/gpu_check.sh``):
they must not first fail on the GPU. Here on the CPU, on a few videos."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from tensorqa.agqa.grid import GridContext, evaluate
from tensorqa.scenes.pack import pack_default
from tensorqa.agqa.shapes import PROGRAM_SHAPES
from tensorqa.scenes.store import open_store
from helpers import REPO

BENCHMARKS = REPO / "benchmarks"
# templates whose grid is another's (evaluated first): the same computation, different rules
SHARED_GRIDS = {"objFirstChoose": "objWhatChoose", "actWhatBefore": "actWhatAfterAll"}


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
        # the bytes touched include at least the answer grids written once
        assert run["touched_gb"] >= run["grid_output_gb"] and run["vs_touched"] > 0
        assert set(run["touched_gb_per_template"]) == set(PROGRAM_SHAPES)
        profile = run["profile"]["templates"]
        assert set(profile) == set(PROGRAM_SHAPES) == set(run["per_template_seconds"])
        assert all(t["kernels"] == 0 for t in profile.values())  # no GPU here
        # a template that reuses another's grid may launch no op of its own
        assert all(t["host_ops"] > 0 for k, t in profile.items() if k not in SHARED_GRIDS)


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
    assert second.real is shared[2]() and second.defined is second.real
    assert written_bytes(second, shared) == second.answer.numel() * 8 == first - second.real.numel()


@pytest.mark.parametrize("second, first", SHARED_GRIDS.items())
def test_grid_bandwidth_counts_a_shared_grid_once(store, second, first):
    """objWhatChoose and objFirstChoose choose alike, and actWhatAfterAll and actWhatBefore are one
    program: the context evaluates each grid once, and the second template's tensors (answer,
    defined, real) are the first's, written once."""
    written_bytes = _script("grid_bandwidth").written_bytes
    with open_store(store) as src, torch.inference_mode():
        batch = next(src.blocks(6, 0, 6))
    ctx = GridContext(batch, "agqa")
    shared: list = []
    a = evaluate(first, batch, "agqa", context=ctx)
    assert written_bytes(a, shared) > 0
    b = evaluate(second, batch, "agqa", context=ctx)
    assert b.answer is a.answer and b.defined is a.defined and b.real is a.real
    assert written_bytes(b, shared) == 0


def test_grid_bandwidth_counts_a_grid_of_its_own(store):
    """objLastChoose chooses backward: a grid of its own, only the real mask shared."""
    written_bytes = _script("grid_bandwidth").written_bytes
    with open_store(store) as src, torch.inference_mode():
        batch = next(src.blocks(6, 0, 6))
    ctx = GridContext(batch, "agqa")
    shared: list = []
    what = evaluate("objWhatChoose", batch, "agqa", context=ctx)
    written_bytes(what, shared)
    last = evaluate("objLastChoose", batch, "agqa", context=ctx)  # backward: its own grid
    # its own answer (int64) and defined (bool); the [V, Kr, Ko, Ko] real mask is the shared one
    assert last.real is what.real and last.answer is not what.answer
    assert written_bytes(last, shared) == last.answer.numel() * 8 + last.defined.numel()


def test_traffic_counts_bytes_read_and_written():
    """Against bytes worked out by hand: an elementwise op reads both inputs and writes its
    output; an expanded view is read at its storage's size; a gather reads its indices and the
    gathered elements, not the whole source; allocations and views move nothing."""
    Traffic = _script("grid_bandwidth").Traffic
    a, b = torch.ones(1000), torch.ones(1000)
    idx = torch.arange(0, 1000, 10)
    with Traffic() as t:
        a + b
    assert t.bytes == 3 * 4000
    with Traffic() as t:
        a.view(10, 100).expand(7, 10, 100).sum(0)  # reads a's 4,000 bytes once, writes 4,000
    assert t.bytes == 8000
    with Traffic() as t:
        a[idx]  # 100 int64 indices, 100 floats read, 100 written
    assert t.bytes == 800 + 400 + 400
    with Traffic() as t:
        torch.empty(10**6)
        a.view(100, 10).t()
    assert t.bytes == 0 and t.ops == 0


def test_traffic_counts_kernel_launches(store, monkeypatch):
    """Under Triton's interpreter, a template's kernel launches are counted as their tensor
    arguments' bytes, not as the torch ops the interpreter runs to copy those arguments (which a
    GPU does not); the kernel names are restored afterwards."""
    pytest.importorskip("triton")
    from tensorqa import kernels
    from tensorqa.kernels import first_last

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    grid_bandwidth = _script("grid_bandwidth")
    with open_store(store) as src, torch.inference_mode(), kernels.configure("on", "cpu"):
        batch = next(src.blocks(6, 0, 6))
        evaluate("objFirstChoose", batch, "agqa")  # binds the kernels
        kernel = first_last.choose_kernel
        launches = []
        real_launch = grid_bandwidth._CountedKernel.__getitem__

        def spy(self, grid):  # the tensor bytes of each launch, as the proxy sees them
            run = real_launch(self, grid)

            def counted(*args, **kwargs):
                launches.append(grid_bandwidth.tensor_bytes(a for a in args if isinstance(a, torch.Tensor)))
                return run(*args, **kwargs)
            return counted

        monkeypatch.setattr(grid_bandwidth._CountedKernel, "__getitem__", spy)
        with grid_bandwidth.Traffic() as with_copies:  # no proxies: the interpreter's copies count
            evaluate("objFirstChoose", batch, "agqa")
        with grid_bandwidth.Traffic() as traffic, traffic.launches():
            evaluate("objFirstChoose", batch, "agqa")
        assert first_last.choose_kernel is kernel
    assert traffic.launched == len(launches) > 0 and with_copies.launched == 0
    assert traffic.ops < with_copies.ops  # the copies' ops are gone, the template's own remain
    torch_ops = traffic.bytes - sum(launches)
    assert 0 < torch_ops < with_copies.bytes


def test_traffic_counts_a_view_op_that_copies():
    """``to`` another dtype is a view op by its schema, yet copies: read once, written at the new
    size; ``to`` the same dtype returns the tensor itself and moves nothing."""
    Traffic = _script("grid_bandwidth").Traffic
    a = torch.ones(1000, dtype=torch.bool)
    with Traffic() as t:
        a.to(torch.int64)
    assert t.bytes == 1000 + 8000
    with Traffic() as t:
        a.to(torch.bool)
    assert t.bytes == 0
