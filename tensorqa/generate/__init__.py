"""Bulk generation of AGQA's unbalanced question pool (templates over slot grids -> records)."""

from .pipeline import generate, generate_block, resolve_templates

__all__ = ["generate", "generate_block", "resolve_templates"]
