"""Caption/foil pairs for a whole store: candidates per batch (``phenomena``, ``static_phenomena``), foil
words drawn over the whole set (``draws``) so word frequencies over foils match those over captions,
then the pairs (here for videos, ``static_pairs`` for CLEVR). The draws hash the pair's scene, so they
do not depend on the batch size.
"""

from __future__ import annotations

import numpy as np

from tensorqa.foils import programs as P
from tensorqa.foils import text as T
from tensorqa.foils.draws import balance_flags, balance_flags_within, balanced_draw, matched_draw
from tensorqa.scenes.vocab import indefinite
from tensorqa.foils.pair import Pair
from tensorqa.foils.phenomena import (
    INSTRUMENTS,
    NUMERALS,
    STREAMS,
    WINDOWS,
    Rows,
    candidates,
    noise,
)
from tensorqa.foils.static_pairs import build_static_pairs
from tensorqa.scenes.vocab import vocab


def _concat(parts: list[Rows]) -> Rows:
    cat = lambda name: np.concatenate([getattr(r, name) for r in parts])
    ok = None if parts[0].foil_ok is None else np.concatenate([r.foil_ok for r in parts])
    return Rows(cat("video"), cat("a"), cat("b"), cat("n"), cat("flag"), ok, [g for r in parts for g in r.ground])


def is_static(store) -> bool:
    from tensorqa.scenes.static_store import StaticStore

    return isinstance(store, StaticStore)


def collect(store, seed: int = 0, max_videos: int | None = None, batch_videos: int = 1024, progress: bool = False):
    """(rows per instrument over the store's first ``max_videos`` scenes, scene ids, splits); a static
    store's scene id is its image file name. ``progress``: a bar over the scenes on stderr."""
    from tqdm import tqdm

    static = is_static(store)
    if static:
        from tensorqa.foils.static_phenomena import candidates as scene_candidates
    stop = len(store) if max_videos is None else min(max_videos, len(store))
    parts: dict[str, list[Rows]] = {name: [] for name in INSTRUMENTS}
    ids, splits = [], []
    with tqdm(total=stop, desc="foils: candidates", unit="scene" if static else "video", disable=not progress,
              dynamic_ncols=True) as bar:
        for first in range(0, stop, batch_videos):
            batch = store.batch(first, min(first + batch_videos, stop))
            ids += batch.image_filenames if static else batch.video_ids
            splits += batch.splits
            for name, rows in (scene_candidates if static else candidates)(batch, first, seed).items():
                parts[name].append(rows)
            bar.update(len(ids) - bar.n)
    return {name: _concat(p) for name, p in parts.items() if p}, ids, splits


def build_pairs(rows: dict[str, Rows], ids: list[str], splits: list[str], seed: int = 0,
                progress: bool = False) -> list[Pair]:
    """The pairs of each instrument's candidate rows (``progress``: a bar over the instruments)."""
    from tqdm import tqdm

    v = vocab()
    pairs: list[Pair] = []
    for name, R in tqdm(rows.items(), desc="foils: pairs", unit="instrument", disable=not progress,
                        dynamic_ncols=True):
        phen = INSTRUMENTS[name]
        u_foil = lambda width, name=name, R=R: noise(seed, STREAMS[name], R.video, 100, width)
        if name in ("relations", "action-replacement", "object-swap") or name.startswith("counting"):
            cap = R.b if name == "relations" else R.a if name in ("action-replacement", "object-swap") \
                else np.where(R.n < NUMERALS, R.n, -1)
            if name.startswith("counting"):  # numerals matched within each subject, so that "time(s)" and
                # "object(s)" match too: word = numeral + NUMERALS x (the subject is an action)
                kind = (R.a >= 0).astype(np.int64)
                cap = np.where(cap >= 0, cap + NUMERALS * kind, -1)
                ok = np.zeros((R.video.size, 2 * NUMERALS), bool)
                ok[kind == 0, :NUMERALS] = R.foil_ok[kind == 0]
                ok[kind == 1, NUMERALS:] = R.foil_ok[kind == 1]
                R = Rows(R.video, R.a, R.b, R.n, R.flag, ok, R.ground)
            if name == "counting-adversarial":  # VALSE's adversarial foils are small on purpose: no matching
                foil = matched_draw(cap, R.foil_ok, u_foil(R.foil_ok.shape[1]))
            else:
                foil = balanced_draw(cap, R.foil_ok, noise(seed, STREAMS[name], R.video, 101)[:, 0],
                                     u_foil(R.foil_ok.shape[1]))
        else:
            foil = np.zeros(R.video.size, np.int64)
        if name.startswith("counting"):
            foil = np.where(foil >= 0, foil % NUMERALS, -1)
        keep = foil >= 0
        if name == "existence":  # as many each way within each article ("a bag" / "some food" <-> "no ...")
            article = np.array([indefinite(v.object_english[o]).split()[0] for o in R.a])
            keep &= balance_flags_within(R.flag, article, u_foil(1)[:, 0])
        elif name in ("plurals", "temporal-order", "first-last"):  # the flipped word: as many each way
            keep &= balance_flags(R.flag, u_foil(1)[:, 0])
        for i in np.nonzero(keep)[0]:
            pairs.append(_pair(name, phen, R, int(i), int(foil[i]), ids, splits, v))
    return pairs


def _pair(name, phen, R: Rows, i: int, f: int, ids, splits, v) -> Pair:
    vid = ids[R.video[i]]
    a, b, n, flag = int(R.a[i]), int(R.b[i]), int(R.n[i]), bool(R.flag[i])
    common = {"id": f"{name}:tensorqa:{vid}", "instrument": name, "phenomenon": phen, "video_id": vid,
                  "split": splits[R.video[i]], "keyframes": list(R.ground[i]), "media_file": f"{vid}.mp4"}
    if name == "existence":  # b: the window's action (-1: the whole video), n: its kind in WINDOWS
        kind = WINDOWS[n]
        prog = P.exists_object(a, None if b < 0 else b, kind)
        yes = "yes" if flag else "no"
        return Pair(**common, caption=T.existence(a, b, flag, kind), foil=T.existence(a, b, not flag, kind),
                    caption_text=P.Text(prog, yes), foil_text=P.Text(prog, "no" if flag else "yes"),
                    classes=v.object_english[a], classes_foil=v.object_english[a],
                    foil_method="something_to_zero" if flag else "zero_to_something", objects=[v.objects[a]])
    if name == "actant-swap":  # a, b: the objects; n: r1 x R + r2
        r1, r2 = divmod(n, v.num_relations)
        return Pair(**common, caption=T.together(r1, a, r2, b), foil=T.together(r1, b, r2, a),
                    caption_text=P.Text(P.together(r1, a, r2, b), "yes"), foil_text=P.Text(P.together(r1, b, r2, a), "yes"),
                    classes=[v.object_english[a], v.object_english[b]], classes_foil=[v.object_english[b], v.object_english[a]],
                    foil_method="swap_actants", objects=[v.objects[a], v.objects[b]])
    if name == "relations":
        return Pair(**common, caption=T.relation(a, b), foil=T.relation(a, f),
                    caption_text=P.Text(P.exists_relation(a, b), "yes"), foil_text=P.Text(P.exists_relation(a, f), "yes"),
                    classes=v.relation_english[b], classes_foil=v.relation_english[f],
                    foil_method="spatial relation false on the scene, frequency-matched", objects=[v.objects[a]])
    if name in ("action-replacement", "object-swap"):
        return Pair(**common, caption=T.action(a), foil=T.action(f),
                    caption_text=P.Text(P.exists_action(a), "yes"), foil_text=P.Text(P.exists_action(f), "yes"),
                    classes=v.action_phrases[a], classes_foil=v.action_phrases[f],
                    foil_method="change_action" if name == "action-replacement" else "swap_object",
                    objects=[] if v.action_object[a] < 0 else [v.objects[v.action_object[a]]])
    if name.startswith("counting"):
        prog = P.COUNT_OBJECTS if a < 0 else P.count_times(a)
        return Pair(**common, caption=T.count(a, n), foil=T.count(a, f),
                    caption_text=P.Text(prog, str(n)), foil_text=P.Text(prog, str(f)), classes=n, classes_foil=f,
                    foil_method="numeral replaced", objects=[])
    if name == "plurals":
        prog = P.count_times(a)
        return Pair(**common, caption=T.plurality(a, flag), foil=T.plurality(a, not flag),
                    caption_text=P.Text(prog, "several" if flag else "1"),
                    foil_text=P.Text(prog, "1" if flag else "several"),
                    classes="multiple" if flag else "once", classes_foil="once" if flag else "multiple",
                    foil_method="pl2sg" if flag else "sg2pl", objects=[])
    if name == "temporal-order":  # flag: "a before b"; else "b after a"
        x, y, word, other = (a, b, "before", "after") if flag else (b, a, "after", "before")
        prog = P.order(x, y)
        return Pair(**common, caption=T.order(x, y, word), foil=T.order(x, y, other),
                    caption_text=P.Text(prog, word), foil_text=P.Text(prog, other),
                    classes=word, classes_foil=other, foil_method="before_after_swap", objects=[])
    # first-last: flag: the caption names the first action ("first" -> "last"); else the last
    c, which, other = (a, "first", "last") if flag else (b, "last", "first")
    phrase = v.action_phrases[c]
    return Pair(**common, caption=T.extreme(c, which), foil=T.extreme(c, other),
                caption_text=P.Text(P.extreme(which), phrase), foil_text=P.Text(P.extreme(other), phrase),
                classes=which, classes_foil=other, foil_method="first_last_swap", objects=[])


def generate_pairs(store, seed: int = 0, max_videos: int | None = None, batch_videos: int = 1024,
                   progress: bool = False) -> list[Pair]:
    """The caption/foil pairs of a store's scenes (``progress``: bars on stderr)."""
    rows, ids, splits = collect(store, seed, max_videos, batch_videos, progress)
    if is_static(store):
        return build_static_pairs(rows, ids, splits, seed)
    return build_pairs(rows, ids, splits, seed, progress)
