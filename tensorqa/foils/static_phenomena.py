"""What each phenomenon can say about each static (CLEVR) scene of a StaticBatch, as tensors: the static
twin of ``phenomena.candidates``. Descriptions are the keys of ``static_programs.KEYS`` (K = 324):
``match: bool[B, N, K]`` the objects a key picks out, ``count: int64[B, K]`` how many. Per instrument:

    existence               a key; flag: "there is" (count > 0), else "there is no"
    counting-*              a key, n its count; foil_ok bool[P, NUMERALS]
    plurals                 a key, n its count (1 or >= 2); flag: "several"
    relations, actant-swap  a, b = the subject's and anchor's keys (both unique), n = r (the subject is
                            r of the anchor); relations: foil_ok bool[P, 4] the relations false for
                            the pair; actant-swap: the anchor is not r of the subject
    foil-it                 a present key with a shape, n its shape; foil_ok bool[P, 3] the shapes
                            whose key picks out nothing

``ground``: per row, (index, description) of each object the caption is about.
"""

from __future__ import annotations

import numpy as np
import torch

from tensorqa.clevr.keys import scene_match
from tensorqa.foils.phenomena import COUNTING, NUMERALS, STREAMS, Rows, counting_foils, noise, pick
from tensorqa.foils.static_programs import KEYS, describe, key_id
from tensorqa.scenes.static_batch import StaticBatch, clevr_vocab

_KEYS = torch.as_tensor(KEYS)  # [K, 4]
_PATTERN = torch.as_tensor(((KEYS >= 0) * (1 << np.arange(4))).sum(1))  # [K]: which attributes are said
_SAID = _PATTERN > 0  # a key that says something (not bare "thing")
_SHAPES = len(clevr_vocab().shape)
# _SWAP[k, s]: key k with its shape replaced by s (k itself where k says no shape)
_SWAP = torch.as_tensor(np.array([[key_id((*key[:3], s)) if key[3] >= 0 else k for s in range(_SHAPES)]
                                  for k, key in enumerate(KEYS)]))


def describe_objects(batch: StaticBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(match bool[B, N, K], count int64[B, K]): the objects each key picks out (the engine's table,
    :func:`tensorqa.clevr.keys.scene_match`)."""
    match = scene_match(batch.attrs, batch.mask) > 0
    return match, match.sum(1)


def _grounded(batch: StaticBatch, rows: torch.Tensor, picked: np.ndarray) -> list[list[tuple[int, str]]]:
    """Per row: (index, description) of each object picked (picked: bool[P, N])."""
    attrs = batch.attrs[rows].numpy()
    return [[(int(o), describe(attrs[p, o])) for o in np.flatnonzero(m)] for p, m in enumerate(picked)]


def _objects(batch: StaticBatch, match: torch.Tensor, rows: torch.Tensor, key: torch.Tensor):
    return _grounded(batch, rows, match[rows, :, key].numpy())


def _rows(video, keep, a, b, n, flag, foil_ok, ground) -> Rows:
    k = keep.numpy()
    return Rows(video[k], a[keep].numpy(), b[keep].numpy(), n[keep].numpy(), flag[keep].numpy(),
                None if foil_ok is None else foil_ok[keep].numpy(), ground)


def candidates(batch: StaticBatch, first: int, seed: int) -> dict[str, Rows]:
    B, N = batch.mask.shape
    K = _KEYS.shape[0]
    video = np.arange(first, first + B, dtype=np.int64)
    rows = torch.arange(B)
    none = torch.full((B,), -1, dtype=torch.int64)
    match, count = describe_objects(batch)
    out: dict[str, Rows] = {}

    def u(name: str, slot: int, width: int = 1) -> np.ndarray:
        return noise(seed, STREAMS[name], video, slot, width)

    # existence: a pattern of said attributes where both polarities are possible, then the polarity,
    # then a key of that pattern (so "there is" and "there is no" describe alike)
    yes_k, no_k = _SAID & (count > 0), _SAID & (count == 0)
    by_pattern = torch.nn.functional.one_hot(_PATTERN, 16).float()  # [K, 16]
    both = ((yes_k.float() @ by_pattern) > 0) & ((no_k.float() @ by_pattern) > 0)
    p, has_p = pick(both, u("existence", 0, 16))
    yes = torch.as_tensor(u("existence", 1)[:, 0] < 0.5)
    key, has = pick(torch.where(yes[:, None], yes_k, no_k) & (_PATTERN[None] == p[:, None]), u("existence", 2, K))
    keep = has & has_p
    ground = [g if y else [] for g, y in zip(_objects(batch, match, rows[keep], key[keep]), yes[keep].tolist())]
    out["existence"] = _rows(video, keep, key, none, torch.zeros(B, dtype=torch.int64), yes, None, ground)

    # counting: a numeral the scene has a key for (uniform over those in range), then such a key
    numerals = torch.arange(NUMERALS)
    has_n = (count[:, :, None] == numerals).any(1)  # [B, NUMERALS]
    for name, lo, hi in COUNTING:
        n, has_n_ = pick(has_n & (numerals >= lo) & (numerals <= hi), u(name, 0, NUMERALS))
        key, has = pick(count == n[:, None], u(name, 1, K))
        keep = has & has_n_
        out[name] = _rows(video, keep, key, none, n, torch.ones(B, dtype=torch.bool), counting_foils(name, n),
                          _objects(batch, match, rows[keep], key[keep]))

    # plurality: "exactly one <d>" (count 1) vs "several <d>s" (count >= 2); flag: the caption is plural
    single, several = _SAID & (count == 1), _SAID & (count >= 2)
    want = torch.as_tensor(u("plurals", 0)[:, 0] < 0.5)
    ok = torch.where(want[:, None], several, single)
    ok = torch.where(ok.any(1, keepdim=True), ok, single | several)
    key, keep = pick(ok, u("plurals", 1, K))
    n = count[rows, key]
    out["plurals"] = _rows(video, keep, key, none, n, n >= 2, None, _objects(batch, match, rows[keep], key[keep]))

    # relations and actant swap: each object's unique description (one of the keys that picks out it
    # alone), then a (anchor i, subject j, relation r) with rel[i, j, r]: "the <j> is r of the <i>"
    unique = match & (count == 1)[:, None, :] & _SAID  # [B, N, K]
    desc_flat, has_desc = pick(unique.reshape(B * N, K), u("relations", 50, N * K).reshape(B * N, K))
    desc, has_desc = desc_flat.reshape(B, N), has_desc.reshape(B, N)
    eye = torch.eye(N, dtype=torch.bool)
    rel_ok = batch.rel & (has_desc[:, :, None] & has_desc[:, None, :] & ~eye)[..., None]  # [B, N, N, 4]
    R = rel_ok.shape[-1]
    for name in ("relations", "actant-swap"):
        ok = rel_ok if name == "relations" else rel_ok & ~batch.rel.transpose(1, 2)
        flat, has = pick(ok.reshape(B, -1), u(name, 0, N * N * R))
        i, j, r = flat // (N * R), (flat // R) % N, flat % R
        foil_ok = ~batch.rel[rows, i, j] if name == "relations" else None  # [B, 4]
        keep = has & (foil_ok.any(1) if foil_ok is not None else True)
        attrs = batch.attrs[rows[keep]].numpy()
        ground = [[(int(x), describe(attrs[p, x])), (int(y), describe(attrs[p, y]))]
                  for p, (x, y) in enumerate(zip(j[keep].tolist(), i[keep].tolist()))]
        out[name] = _rows(video, keep, desc[rows, j], desc[rows, i], r, torch.ones(B, dtype=torch.bool), foil_ok, ground)

    # foil-it: a present key with a shape; the foil names another shape whose key picks out nothing
    absent = (count[:, _SWAP] == 0) & (_KEYS[:, 3, None] != torch.arange(_SHAPES))  # [B, K, 3]
    ok = (_KEYS[:, 3] >= 0) & (count > 0) & absent.any(-1)
    key, keep = pick(ok, u("foil-it", 0, K))
    out["foil-it"] = _rows(video, keep, key, none, _KEYS[key, 3], torch.ones(B, dtype=torch.bool), absent[rows, key],
                           _objects(batch, match, rows[keep], key[keep]))
    return out
