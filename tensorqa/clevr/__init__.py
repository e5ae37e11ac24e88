"""CLEVR on the tensorqa engine: static scenes, CLEVR's functions as primitives, generation from
CLEVR's template files over whole parameter grids. ``run_program`` executes CLEVR's program JSON on
one scene (the scalar oracle); ``generate`` compiles a question set from a static-scene store.
Both load lazily, so that ``tensorqa.cli`` importing ``tensorqa.clevr.commands`` stays light."""

from __future__ import annotations


def generate(*args, **kwargs):
    """See :func:`tensorqa.clevr.generate.generate_store`."""
    from tensorqa.clevr.generate import generate_store

    return generate_store(*args, **kwargs)


def __getattr__(name: str):
    if name == "run_program":
        from tensorqa.clevr.scalar import run_program

        return run_program
    raise AttributeError(f"module 'tensorqa.clevr' has no attribute {name!r}")


__all__ = ["run_program", "generate"]
