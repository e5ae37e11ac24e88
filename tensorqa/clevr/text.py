"""Question text as CLEVR's generator writes it: a random variant, params replaced by their word or
a random synonym, optional ``[...]`` parts kept with p = 0.5, whitespace collapsed, and
``other_heuristic``."""

from __future__ import annotations

import re

import numpy as np

from tensorqa.clevr.templates import Template
from tensorqa.engine import rng

PAIR_PARAMS = {"<Z>", "<C>", "<M>", "<S>", "<Z2>", "<C2>", "<M2>", "<S2>"}
_OPTIONAL = re.compile(r"\[([^\[\]]*)\]")


BRACKET_SLOT = 64  # slot of the first optional part; slot 0 is the variant, 1 + i the i-th parameter's synonym


def picker(seed: int, scene: int, tid: int, draw: int):
    """pick(slot, n) -> int in [0, n): the question's text choices, engine.rng's ``clevr.text``
    stream at (scene position, template, draw, slot)."""
    k = rng.derive_int(seed, "clevr.text", scene, tid, draw)
    return lambda slot, n: rng.below_int(rng.mix64_int(k ^ slot), n)


def picks(seed: int, scene: np.ndarray, tid: int, draw: np.ndarray, slot: int, n) -> np.ndarray:
    """int64[Q]: :func:`picker`'s choice for each question (scene, draw int64[Q]; n int or int64[Q])."""
    return rng.below(rng.derive(seed, "clevr.text", scene, tid, draw, slot), n)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def other_heuristic(text: str, vals: dict[str, str], sem) -> str:
    """Drop "other" when the two described objects differ in a specified attribute (CLEVR: only
    for exactly the params <Z><C><M><S><Z2><C2><M2><S2>)."""
    if (" other " not in text and " another " not in text) or set(vals) != PAIR_PARAMS:
        return text
    for x in ("<Z>", "<C>", "<M>", "<S>"):
        v1, v2 = vals[x], vals[x[:-1] + "2>"]
        if not sem.other_thing_is_value:
            v1, v2 = ("" if v == "thing" else v for v in (v1, v2))
        if v1 != "" and v2 != "" and v1 != v2:
            return text.replace(" other ", " ").replace(" another ", " a ")
    return text


def render(t: Template, vals: dict[str, str], synonyms: dict[str, list[str]], pick, sem) -> str:
    """vals: param -> canonical word ('' unspecified, 'thing' for an unspecified shape), in
    assignment order; pick(slot, n) -> int in [0, n) makes the random choices (:func:`picker`):
    the variant (slot 0), each parameter's synonym (slot 1 + its position), each optional part
    (slot BRACKET_SLOT + its position; kept when the pick of 2 is 1)."""
    text = t.text[pick(0, len(t.text))]
    for i, (name, v) in enumerate(vals.items()):
        word = synonyms[v][pick(1 + i, len(synonyms[v]))] if v in synonyms else v
        text = text.replace(name, word)
    text = _collapse(text)
    j = iter(range(BRACKET_SLOT, BRACKET_SLOT + 10_000))
    text = _collapse(_OPTIONAL.sub(lambda m: m.group(1) if pick(next(j), 2) == 1 else "", text))
    return other_heuristic(text, vals, sem)
