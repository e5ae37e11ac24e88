"""Question text: synonyms, optional parts, whitespace, other_heuristic and its defect switch (9)."""

from __future__ import annotations

import random

import numpy as np

from tensorqa.clevr.semantics import CLEVR, STRICT
from tensorqa.clevr.templates import Template
from clevr.oracle import other_heuristic, picker, render  # tests/ is on sys.path (conftest)
from tensorqa.clevr.text import picks

PAIR = ["<Z>", "<C>", "<M>", "<S>", "<Z2>", "<C2>", "<M2>", "<S2>"]


def _vals(**kw):
    v = {p: "" for p in PAIR}
    v.update({f"<{k}>": x for k, x in kw.items()})
    return v


def test_other_heuristic():
    text = "Is the cube the same size as the other thing?"
    assert other_heuristic(text, _vals(S="cube", S2="sphere"), CLEVR) == "Is the cube the same size as the thing?"
    assert other_heuristic(text, _vals(S="cube", S2="cube"), CLEVR) == text
    assert other_heuristic(text, _vals(C="red"), CLEVR) == text  # only one side specified
    # defect 9: 'thing' counts as a value in CLEVR, as unspecified in strict
    assert other_heuristic("Is there another cube?", _vals(S="thing", S2="cube"), CLEVR) == "Is there a cube?"
    assert other_heuristic("Is there another cube?", _vals(S="thing", S2="cube"), STRICT) == "Is there another cube?"
    # other params than exactly the pair: untouched
    assert other_heuristic(text, {"<S>": "cube", "<S2>": "sphere"}, CLEVR) == text


def test_render_synonyms_optional_and_whitespace():
    t = Template("x.json", 0, ("[Are there] any <Z> <C> <M> <S>s?",), (), (("<Z>", "Size"), ("<C>", "Color"),
                                                                           ("<M>", "Material"), ("<S>", "Shape")), ())
    seen = set()
    for k in range(60):
        rng = random.Random(k)
        seen.add(render(t, {"<Z>": "", "<C>": "red", "<M>": "", "<S>": "cube"}, {"cube": ["cube", "block"]},
                        lambda slot, n: rng.randrange(n), CLEVR))
    assert seen == {"Are there any red cubes?", "Are there any red blocks?", "any red cubes?", "any red blocks?"}


def test_picks_are_the_pickers_choices():
    """The vectorized text choices equal the per-question ones, hash for hash."""
    rng = np.random.default_rng(0)
    scene, draw = rng.integers(0, 10**6, 500), rng.integers(0, 32, 500)
    for seed, tid, slot, n in ((0, 0, 0, 3), (7, 89, 65, 2), (2**40 + 3, 12, 4, 11)):
        got = picks(seed, scene, tid, draw, slot, n)
        want = [picker(seed, int(g), tid, int(m))(slot, n) for g, m in zip(scene, draw)]
        assert got.tolist() == want
        assert set(want) == set(range(n))
