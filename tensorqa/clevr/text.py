"""Question text as CLEVR's generator writes it: a random variant, params replaced by their word or
a random synonym, optional ``[...]`` parts kept with p = 0.5, whitespace collapsed, and
``other_heuristic``."""

from __future__ import annotations

import re

import numpy as np

from tensorqa.clevr.templates import Template

PAIR_PARAMS = {"<Z>", "<C>", "<M>", "<S>", "<Z2>", "<C2>", "<M2>", "<S2>"}
_OPTIONAL = re.compile(r"\[([^\[\]]*)\]")


_M64 = (1 << 64) - 1
BRACKET_SLOT = 64  # slot of the first optional part; slot 0 is the variant, 1 + i the i-th parameter's synonym


def _mix(x: int) -> int:
    """splitmix64's finalizer on a Python int (64-bit wrapping)."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _key(seed: int, scene: int, tid: int, draw: int) -> int:
    return (((((seed & _M64) * 1_000_003 + scene) & _M64) * 4099 + tid * 131 + draw) * 0x9E3779B97F4A7C15) & _M64


def picker(seed: int, scene: int, tid: int, draw: int):
    """pick(slot, n) -> int in [0, n): the question's text choices, a hash of (seed, scene position,
    template, draw, slot), so that :func:`picks` can make them for many questions at once."""
    k = _key(seed, scene, tid, draw)
    return lambda slot, n: (((_mix(k ^ slot) >> 11) * n) >> 53)


def picks(seed: int, scene: np.ndarray, tid: int, draw: np.ndarray, slot: int, n) -> np.ndarray:
    """int64[Q]: :func:`picker`'s choice for each question (scene, draw int64[Q]; n int or int64[Q])."""
    with np.errstate(over="ignore"):
        k = ((np.uint64(seed & _M64) * np.uint64(1_000_003) + scene.astype(np.uint64)) * np.uint64(4099)
             + np.uint64(tid * 131) + draw.astype(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
        x = k ^ np.uint64(slot)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
        return (((x >> np.uint64(11)) * np.asarray(n, dtype=np.uint64)) >> np.uint64(53)).astype(np.int64)


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
