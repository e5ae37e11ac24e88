"""Scalar twins of the set and answer-forming primitives (``engine/primitives/query.py``); sets are bool[K]."""

from __future__ import annotations

import numpy as np

from tensorqa.engine.primitives.registry import register
from tensorqa.engine.scalar.video import Entity, NoAnswer, one, Switches


@register("exists", backend="scalar")
def exists(items: np.ndarray, which: int | None = None) -> bool:
    return bool(items.any() if which is None else items[which])


@register("has_item", backend="scalar")
def has_item(items: np.ndarray) -> bool:
    return bool(items.any())


@register("count", backend="scalar")
def count(items: np.ndarray) -> int:
    return int(np.count_nonzero(items))


@register("choose", backend="scalar")
def choose(first_in: bool, second_in: bool) -> bool:
    """True for the first item, False for the second, whichever alone is in the set."""
    if first_in == second_in:
        raise NoAnswer("choose: both items or neither are in the set")
    return bool(first_in)


@register("only_item", backend="scalar")
def only_item(items: np.ndarray, what: str = "object") -> int:
    return one(items, what)


@register("equals", backend="scalar")
def equals(a: Entity, b: Entity) -> bool:
    return a == b


@register("and", backend="scalar")
def and_(a: bool, b: bool) -> bool:
    return bool(a and b)


@register("xor", backend="scalar")
def xor(a: bool, b: bool, sem: Switches) -> bool:
    return (a and not b) if sem.xor_is_and_not else (a != b)
