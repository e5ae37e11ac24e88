"""The text-only baseline: how well a unigram model tells caption from foil without the scene.

Two-fold cross-fitting by pair: a unigram model (add-one smoothed word counts over captions and over
foils) is fitted on one half of each instrument's pairs and scores the other half; a pair is right when
its caption's log-likelihood ratio log P(text | caption) - log P(text | foil) beats its foil's (ties
count half). Near 50 % means the words alone do not give the foil away.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter

import numpy as np

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


def unigram_accuracy(ids: list[str], captions: list[str], foils: list[str]) -> float | None:
    """Percent of pairs whose caption the cross-fitted unigram model ranks above the foil."""
    if not ids:
        return None
    fold = np.array([zlib.crc32(i.encode()) & 1 for i in ids])
    right = 0.0
    for k in (0, 1):
        train, test = np.nonzero(fold != k)[0], np.nonzero(fold == k)[0]
        llr = _llr_model([captions[i] for i in train], [foils[i] for i in train])
        for i in test:
            a, b = llr(captions[i]), llr(foils[i])
            right += 1.0 if a > b else 0.5 if a == b else 0.0
    return round(100.0 * right / len(ids), 2)


def baseline_by_instrument(instruments: list[str], ids: list[str], captions: list[str], foils: list[str]) -> dict:
    out = {}
    for name in sorted(set(instruments)):
        idx = [i for i, n in enumerate(instruments) if n == name]
        out[name] = unigram_accuracy([ids[i] for i in idx], [captions[i] for i in idx], [foils[i] for i in idx])
    return out
