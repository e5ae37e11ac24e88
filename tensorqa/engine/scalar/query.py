"""Scalar twins of the answer-forming primitives: ``exists``, ``only_item``, ``equals``, ``and``,
``xor`` (``engine/primitives/query.py`` and ``exists.py``)."""

from __future__ import annotations

import numpy as np

from tensorqa.engine.primitives.registry import register
from tensorqa.engine.scalar.video import Entity, one
from tensorqa.engine.semantics import Semantics


@register("exists", backend="scalar")
def exists(items: np.ndarray, which: int | None = None) -> bool:
    """Item ``which`` is among ``items`` (bool[K]); without ``which``, any item is."""
    return bool(items.any() if which is None else items[which])


@register("only_item", backend="scalar")
def only_item(items: np.ndarray, what: str = "object") -> int:
    """The one true position of ``items`` (bool[K]); no answer unless exactly one."""
    return one(items, what)


@register("equals", backend="scalar")
def equals(a: Entity, b: Entity) -> bool:
    return a == b


@register("and", backend="scalar")
def and_(a: bool, b: bool) -> bool:
    return bool(a and b)


@register("xor", backend="scalar")
def xor(a: bool, b: bool, sem: Semantics) -> bool:
    """AGQA's solver reads XOR(A, B) as "A and not B" (``xor_is_and_not``)."""
    return (a and not b) if sem.xor_is_and_not else (a != b)
