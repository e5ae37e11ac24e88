"""Question text choices as CLEVR's generator makes them (a random variant, a random synonym per
parameter, each optional ``[...]`` part kept with p = 0.5), hashed per question so that a text does
not depend on the questions around it. ``columns`` renders with them; ``tests/clevr/oracle.py`` holds
the per-question renderer they are checked against."""

from __future__ import annotations

import numpy as np

from tensorqa.engine import rng

PAIR_PARAMS = {"<Z>", "<C>", "<M>", "<S>", "<Z2>", "<C2>", "<M2>", "<S2>"}  # other_heuristic's only params
BRACKET_SLOT = 64  # slot of the first optional part; slot 0 is the variant, 1 + i the i-th parameter's synonym


def picks(seed: int, scene: np.ndarray, tid: int, draw: np.ndarray, slot: int, n) -> np.ndarray:
    """int64[Q] in [0, n): engine.rng's ``clevr.text`` stream at (scene position, template, draw, slot)
    for each question (scene, draw int64[Q]; n int or int64[Q])."""
    return rng.below(rng.derive(seed, "clevr.text", scene, tid, draw, slot), n)
