"""pytest-benchmark suite of the Triton kernels (tensorqa.kernels) against their torch twins.

    .venv/bin/python -m pytest benchmarks/bench_kernels.py --benchmark-only
    .venv/bin/python -m pytest benchmarks/bench_kernels.py --benchmark-only -k cuda   # GPU cases only

(``--benchmark-only`` overrides the ``--benchmark-skip`` of pyproject's addopts.)

Each case runs one registry primitive, on the inputs grid evaluation gives it, for one
(device, backend): torch on the CPU, torch and kernel on CUDA (skipped without a GPU). The kernel
on the CPU would run in Triton's interpreter, which says nothing about speed: not a case. CUDA
cases synchronize after each call, so a round is the primitive's whole device time. The batch is
256 synthetic Charades-like videos (augmented), the generator's block size on a GPU; per-batch
intermediates (windows, compact axes) are built once per device, outside the timings.
"""

from __future__ import annotations

import pytest
import torch

from tensorqa.agqa.grid import GridContext
from tensorqa.engine.primitives import registry
from tensorqa.scenes.batch import SceneBatch
from tensorqa.agqa.semantics import AGQA
from tensorqa.engine.primitives.filter import CONTACT_EXCEPT_NOT_CONTACTING

VIDEOS = 256
SETTINGS = [("cpu", "torch"), ("cuda", "torch"), ("cuda", "kernel")]


@pytest.fixture(scope="module")
def scenes() -> SceneBatch:
    from tensorqa.scenes.augment import augment_scene
    from tensorqa.scenes.synthetic import synthesize
    return SceneBatch.from_scenes([augment_scene(s) for s in synthesize(VIDEOS, seed=0)])


_contexts: dict[str, GridContext] = {}


def _context(scenes: SceneBatch, device: str) -> GridContext:
    """The grid's per-batch intermediates on ``device`` (built with the torch backend, once)."""
    if device not in _contexts:
        ctx = GridContext(scenes.to(device), AGQA)
        with registry.use("torch"):
            _ = (ctx.windows, ctx.flat, ctx.axes("present"), ctx.compare)  # computed once, cached
        _contexts[device] = ctx
    return _contexts[device]


@pytest.fixture(params=SETTINGS, ids=[f"{d}-{b}" for d, b in SETTINGS])
def setting(request):
    device, backend = request.param
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    if backend == "kernel":
        from tensorqa import kernels
        if not kernels.available():
            pytest.skip("Triton is not installed")
        if kernels.interpreting():
            pytest.skip("TRITON_INTERPRET=1: the interpreter's timings mean nothing")
    return device, backend


def _run(benchmark, name: str, setting, *args):
    """Time primitive ``name``'s ``backend`` implementation on ``args``."""
    device, backend = setting
    fn = registry.implementations(name)[backend]
    if device == "cuda":
        def call():
            out = fn(*args)
            torch.cuda.synchronize()
            return out
        call()  # warm-up: Triton compiles on first launch
    else:
        call = lambda: fn(*args)  # noqa: E731
    benchmark.extra_info.update(device=device, backend=backend, videos=VIDEOS)
    return benchmark(call)


def _rel(ctx: GridContext):
    return ctx.axes("present").rel  # bool[B, F, Ko, Kr]


def test_relate_padded_windows(benchmark, scenes, setting):
    """GridContext.relate: [B, W] windows x rel [B, F, Ko, Kr] -> [B, W, Ko, Kr] (generation's
    validity rules read it on the whole vocabulary)."""
    ctx = _context(scenes, setting[0])
    _run(benchmark, "relate", setting, _rel(ctx), ctx.windows)


def test_relate_flat_rows(benchmark, scenes, setting):
    """GridContext.relate_rows (what the object-relation templates read): flat rows [V] x rel
    [B, F, Ko, Kr] -> [V, Ko, Kr]."""
    ctx = _context(scenes, setting[0])
    _run(benchmark, "relate", setting, _rel(ctx), ctx.flat)


def test_contacted_flat_rows(benchmark, scenes, setting):
    """objExists: flat rows [V] x interacted objects [B, F, O]."""
    ctx = _context(scenes, setting[0])
    _run(benchmark, "contacted", setting, ctx.batch, ctx.flat, CONTACT_EXCEPT_NOT_CONTACTING)


def test_actions_in_flat_rows(benchmark, scenes, setting):
    """actExists: flat rows [V] x act [B, F, A]."""
    ctx = _context(scenes, setting[0])
    _run(benchmark, "actions_in", setting, ctx.batch, ctx.flat)


def test_first_episode(benchmark, scenes, setting):
    ctx = _context(scenes, setting[0])
    ax = ctx.axes("present")
    _run(benchmark, "first_episode", setting, ax.occurs, ax.rel, ctx.flat)


def test_last_episode(benchmark, scenes, setting):
    ctx = _context(scenes, setting[0])
    ax = ctx.axes("present")
    _run(benchmark, "last_episode", setting, ax.occurs, ax.rel, ctx.flat, AGQA)


@pytest.mark.parametrize("forward", [True, False], ids=["first", "last"])
def test_choose_episode(benchmark, scenes, setting, forward):
    """The Choose templates' grid [V, Kr, Ko, Ko], the largest of the catalogue."""
    ctx = _context(scenes, setting[0])
    _run(benchmark, "choose_episode", setting, _rel(ctx), ctx.flat, forward, AGQA)


def test_side_of(benchmark, scenes, setting):
    """relTime: occurs [B, F, Kr] around the compare windows of the present actions [B, K]."""
    ctx = _context(scenes, setting[0])
    ax = ctx.axes("present")
    _run(benchmark, "side_of", setting, ax.occurs, ctx.compare, ctx.batch.frame_mask.sum(1))


def test_pack_frames(benchmark, scenes, setting):
    """Packing rel [B, F, Ko, Kr] into words, which every kernel call above includes."""
    from tensorqa.kernels import bits
    device, backend = setting
    rel = _rel(_context(scenes, device))
    flat = rel.reshape(rel.shape[0], rel.shape[1], -1)
    fn = bits.pack_frames if backend == "kernel" else bits.pack_frames_torch

    def call():
        out = fn(flat)
        if device == "cuda":
            torch.cuda.synchronize()
        return out

    call()
    benchmark.extra_info.update(device=device, backend=backend, videos=VIDEOS)
    benchmark(call)

