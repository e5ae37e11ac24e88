"""Scalar twins of the set and answer-forming primitives: ``exists``, ``has_item``, ``count``,
``only_item``, ``choose``, ``equals``, ``and``, ``xor`` (``engine/primitives/query.py``,
``exists.py``, ``count.py``)."""

from __future__ import annotations

import numpy as np

from tensorqa.engine.primitives.registry import register
from tensorqa.engine.scalar.video import Entity, NoAnswer, one, Switches


@register("exists", backend="scalar")
def exists(items: np.ndarray, which: int | None = None) -> bool:
    """Item ``which`` is among ``items`` (bool[K]); without ``which``, any item is."""
    return bool(items.any() if which is None else items[which])


@register("has_item", backend="scalar")
def has_item(items: np.ndarray) -> bool:
    """The set ``items`` (bool[K]) is not empty."""
    return bool(items.any())


@register("count", backend="scalar")
def count(items: np.ndarray) -> int:
    """The number of members of the set ``items`` (bool[K])."""
    return int(np.count_nonzero(items))


@register("choose", backend="scalar")
def choose(first_in: bool, second_in: bool) -> bool:
    """AGQA's README Choose: True for the first item, False for the second, whichever alone is in
    the set; no answer when both or neither are."""
    if first_in == second_in:
        raise NoAnswer("choose: both items or neither are in the set")
    return bool(first_in)


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
def xor(a: bool, b: bool, sem: Switches) -> bool:
    """AGQA's solver reads XOR(A, B) as "A and not B" (``xor_is_and_not``)."""
    return (a and not b) if sem.xor_is_and_not else (a != b)
