"""Compiling grid plans: a template's spec is its plan directly (nothing parsed per call, nothing
matched), and gives the same plan and the same answers as the program text matched against the
28 shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers import random_scene
from tensorqa.agqa.templates import TEMPLATES
from tensorqa.agqa import grid
from tensorqa.agqa.shapes import PROGRAM_SHAPES, SHAPES
from tensorqa.scenes.batch import SceneBatch


def test_a_spec_compiles_without_matching(monkeypatch):
    def no_match(*args, **kwargs):
        raise AssertionError("a spec's plan must not be matched against the shapes")

    monkeypatch.setattr(grid, "match", no_match)
    for spec in TEMPLATES.values():
        plan = grid.compile_skeleton(spec)
        assert (plan.shape, plan.evaluator) == (spec.program, SHAPES[spec.program].evaluator)
        assert grid.compile_skeleton(spec) is plan  # cached


@pytest.mark.parametrize("name", sorted(PROGRAM_SHAPES))
def test_spec_plan_equals_the_matched_plan(name):
    by_spec = grid.compile_skeleton(TEMPLATES[name] if name in TEMPLATES else SHAPES[name])
    by_text = grid._compile(PROGRAM_SHAPES[name], by_spec.semantics, "present")
    # actWhatBefore prints actWhatAfterAll's program: the text matches the first name, one evaluator
    assert by_spec.evaluator == by_text.evaluator
    assert by_spec.pattern == by_text.pattern and by_spec.skeleton == by_text.skeleton
    assert (by_text.fixed, by_text.window_kind) == ((), None)


def test_spec_and_text_give_the_same_answers():
    rng = np.random.default_rng(7)
    batch = SceneBatch.from_scenes([random_scene(rng, f"V{i}") for i in range(6)])
    ctx = grid.GridContext(batch, "agqa")
    for spec in TEMPLATES.values():
        a = grid.evaluate(spec, batch, context=ctx)
        b = grid.evaluate(PROGRAM_SHAPES[spec.program], batch, context=ctx)
        assert torch.equal(a.answer, b.answer) and torch.equal(a.defined, b.defined), spec.name
