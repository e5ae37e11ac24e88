"""Bulk generation of AGQA's unbalanced question pool (templates over slot grids -> records)."""

from tensorqa.agqa.pipeline import generate, generate_block, resolve_templates

__all__ = ["generate", "generate_block", "resolve_templates"]
