"""Foil words drawn over a whole set so that word frequencies over foils match those over captions.

``matched_draw`` gives pair p word w with probability ok[p, w] x[w] / sum_w' ok[p, w'] x[w'], x fitted
by iterative proportional scaling so each word's expected foil count equals its caption count;
``balanced_draw`` makes the counts equal exactly, dropping pairs where it must; ``balance_flags`` keeps
as many rows of each flag value. The noise is hashed per scene: independent of the batch size.
"""

from __future__ import annotations

import numpy as np


def matched_draw(caption_word: np.ndarray, ok: np.ndarray, u: np.ndarray, iterations: int = 60) -> np.ndarray:
    """int64[P]: a foil word per pair (-1 where none is allowed). caption_word: int64[P]; ok, u: [P, W]."""
    P_, W = ok.shape
    if P_ == 0:
        return np.zeros(0, np.int64)
    okf = ok.astype(np.float64)
    target = np.bincount(caption_word[(caption_word >= 0) & ok.any(1)], minlength=W).astype(np.float64)[:W]
    x = np.ones(W)
    for _ in range(iterations):
        w = okf * x
        tot = w.sum(1, keepdims=True)
        p = np.divide(w, tot, out=np.zeros_like(w), where=tot > 0)
        expected = p.sum(0)
        x = x * np.where(expected > 0, (target + 1e-3) / np.maximum(expected, 1e-12), 1.0)
        x = np.clip(x / x.max(), 1e-9, 1.0)
    w = okf * x
    gumbel = -np.log(-np.log(u))
    score = np.where(ok, np.log(np.maximum(w, 1e-300)) + gumbel, -np.inf)
    choice = score.argmax(1)
    return np.where(ok.any(1), choice, -1)


def _greedy(caption_word, ok, valid, u_order, u_tie) -> np.ndarray:
    W = ok.shape[1]
    owed = np.bincount(caption_word[valid], minlength=W)[:W].astype(np.float64)
    foil = np.full(caption_word.size, -1, np.int64)
    for i in np.argsort(u_order, kind="stable"):
        if not valid[i]:
            continue
        score = np.where(ok[i] & (owed > 0), owed + u_tie[i], -np.inf)
        w = int(score.argmax())
        if score[w] == -np.inf:
            owed[caption_word[i]] -= 1  # dropped: its caption no longer owes a foil
            continue
        foil[i] = w
        owed[w] -= 1
    return foil


def balanced_draw(caption_word: np.ndarray, ok: np.ndarray, u_order: np.ndarray, u_tie: np.ndarray,
                  rounds: int = 8) -> np.ndarray:
    """int64[P]: foil words, -1 where the pair is dropped, so that each word is a foil as often as it is
    a caption. In ``u_order`` (float[P]) each pair gets its most owed allowed word (ties by ``u_tie``
    [P, W]), or is dropped; a word with more captions than pairs that can take it (counting's "1")
    loses the excess captions and the draw reruns (VALSE's cap per class)."""
    W = ok.shape[1]
    valid = ok.any(1) & (caption_word >= 0)
    foil = np.full(caption_word.size, -1, np.int64)
    for _ in range(rounds):
        foil = _greedy(caption_word, ok, valid, u_order, u_tie)
        kept = foil >= 0
        c = np.bincount(caption_word[kept], minlength=W)[:W]
        f = np.bincount(foil[kept], minlength=W)[:W]
        if (c == f).all():
            break
        valid = kept.copy()
        for w in np.nonzero(c != f)[0]:  # drop the latest pairs on the heavier side of w
            mine = np.nonzero(kept & ((caption_word == w) if c[w] > f[w] else (foil == w)))[0]
            valid[mine[np.argsort(-u_order[mine], kind="stable")[: abs(int(c[w]) - int(f[w]))]]] = False
    else:
        foil = np.where(valid, _greedy(caption_word, ok, valid, u_order, u_tie), -1)
    return foil


def balance_flags(flag: np.ndarray, u: np.ndarray) -> np.ndarray:
    """bool[P]: as many rows of each flag value, keeping those with the smallest noise."""
    keep = np.zeros(flag.size, bool)
    k = min(int(flag.sum()), int((~flag).sum()))
    for value in (True, False):
        idx = np.nonzero(flag == value)[0]
        keep[idx[np.argsort(u[idx], kind="stable")[:k]]] = True
    return keep


def balance_flags_within(flag: np.ndarray, group: np.ndarray, u: np.ndarray) -> np.ndarray:
    """bool[P]: ``balance_flags`` inside each group (int[P]), so that a word that comes with the group
    (an article: "a bag" / "some food") is as frequent among captions as among foils."""
    keep = np.zeros(flag.size, bool)
    for g in np.unique(group):
        idx = np.nonzero(group == g)[0]
        keep[idx] = balance_flags(flag[idx], u[idx])
    return keep
