"""Bulk generation of AGQA's unbalanced question pool (templates over slot grids -> records).

The names below load on first use (PEP 562): the package's light modules (``options``,
``templates``) serve other commands without importing torch and pyarrow."""

from __future__ import annotations

import importlib

_HOMES = {"generate": "tensorqa.agqa.run", "generate_block": "tensorqa.agqa.blocks",
          "resolve_templates": "tensorqa.agqa.options"}
__all__ = ["generate", "generate_block", "resolve_templates"]


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tensorqa.agqa' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
