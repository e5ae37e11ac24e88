"""pytest-benchmark suite of the grid engine: the per-batch primitives and every skeleton's grid.

    .venv/bin/python -m pytest benchmarks/bench_grid.py --benchmark-enable [--benchmark-only]

The batch is 256 synthetic Charades-like videos (``tensorqa.scenes.synthetic``, augmented), the block
size the generator uses. ``test_evaluate`` times one skeleton from scratch; a pipeline evaluating
all 28 on one ``GridContext`` shares windows, the relate contraction and the episodes (see
``benchmarks/grid_vs_reference.py`` for that end-to-end rate). ``extra_info`` records the programs (grid cells) each call answers, so
programs per second = programs / mean time.
"""

from __future__ import annotations

import pytest

from tensorqa.agqa.grid import GridContext, evaluate
from tensorqa.engine.primitives import localize, registry
from tensorqa.agqa.shapes import PROGRAM_SHAPES
from tensorqa.scenes.batch import SceneBatch
from tensorqa.agqa.semantics import AGQA

VIDEOS = 256


@pytest.fixture(scope="module")
def batch() -> SceneBatch:
    from tensorqa.scenes.augment import augment_scene
    from tensorqa.scenes.synthetic import synthesize
    return SceneBatch.from_scenes([augment_scene(s) for s in synthesize(VIDEOS, seed=0)])


def test_localize(benchmark, batch):
    w = benchmark(localize, batch, AGQA)
    benchmark.extra_info["offered_windows"] = int(w.valid.sum())


def test_relate_padded_matmul(benchmark, batch):
    w = localize(batch, AGQA)
    rel = batch.rel & batch.frame_mask[:, :, None, None]
    benchmark(registry.lookup("relate"), rel, w)


def test_relate_flat_prefix(benchmark, batch):
    w = localize(batch, AGQA).rows()
    rel = batch.rel & batch.frame_mask[:, :, None, None]
    benchmark(registry.lookup("relate"), rel, w)


def test_context(benchmark, batch):
    """The per-batch intermediates every skeleton shares."""
    def build():
        ctx = GridContext(batch, AGQA)
        return ctx.windows, ctx.flat, ctx.axes("present"), ctx.relate("present"), ctx.act
    benchmark(build)


@pytest.mark.parametrize("template", sorted(PROGRAM_SHAPES))
def test_evaluate(benchmark, template, batch):
    """One skeleton from scratch (its share of the per-batch context included)."""
    grid = benchmark(evaluate, template, batch, AGQA)
    benchmark.extra_info["programs"] = int(grid.real.sum())
    benchmark.extra_info["defined"] = int(grid.defined.sum())
    benchmark.extra_info["answer_mib"] = grid.answer.numel() * grid.answer.element_size() / 2**20
