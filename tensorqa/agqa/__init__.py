"""Bulk generation of AGQA's unbalanced question pool (templates over slot grids -> records)."""

from tensorqa.agqa.blocks import generate_block
from tensorqa.agqa.options import resolve_templates
from tensorqa.agqa.run import generate

__all__ = ["generate", "generate_block", "resolve_templates"]
