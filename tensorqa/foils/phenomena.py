"""What each phenomenon can say about each video of a SceneBatch, as tensors (no loop over videos).

``candidates(batch, first_index, seed)`` returns, per instrument, a :class:`Rows` of caption choices
(one per video where the video supports the instrument) with the foil words allowed for each
(``foil_ok: bool[P, W]``, every one false on the video and not true under a synonym); ``generate``
draws the foil words over the whole set so that word frequencies match.

Random choices use ``noise(seed, stream, video index, ...)``, a hash of the video's index in the store,
so the same seed gives the same pairs whatever the batch size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from tensorqa.engine import rng
from tensorqa.engine.primitives.localize import (
    AFTER,
    BEFORE,
    WHILE,
    class_instances,
    interval_mask,
    window_frames,
)
from tensorqa.agqa.semantics import AGQA
from tensorqa.foils.lexicon import phrase_names, relation_objects
from tensorqa.foils.programs import interaction_mask
from tensorqa.scenes.batch import SceneBatch
from tensorqa.scenes.vocab import NO_OBJECT, vocab

NUMERALS = 13  # counting captions and foils say 0 ... 12
SMALL = 4  # "small numbers": 0 ... 3

VIDEO_INSTRUMENTS = {  # instrument (file name) -> VALSE phenomenon, on video stores
    "existence": "existence",
    "counting-balanced": "counting", "counting-small-numbers": "counting", "counting-adversarial": "counting",
    "plurals": "plurals",
    "relations": "relations",
    "action-replacement": "actions", "object-swap": "actions",
    "temporal-order": "temporal", "first-last": "temporal",
    "actant-swap": "actions",
}
STATIC_INSTRUMENTS = {  # on static-scene (CLEVR) stores: the actant swap swaps a relation's two objects
    "existence": "existence",
    "counting-balanced": "counting", "counting-small-numbers": "counting", "counting-adversarial": "counting",
    "plurals": "plurals",
    "relations": "relations",
    "actant-swap": "actions",
    "foil-it": "noun phrases",
}
INSTRUMENTS = VIDEO_INSTRUMENTS | STATIC_INSTRUMENTS  # new instruments go last: STREAMS must not move
WINDOWS = ("while", "before", "after")  # existence's time windows (AGQA's Localize), besides the whole video
# the person's relations an actant swap may use: contact relations that read "is <r> <object>"
SWAP_RELATIONS = tuple(i for i, (k, name) in enumerate(zip(vocab().relation_kinds, vocab().relations))
                       if k == "contact" and name not in ("notcontacting", "otherrelationship", "haveitontheback"))
STREAMS = {name: i + 1 for i, name in enumerate(INSTRUMENTS)}


@dataclass
class Rows:
    """One instrument's caption choices. video: int64[P] store index; a, b, n: int64[P] slots (meaning per
    instrument); flag: bool[P] (polarity / orientation); foil_ok: bool[P, W] or None; ground: bool[P, F]."""

    video: np.ndarray
    a: np.ndarray
    b: np.ndarray
    n: np.ndarray
    flag: np.ndarray
    foil_ok: np.ndarray | None
    ground: list = field(default_factory=list)  # per row: grounded keyframe ids (Charades frame numbers)


def noise(seed: int, stream: int, video: np.ndarray, slot: int, width: int = 1) -> np.ndarray:
    """float64[P, width] in (0, 1): a pure function of (seed, stream, video index, slot, column)."""
    columns = np.arange(width, dtype=np.uint64)[None, :]
    return rng.unit(rng.derive(seed, "foils", stream, slot, np.asarray(video)[:, None], columns))


def pick(ok: torch.Tensor, u: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """A uniform choice among the true columns of each row. ok: bool[P, W] -> (index int64[P], any bool[P])."""
    score = torch.where(ok, torch.as_tensor(u, dtype=torch.float64), torch.tensor(-1.0, dtype=torch.float64))
    return score.argmax(1), ok.any(1)


def _same_group(merged: tuple[int, ...]) -> torch.Tensor:
    m = torch.tensor(merged)
    return (m[:, None] == m[None, :]).to(torch.float32)


def _frame_ids(batch: SceneBatch, rows: torch.Tensor, frames: torch.Tensor) -> list[list[int]]:
    ids = batch.frame_ids[rows].numpy()
    return [ids[i][f].tolist() for i, f in enumerate(frames.numpy())]


def candidates(batch: SceneBatch, first: int, seed: int) -> dict[str, Rows]:
    v = vocab()
    B, O = len(batch), v.num_objects
    video = np.arange(first, first + B, dtype=np.int64)
    rows = torch.arange(B)
    fm = batch.frame_mask
    inter_fo = (batch.rel & torch.as_tensor(interaction_mask())).any(-1) & fm[:, :, None]  # [B, F, O]
    inter_fo[:, :, 0] = False  # the person does not interact with themself
    inter = inter_fo.any(1)  # [B, O]
    obj_group = _same_group(v.object_merged_into)
    act_group = _same_group(v.action_merged_into)
    # instances in AGQA's graph: those that cover a keyframe
    in_graph = batch.inst_mask & batch.inst_frames.any(-1)  # [B, N]
    onehot = torch.nn.functional.one_hot(batch.inst_cls, v.num_actions).bool() & in_graph[:, :, None]  # [B, N, A]
    times = onehot.sum(1)  # [B, A]
    occurs = times > 0
    act_syn = (occurs.float() @ act_group) > 0  # true under a synonym (or itself)
    out: dict[str, Rows] = {}

    def u(name: str, slot: int, width: int = 1) -> np.ndarray:
        return noise(seed, STREAMS[name], video, slot, width)

    # existence: "there is (no) <o> they interact with [while|before|after <a>]"; the foil flips the
    # polarity. The windows are the engine's rule (window_frames around the action's first instance).
    nf = fm.sum(1, keepdim=True)
    ci = class_instances(batch, torch.arange(v.num_actions).expand(B, -1))
    localizes = torch.ones(v.num_actions, dtype=torch.bool)
    for a_id in AGQA.never_localize:
        localizes[v.action_index(a_id)] = False
    win, offered = [], []
    for kind in (WHILE, BEFORE, AFTER):  # the order of WINDOWS
        start, stop, ok = window_frames(kind, ci, None, nf, AGQA)
        win.append(interval_mask(start, stop, fm.shape[1]))
        offered.append(ok & localizes)
    win, offered = torch.stack(win, 1), torch.stack(offered, 1)  # [B, 3, A, F], [B, 3, A]
    choice = torch.as_tensor(np.floor(u("existence", 1)[:, 0] * (1 + len(WINDOWS))).astype(np.int64)) - 1
    kind = choice.clamp(min=0)  # -1: the whole video
    w_a, has_w = pick(offered[rows, kind], u("existence", 0, v.num_actions))
    use_w = has_w & (choice >= 0)
    w_frames = torch.where(use_w[:, None], win[rows, kind, w_a], fm)  # [B, F]
    inter_w = (inter_fo & w_frames[:, :, None]).any(1)
    syn_w = (inter_w.float() @ obj_group) > 0
    yes = torch.as_tensor(u("existence", 2)[:, 0] < 0.5)
    ok = torch.where(yes[:, None], inter_w, ~syn_w)
    ok[:, 0] = False
    # an object the window's own phrase names ("no book while holding a book") is false or true from the
    # wording alone, so a text-only model would solve the pair: such an object is never the subject
    ok &= ~(use_w[:, None] & torch.as_tensor(phrase_names())[w_a])
    o, has = pick(ok, u("existence", 3, O))
    ground = torch.where(yes[:, None], inter_fo[rows, :, o] & w_frames, w_frames)
    keep = has
    out["existence"] = Rows(video[keep.numpy()], o[keep].numpy(), torch.where(use_w, w_a, -1)[keep].numpy(),
                            kind[keep].numpy(), yes[keep].numpy(), None,
                            _frame_ids(batch, rows[keep], ground[keep]))

    # spatial relations: "they are <r> the <o>" -> another spatial relation, false for o (and not entailed)
    spatial = torch.as_tensor(v.relation_mask("spatial"))
    rel_any = (batch.rel & fm[:, :, None, None]).any(1)  # [B, O, R]
    ok = rel_any & spatial
    ok[:, 0] = False
    flat, has = pick(ok.reshape(B, -1), u("relations", 0, O * v.num_relations))
    o, r = flat // v.num_relations, flat % v.num_relations
    implied = (rel_any[rows, o].float() @ torch.as_tensor(v.entailment_closure()).float()) > 0  # [B, R]
    foil_ok = spatial & ~implied
    keep = has & foil_ok.any(1)
    ground = batch.rel[rows, :, o, r] & fm
    out["relations"] = Rows(video[keep.numpy()], o[keep].numpy(), r[keep].numpy(), np.zeros(int(keep.sum()), np.int64),
                            np.ones(int(keep.sum()), bool), foil_ok[keep].numpy(), _frame_ids(batch, rows[keep], ground[keep]))

    # actant swap: "they are r1 o1 while r2 o2" (both in one keyframe) -> "r1 o2 while r2 o1", false in
    # every keyframe even under entailment (holding -> touching) and object synonyms
    swap_rel = torch.as_tensor(SWAP_RELATIONS)  # [C] relation ids
    # both readings plausible (no "eating a shelf"): r1 and r2 each take o1 and o2 (lexicon.relation_objects)
    takes = torch.as_tensor(relation_objects())[swap_rel].T  # [O, C]
    lit = batch.rel[..., swap_rel] & fm[:, :, None, None] & takes  # [B, F, O, C]
    lit[:, :, 0] = False
    closure = v.entailment_closure()
    implied = torch.stack([batch.rel[..., np.flatnonzero(closure[:, r])].any(-1) for r in SWAP_RELATIONS], -1)
    implied &= fm[:, :, None, None]  # [B, F, O, C]: r_c holds on o, or a relation that entails it does
    merged = torch.as_tensor(v.object_merged_into)  # any object of o's synonym group: via the group's target
    implied = torch.zeros_like(implied, dtype=torch.uint8).index_add_(2, merged, implied.to(torch.uint8))[:, :, merged] > 0
    C = swap_rel.shape[0]
    # fits[o1, c1, o2, c2]: the swap reads well (o2 taken by r1, o1 by r2), other relations, other objects
    fits = takes.T[None, :, :, None] & takes[:, None, None, :] \
        & (torch.arange(C)[:, None] != torch.arange(C)[None, :])[None, :, None, :] \
        & (obj_group == 0)[:, None, :, None]  # [O, C, O, C]
    # first_at[b, f, o1 c1]: (o1, r1) holds in keyframe f with some (o2, r2) it fits with
    first_at = lit.reshape(B, -1, O * C) & ((lit.reshape(B, -1, O * C).float() @ fits.reshape(O * C, O * C).T.float()) > 0)
    f, has_f = pick(first_at.any(-1), u("actant-swap", 0, fm.shape[1]))
    first_ok = first_at[rows, f]  # [B, O * C]
    oc, _ = pick(first_ok, u("actant-swap", 1, O * C))
    o1, c1 = oc // C, oc % C
    # swapped[b, o2, c2]: some keyframe has r1 on o2 and r2 on o1
    swapped = torch.einsum("bfo,bfc->boc", implied[rows, :, :, c1].float(), implied[rows, :, o1, :].float()) > 0
    partner = lit[rows, f] & ~swapped & fits[o1, c1]
    oc2, has2 = pick(partner.reshape(B, -1), u("actant-swap", 2, O * C))
    o2, c2 = oc2 // C, oc2 % C
    keep = has_f & has2
    ground = lit[rows, :, o1, c1] & lit[rows, :, o2, c2]
    out["actant-swap"] = Rows(video[keep.numpy()], o1[keep].numpy(), o2[keep].numpy(),
                              (swap_rel[c1] * v.num_relations + swap_rel[c2])[keep].numpy(),
                              np.ones(int(keep.sum()), bool), None, _frame_ids(batch, rows[keep], ground[keep]))

    # actions: replacement by any action that does not happen; object swap by one of the same verb
    act_frames = torch.einsum("bna,bnf->baf", onehot.float(), batch.inst_frames.float()) > 0  # [B, A, F]
    a, has = pick(occurs, u("action-replacement", 0, v.num_actions))
    keep = has
    out["action-replacement"] = Rows(video[keep.numpy()], a[keep].numpy(), np.full(int(keep.sum()), -1),
                                     np.zeros(int(keep.sum()), np.int64), np.ones(int(keep.sum()), bool),
                                     (~act_syn)[keep].numpy(), _frame_ids(batch, rows[keep], act_frames[rows, a][keep]))
    verb, objs = torch.tensor(v.action_verb), torch.tensor(v.action_object)
    swap = (verb[:, None] == verb[None, :]) & (objs[:, None] != objs[None, :]) \
        & (objs[:, None] != NO_OBJECT) & (objs[None, :] != NO_OBJECT)  # [A, A]
    swappable = occurs & ((~act_syn).float() @ swap.T.float() > 0)  # some same-verb partner does not happen
    a, has = pick(swappable, u("object-swap", 0, v.num_actions))
    foil_ok = swap[a] & ~act_syn
    keep = has
    out["object-swap"] = Rows(video[keep.numpy()], a[keep].numpy(), np.full(int(keep.sum()), -1),
                              np.zeros(int(keep.sum()), np.int64), np.ones(int(keep.sum()), bool),
                              foil_ok[keep].numpy(), _frame_ids(batch, rows[keep], act_frames[rows, a][keep]))

    # counting: subject 0 = the objects they interact with, 1 + a = the times action a happens
    subject_n = torch.cat([inter.sum(1, keepdim=True), times], 1)  # [B, 1 + A]
    subject_ok = torch.cat([torch.ones(B, 1, dtype=torch.bool), occurs], 1)
    numerals = torch.arange(NUMERALS)
    for name, lo, hi in (("counting-balanced", 0, NUMERALS - 1), ("counting-small-numbers", 0, SMALL - 1),
                         ("counting-adversarial", SMALL, NUMERALS - 1)):
        ok = subject_ok & (subject_n >= lo) & (subject_n <= hi)
        s, has = pick(ok, u(name, 0, 1 + v.num_actions))
        n = subject_n[rows, s]
        if name == "counting-balanced":
            foil_ok = numerals[None, :] != n[:, None]
        elif name == "counting-small-numbers":
            foil_ok = (numerals[None, :] != n[:, None]) & (numerals[None, :] < SMALL)
        else:
            foil_ok = (numerals[None, :] < SMALL).expand(B, -1)
        # an action is counted from once up: "exactly 0 times" does not read (its absence is existence's)
        foil_ok = foil_ok & ((s == 0)[:, None] | (numerals[None, :] > 0))
        ground = torch.where((s == 0)[:, None], inter_fo[rows, :, :].any(2), act_frames[rows, (s - 1).clamp(min=0)])
        keep = has
        out[name] = Rows(video[keep.numpy()], (s - 1)[keep].numpy(), np.full(int(keep.sum()), -1), n[keep].numpy(),
                         np.ones(int(keep.sum()), bool), foil_ok[keep].numpy(), _frame_ids(batch, rows[keep], ground[keep]))

    # plurality: "<a> once" vs "<a> several times" (flag: the caption is plural)
    several = times >= 2
    want_several = several.any(1) & torch.as_tensor(u("plurals", 1)[:, 0] < 0.5)  # plural cases are rarer
    ok = torch.where(want_several[:, None], several, times == 1)
    a, has = pick(torch.where(ok.any(1, keepdim=True), ok, occurs), u("plurals", 0, v.num_actions))
    n = times[rows, a]
    keep = has
    out["plurals"] = Rows(video[keep.numpy()], a[keep].numpy(), np.full(int(keep.sum()), -1), n[keep].numpy(),
                          (n >= 2)[keep].numpy(), None, _frame_ids(batch, rows[keep], act_frames[rows, a][keep]))

    # temporal order: x and y happen once each, x ends before y starts; flag: the caption says "x before y"
    single = times == 1
    start = torch.einsum("bna,bn->ba", onehot.float(), batch.inst_start.float())  # exact: one instance each
    end = torch.einsum("bna,bn->ba", onehot.float(), batch.inst_end.float())
    pair = single[:, :, None] & single[:, None, :] & (end[:, :, None] < start[:, None, :])  # [B, A, A]
    x, has = pick(pair.any(2), u("temporal-order", 0, v.num_actions))  # x, then y among x's partners
    y, _ = pick(pair[rows, x], u("temporal-order", 2, v.num_actions))
    before = torch.as_tensor(u("temporal-order", 1)[:, 0] < 0.5)
    keep = has
    ground = act_frames[rows, x] | act_frames[rows, y]
    out["temporal-order"] = Rows(video[keep.numpy()], x[keep].numpy(), y[keep].numpy(), np.zeros(int(keep.sum()), np.int64),
                                 before[keep].numpy(), None, _frame_ids(batch, rows[keep], ground[keep]))

    # first / last: the one instance that starts first and the one that ends last, of different classes;
    # flag: the caption is about the first
    inf = torch.tensor(float("inf"))
    s_key = torch.where(in_graph, batch.inst_start.float(), inf)
    e_key = torch.where(in_graph, batch.inst_end.float(), -inf)
    s_min, n_first = s_key.min(1)
    e_max, n_last = e_key.max(1)
    unique = ((s_key == s_min[:, None]).sum(1) == 1) & ((e_key == e_max[:, None]).sum(1) == 1)
    c_first, c_last = batch.inst_cls[rows, n_first], batch.inst_cls[rows, n_last]
    keep = in_graph.any(1) & unique & (c_first != c_last)
    about_first = torch.as_tensor(u("first-last", 0)[:, 0] < 0.5)
    ground = torch.where(about_first[:, None], batch.inst_frames[rows, n_first], batch.inst_frames[rows, n_last])
    out["first-last"] = Rows(video[keep.numpy()], c_first[keep].numpy(), c_last[keep].numpy(),
                             np.zeros(int(keep.sum()), np.int64), about_first[keep].numpy(), None,
                             _frame_ids(batch, rows[keep], ground[keep]))
    return out
