"""``clevr.plan``: what the compiled engine cannot hold falls back to the torch grid, or is a clear
error with ``--engine compiled``."""

from __future__ import annotations

import json

import pytest
from tensorqa.clevr.templates import DEFAULT_TEMPLATES_DIR

from tensorqa.clevr.generate import Options
from tensorqa.errors import TensorQAError

TEMPLATES = DEFAULT_TEMPLATES_DIR


def test_plan_refuses_what_it_cannot_hold(tmp_path):
    """A template whose strings would need JSON escaping falls back to the torch grid (auto) and
    is a clear error with --engine compiled."""
    from tensorqa.clevr.generate import use_compiled
    from tensorqa.clevr.templates import load_templates

    t = json.loads((TEMPLATES / "zero_hop.json").read_text())[:1]
    t[0]["text"] = ['How many "quoted" <Z> <C> <M> <S>s are there?']
    (tmp_path / "t.json").write_text(json.dumps(t))
    templates = load_templates(tmp_path)
    assert not use_compiled(Options(), templates, {})
    with pytest.raises(TensorQAError, match="--engine compiled: .*escaping"):
        use_compiled(Options(engine="compiled"), templates, {})
