"""The text-only baseline: how well a unigram model tells caption from foil without the scene.

Add-one smoothed word counts over captions and over foils score a text by log P(text | caption) -
log P(text | foil); a pair is right when its caption scores above its foil (ties count half). Fitted
on the set itself (all its word frequencies give away) or cross-fitted on the other half; near 50 %
means the words alone do not give the foil away.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter

import numpy as np

from tensorqa.foils.metrics import report_group

_WORD = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _llr_model(captions: list[str], foils: list[str]):
    c, f = Counter(), Counter()
    for t in captions:
        c.update(tokens(t))
    for t in foils:
        f.update(tokens(t))
    vocab_size = len(set(c) | set(f)) + 1
    nc, nf = sum(c.values()) + vocab_size, sum(f.values()) + vocab_size
    return lambda text: sum(np.log((c[w] + 1) / nc) - np.log((f[w] + 1) / nf) for w in tokens(text))


def _ranked(llr, captions, foils, idx) -> float:
    right = 0.0
    for i in idx:
        a, b = llr(captions[i]), llr(foils[i])
        right += 1.0 if a > b else 0.5 if a == b else 0.0
    return right


def unigram_accuracy(ids: list[str], captions: list[str], foils: list[str], crossfit: bool = False) -> float | None:
    """Percent of pairs whose caption the unigram model ranks above the foil (ties half). By default the
    model is fitted on the pairs it scores: the most a unigram model can get from the set's own word
    frequencies. ``crossfit``: two folds by a hash of the id, each scored by a model of the other."""
    if not ids:
        return None
    if not crossfit:
        right = _ranked(_llr_model(captions, foils), captions, foils, range(len(ids)))
        return round(100.0 * right / len(ids), 2)
    fold = np.array([zlib.crc32(i.encode()) & 1 for i in ids])
    right = 0.0
    for k in (0, 1):
        train, test = np.nonzero(fold != k)[0], np.nonzero(fold == k)[0]
        right += _ranked(_llr_model([captions[i] for i in train], [foils[i] for i in train]), captions, foils, test)
    return round(100.0 * right / len(ids), 2)


def baseline_by_instrument(instruments: list[str], ids: list[str], captions: list[str], foils: list[str],
                           crossfit: bool = False) -> dict:
    """The baseline per group: ``instruments`` names each pair's group (an instrument, or a phenomenon
    to pool the instruments of one phenomenon under one model)."""
    out = {}
    for name in sorted(set(instruments)):
        idx = [i for i, n in enumerate(instruments) if n == name]
        out[name] = unigram_accuracy([ids[i] for i in idx], [captions[i] for i in idx], [foils[i] for i in idx],
                                     crossfit)
    return out


BY_DESIGN = {  # what a reader of the baseline needs to know, per instrument and phenomenon
    "counting-adversarial": "VALSE's adversarial counting: captions say 4 or more, foils 0-3, so the numeral "
                            "alone gives the foil away; a unigram model fitted on the set gets 100 % by design",
}


def baseline_summary(instruments: list[str], phenomena: list[str], ids: list[str], captions: list[str],
                     foils: list[str]) -> dict:
    """Pairs and the unigram baseline (fitted and cross-fitted) overall, per instrument and per phenomenon
    (``counting-adversarial`` beside ``counting``, not in it: ``metrics.report_group``), with the notes
    that apply to the groups present."""
    phenomena = [report_group(p, i) for p, i in zip(phenomena, instruments)]
    per_i, per_p = Counter(instruments), Counter(phenomena)
    out = {"pairs": len(ids), "pairs_per_instrument": dict(sorted(per_i.items())),
           "pairs_per_phenomenon": dict(sorted(per_p.items()))}
    for suffix, cross in (("", False), ("_crossfit", True)):
        out[f"text_only_unigram_acc_r{suffix}"] = {"overall": unigram_accuracy(ids, captions, foils, crossfit=cross),
                                                  **baseline_by_instrument(instruments, ids, captions, foils, cross)}
        out[f"text_only_unigram_acc_r_per_phenomenon{suffix}"] = baseline_by_instrument(phenomena, ids, captions,
                                                                                        foils, cross)
    out["notes"] = {k: v for k, v in BY_DESIGN.items() if k in per_i or k in per_p}
    return out
