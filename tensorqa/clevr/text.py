"""Question text as CLEVR's generator writes it: a random variant, params replaced by their word or
a random synonym, optional ``[...]`` parts kept with p = 0.5, whitespace collapsed, and
``other_heuristic``."""

from __future__ import annotations

import random
import re

from tensorqa.clevr.templates import Template

_PAIR_PARAMS = {"<Z>", "<C>", "<M>", "<S>", "<Z2>", "<C2>", "<M2>", "<S2>"}
_OPTIONAL = re.compile(r"\[([^\[\]]*)\]")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def other_heuristic(text: str, vals: dict[str, str], sem) -> str:
    """Drop "other" when the two described objects differ in a specified attribute (CLEVR: only
    for exactly the params <Z><C><M><S><Z2><C2><M2><S2>)."""
    if (" other " not in text and " another " not in text) or set(vals) != _PAIR_PARAMS:
        return text
    for x in ("<Z>", "<C>", "<M>", "<S>"):
        v1, v2 = vals[x], vals[x[:-1] + "2>"]
        if not sem.other_thing_is_value:
            v1, v2 = ("" if v == "thing" else v for v in (v1, v2))
        if v1 != "" and v2 != "" and v1 != v2:
            return text.replace(" other ", " ").replace(" another ", " a ")
    return text


def render(t: Template, vals: dict[str, str], synonyms: dict[str, list[str]], rng: random.Random, sem) -> str:
    """vals: param -> canonical word ('' unspecified, 'thing' for an unspecified shape), in
    assignment order."""
    text = rng.choice(t.text)
    for name, v in vals.items():
        word = rng.choice(synonyms[v]) if v in synonyms else v
        text = text.replace(name, word)
    text = _collapse(text)
    text = _collapse(_OPTIONAL.sub(lambda m: m.group(1) if rng.random() < 0.5 else "", text))
    return other_heuristic(text, vals, sem)
