"""Scalar twins of CLEVR's functions: one scene in CLEVR's JSON form, plain Python, written from
CLEVR's execution rules (``question_engine.py``); each registers as backend ``scalar`` under the
vectorized primitive's name. Handler signature: ``fn(scene, inputs, side_inputs)``; object sets
are sorted index lists; failure is the string ``'__INVALID__'``."""

from __future__ import annotations

import tensorqa.engine.primitives.static  # noqa: F401  (the vectorized functions these twins mirror register first)
from tensorqa.engine.primitives.registry import register

INVALID = "__INVALID__"
ATTRS = ("size", "color", "material", "shape")


def scene(sc, inputs, side):
    return list(range(len(sc["objects"])))


def _filter(attr):
    def f(sc, inputs, side):
        v = side[0]
        return [i for i in inputs[0] if v == sc["objects"][i][attr] or v in sc["objects"][i][attr]]
    return f


def unique(sc, inputs, side):
    return inputs[0][0] if len(inputs[0]) == 1 else INVALID


def relate(sc, inputs, side):
    return list(sc["relationships"][side[0]][inputs[0]])


def _same(attr):
    def f(sc, inputs, side):
        o = inputs[0]
        v = sc["objects"][o][attr]
        return [j for j, obj in enumerate(sc["objects"]) if j != o and obj[attr] == v]
    return f


def union(sc, inputs, side):
    return sorted(set(inputs[0]) | set(inputs[1]))


def intersect(sc, inputs, side):
    return sorted(set(inputs[0]) & set(inputs[1]))


def count(sc, inputs, side):
    return len(inputs[0])


def exist(sc, inputs, side):
    return len(inputs[0]) > 0


def _query(attr):
    def f(sc, inputs, side):
        v = sc["objects"][inputs[0]][attr]
        if isinstance(v, list):
            return v[0] if len(v) == 1 else INVALID
        return v
    return f


def equal(sc, inputs, side):
    return inputs[0] == inputs[1]


def less_than(sc, inputs, side):
    return inputs[0] < inputs[1]


def greater_than(sc, inputs, side):
    return inputs[0] > inputs[1]


HANDLERS = {"scene": scene, "unique": unique, "relate": relate, "union": union, "intersect": intersect,
            "count": count, "exist": exist, "less_than": less_than, "greater_than": greater_than,
            "equal_integer": equal, "equal_object": equal}
for _a in ATTRS:
    HANDLERS[f"filter_{_a}"] = _filter(_a)
    HANDLERS[f"same_{_a}"] = _same(_a)
    HANDLERS[f"query_{_a}"] = _query(_a)
    HANDLERS[f"equal_{_a}"] = equal
for _name, _fn in HANDLERS.items():
    register(f"clevr_{_name}", backend="scalar")(_fn)
