"""Caption/foil pairs on static (CLEVR) scenes: ``static_phenomena``'s candidates, foil words drawn over
the whole set (``draws``), rendered (``text.scene_*``) with their CLEVR programs. Counting matches
numeral and noun together, plurality balances within each noun, existence the polarity; the actant
swap uses the caption's own words, so the text alone cannot tell caption from foil.
"""

from __future__ import annotations

import numpy as np

from tensorqa.foils import text as T
from tensorqa.foils.draws import balance_flags, balance_flags_within, balanced_draw, matched_draw
from tensorqa.foils.pair import Pair
from tensorqa.foils.phenomena import NUMERALS, STATIC_INSTRUMENTS, STREAMS, Rows, noise
from tensorqa.foils.programs import Text
from tensorqa.foils.records import (
    STATIC_DATASET as DATASET,  # in ids: never a video set's "tensorqa"
)
from tensorqa.foils.static_programs import (
    KEYS,
    THING,
    count_program,
    describe,
    exist_program,
    noun_slot,
    relation_program,
)
from tensorqa.scenes.static_batch import ATTRS, RELATIONS, clevr_vocab


def foil_words(name: str, R: Rows, seed: int) -> np.ndarray:
    """int64[P]: the foil's word per row (numeral, relation or shape id; 0 where the foil flips or swaps),
    -1 where the row is dropped."""
    P = R.video.size
    u_foil = lambda width: noise(seed, STREAMS[name], R.video, 100, width)
    u_order = noise(seed, STREAMS[name], R.video, 101)[:, 0]
    if name.startswith("counting"):  # word = numeral + NUMERALS x noun
        noun = np.array([noun_slot(KEYS[k]) for k in R.a], np.int64)
        cap = np.where(R.n < NUMERALS, R.n + NUMERALS * noun, -1)
        ok = np.zeros((P, NUMERALS * (THING + 1)), bool)
        for s in range(THING + 1):
            ok[noun == s, s * NUMERALS:(s + 1) * NUMERALS] = R.foil_ok[noun == s]
        if name == "counting-adversarial":  # small foils on purpose (VALSE): no matching
            foil = matched_draw(cap, ok, u_foil(ok.shape[1]))
        else:
            foil = balanced_draw(cap, ok, u_order, u_foil(ok.shape[1]))
        return np.where(foil >= 0, foil % NUMERALS, -1)
    if name in ("relations", "foil-it"):
        return balanced_draw(R.n, R.foil_ok, u_order, u_foil(R.foil_ok.shape[1]))
    foil = np.zeros(P, np.int64)
    if name == "existence":
        return np.where(balance_flags(R.flag, u_foil(1)[:, 0]), foil, -1)
    if name == "plurals":
        noun = np.array([noun_slot(KEYS[k]) for k in R.a], np.int64)
        return np.where(balance_flags_within(R.flag, noun, u_foil(1)[:, 0]), foil, -1)
    return foil  # actant-swap


def build_static_pairs(rows: dict[str, Rows], files: list[str], splits: list[str], seed: int = 0) -> list[Pair]:
    """files: each scene's image file name (by store index)."""
    pairs: list[Pair] = []
    for name, R in rows.items():
        if name not in STATIC_INSTRUMENTS:
            continue
        foil = foil_words(name, R, seed)
        for i in np.nonzero(foil >= 0)[0]:
            pairs.append(_pair(name, R, int(i), int(foil[i]), files, splits))
    return pairs


def _pair(name: str, R: Rows, i: int, f: int, files, splits) -> Pair:
    v = clevr_vocab()
    scene = int(R.video[i])
    file = files[scene]
    stem = file.rsplit(".", 1)[0]
    a, b, n, flag = KEYS[R.a[i]], (KEYS[R.b[i]] if R.b[i] >= 0 else None), int(R.n[i]), bool(R.flag[i])
    ground = list(R.ground[i])
    common = {"id": f"{name}:{DATASET}:{stem}", "instrument": name, "phenomenon": STATIC_INSTRUMENTS[name],
                  "video_id": stem, "split": splits[scene], "keyframes": [], "object_indices": [k for k, _ in ground],
                  "objects": [d for _, d in ground], "scene_kind": "static", "media_file": file}
    if name == "existence":
        prog, yes = exist_program(a), "yes" if flag else "no"
        return Pair(**common, caption=T.scene_existence(a, flag), foil=T.scene_existence(a, not flag),
                    caption_text=Text(prog, yes), foil_text=Text(prog, "no" if flag else "yes"),
                    classes=describe(a), classes_foil=describe(a),
                    foil_method="something_to_zero" if flag else "zero_to_something")
    if name.startswith("counting"):
        prog = count_program(a)
        return Pair(**common, caption=T.scene_count(a, n), foil=T.scene_count(a, f),
                    caption_text=Text(prog, str(n)), foil_text=Text(prog, str(f)), classes=n, classes_foil=f,
                    foil_method="numeral replaced")
    if name == "plurals":
        prog = count_program(a)
        return Pair(**common, caption=T.scene_plurality(a, flag), foil=T.scene_plurality(a, not flag),
                    caption_text=Text(prog, "several" if flag else "1"), foil_text=Text(prog, "1" if flag else "several"),
                    classes="multiple" if flag else "one", classes_foil="one" if flag else "multiple",
                    foil_method="pl2sg" if flag else "sg2pl")
    if name == "relations":  # a is RELATIONS[n] of b; the foil says RELATIONS[f]
        return Pair(**common, caption=T.scene_relation(a, n, b), foil=T.scene_relation(a, f, b),
                    caption_text=Text(relation_program(a, n, b), "yes"), foil_text=Text(relation_program(a, f, b), "yes"),
                    classes=RELATIONS[n], classes_foil=RELATIONS[f],
                    foil_method="relation false for the pair, frequency-matched")
    if name == "actant-swap":
        return Pair(**common, caption=T.scene_relation(a, n, b), foil=T.scene_relation(b, n, a),
                    caption_text=Text(relation_program(a, n, b), "yes"), foil_text=Text(relation_program(b, n, a), "yes"),
                    classes=[describe(a), describe(b)], classes_foil=[describe(b), describe(a)],
                    foil_method="swap_actants")
    # foil-it: the noun (shape) replaced by one of which no object fits the other words
    other = np.array([*a[:3], f])
    return Pair(**common, caption=T.scene_existence(a, True), foil=T.scene_existence(other, True),
                caption_text=Text(exist_program(a), "yes"), foil_text=Text(exist_program(other), "yes"),
                classes=v.shape[int(a[ATTRS.index("shape")])], classes_foil=v.shape[f],
                foil_method="noun replaced by an absent one, frequency-matched")
