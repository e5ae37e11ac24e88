"""What each phenomenon can say about each video of a SceneBatch, as tensors (no loop over videos),
built on the engine's primitives (filter, relate, count, localize).

``candidates(batch, first_index, seed)`` returns, per instrument, a :class:`Rows` of caption choices
with the foil words allowed for each (``foil_ok: bool[P, W]``, every one false on the video and not
true under a synonym); ``generate`` draws the foil words over the whole set. Random choices use
``noise(seed, stream, video index, ...)``, so the same seed gives the same pairs whatever the batch size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from tensorqa.engine import rng
from tensorqa.engine.primitives.query import count
from tensorqa.engine.primitives.filter import interacted_frames, relate, window_any
from tensorqa.engine.primitives.localize import AFTER, BEFORE, WHILE, class_instances, instance_frames, interval_mask, \
    window_frames
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


# the three counting instruments: the range of the caption's numeral
COUNTING = (("counting-balanced", 0, NUMERALS - 1), ("counting-small-numbers", 0, SMALL - 1),
            ("counting-adversarial", SMALL, NUMERALS - 1))


def counting_foils(name: str, n: torch.Tensor) -> torch.Tensor:
    """bool[P, NUMERALS]: the numerals a counting instrument's foil may say for true counts n int64[P]."""
    numerals = torch.arange(NUMERALS)
    if name == "counting-balanced":
        return numerals[None, :] != n[:, None]
    if name == "counting-small-numbers":
        return (numerals[None, :] != n[:, None]) & (numerals[None, :] < SMALL)
    return (numerals[None, :] < SMALL).expand(len(n), -1)


class _Facts:
    """What every video phenomenon reads, derived once per batch with the engine's primitives."""

    def __init__(self, batch: SceneBatch, first: int, seed: int):
        v = self.v = vocab()
        B = len(batch)
        self.batch, self.B, self.O, self.seed = batch, B, v.num_objects, seed
        self.video = np.arange(first, first + B, dtype=np.int64)
        self.rows = torch.arange(B)
        self.fm = batch.frame_mask
        interaction_mask()  # fails where the objExists rule reads obj instead of relations
        self.inter_fo = interacted_frames(batch, AGQA.interaction_rule("objExists"))  # [B, F, O]
        self.inter_fo[:, :, 0] = False  # the person does not interact with themself
        self.obj_group = _same_group(v.object_merged_into)
        self.ci = class_instances(batch, torch.arange(v.num_actions).expand(B, -1))
        self.times = self.ci.count  # [B, A] instances that cover a keyframe (those in AGQA's graph)
        self.occurs = self.times > 0
        self.act_syn = (self.occurs.float() @ _same_group(v.action_merged_into)) > 0  # true under a synonym
        self.act_frames = batch.act.transpose(1, 2)  # [B, A, F]

    def u(self, name: str, slot: int, width: int = 1) -> np.ndarray:
        return noise(self.seed, STREAMS[name], self.video, slot, width)

    def rows_of(self, keep: torch.Tensor, a, b=-1, n=0, flag=True, foil_ok=None, ground=None) -> Rows:
        """The kept rows; a scalar column is the same for every row."""
        k = int(keep.sum())

        def col(x, dtype=None):
            return np.full(k, x, dtype) if isinstance(x, (bool, int)) else x[keep].numpy()
        return Rows(self.video[keep.numpy()], col(a), col(b), col(n, np.int64), col(flag, bool),
                    None if foil_ok is None else foil_ok[keep].numpy(), _frame_ids(self.batch, self.rows[keep], ground[keep]))


def _existence(c: _Facts) -> Rows:
    """"there is (no) <o> they interact with [while|before|after <a>]"; the foil flips the polarity.
    The windows are the engine's rule (window_frames around the action's first instance)."""
    v, O, rows, fm = c.v, c.O, c.rows, c.fm
    localizes = torch.ones(v.num_actions, dtype=torch.bool)
    for a_id in AGQA.never_localize:
        localizes[v.action_index(a_id)] = False
    win, offered = [], []
    for kind in (WHILE, BEFORE, AFTER):  # the order of WINDOWS
        start, stop, ok = window_frames(kind, c.ci, None, fm.sum(1, keepdim=True), AGQA)
        win.append(interval_mask(start, stop, fm.shape[1]))
        offered.append(ok & localizes)
    win, offered = torch.stack(win, 1), torch.stack(offered, 1)  # [B, 3, A, F], [B, 3, A]
    choice = torch.as_tensor(np.floor(c.u("existence", 1)[:, 0] * (1 + len(WINDOWS))).astype(np.int64)) - 1
    kind = choice.clamp(min=0)  # -1: the whole video
    w_a, has_w = pick(offered[rows, kind], c.u("existence", 0, v.num_actions))
    use_w = has_w & (choice >= 0)
    w_frames = torch.where(use_w[:, None], win[rows, kind, w_a], fm)  # [B, F]
    inter_w = window_any(w_frames[:, None], c.inter_fo)[:, 0]  # [B, O]
    syn_w = (inter_w.float() @ c.obj_group) > 0
    yes = torch.as_tensor(c.u("existence", 2)[:, 0] < 0.5)
    ok = torch.where(yes[:, None], inter_w, ~syn_w)
    ok[:, 0] = False
    # an object the window's own phrase names ("no book while holding a book") is false or true from the
    # wording alone, so a text-only model would solve the pair: such an object is never the subject
    ok &= ~(use_w[:, None] & torch.as_tensor(phrase_names())[w_a])
    o, has = pick(ok, c.u("existence", 3, O))
    ground = torch.where(yes[:, None], c.inter_fo[rows, :, o] & w_frames, w_frames)
    return c.rows_of(has, o, torch.where(use_w, w_a, -1), kind, yes, ground=ground)


def _relations(c: _Facts) -> Rows:
    """"they are <r> the <o>" -> another spatial relation, false for o (and not entailed)."""
    v, B, rows = c.v, c.B, c.rows
    spatial = torch.as_tensor(v.relation_mask("spatial"))
    rel_any = relate(c.batch.rel, c.fm[:, None])[:, 0]  # [B, O, R] over the whole video
    ok = rel_any & spatial
    ok[:, 0] = False
    flat, has = pick(ok.reshape(B, -1), c.u("relations", 0, c.O * v.num_relations))
    o, r = flat // v.num_relations, flat % v.num_relations
    implied = (rel_any[rows, o].float() @ torch.as_tensor(v.entailment_closure()).float()) > 0  # [B, R]
    foil_ok = spatial & ~implied
    return c.rows_of(has & foil_ok.any(1), o, r, foil_ok=foil_ok, ground=c.batch.rel[rows, :, o, r] & c.fm)


def _actant_swap(c: _Facts) -> Rows:
    """"they are r1 o1 while r2 o2" (both in one keyframe) -> "r1 o2 while r2 o1", false in every
    keyframe even under entailment (holding -> touching) and object synonyms."""
    v, B, O, rows, fm, rel = c.v, c.B, c.O, c.rows, c.fm, c.batch.rel
    swap_rel = torch.as_tensor(SWAP_RELATIONS)  # [C] relation ids
    # both readings plausible (no "eating a shelf"): r1 and r2 each take o1 and o2 (lexicon.relation_objects)
    takes = torch.as_tensor(relation_objects())[swap_rel].T  # [O, C]
    lit = rel[..., swap_rel] & fm[:, :, None, None] & takes  # [B, F, O, C]
    lit[:, :, 0] = False
    closure = v.entailment_closure()
    implied = torch.stack([rel[..., np.flatnonzero(closure[:, r])].any(-1) for r in SWAP_RELATIONS], -1)
    implied &= fm[:, :, None, None]  # [B, F, O, C]: r_c holds on o, or a relation that entails it does
    merged = torch.as_tensor(v.object_merged_into)  # any object of o's synonym group: via the group's target
    implied = torch.zeros_like(implied, dtype=torch.uint8).index_add_(2, merged, implied.to(torch.uint8))[:, :, merged] > 0
    C = swap_rel.shape[0]
    # fits[o1, c1, o2, c2]: the swap reads well (o2 taken by r1, o1 by r2), other relations, other objects
    fits = takes.T[None, :, :, None] & takes[:, None, None, :] \
        & (torch.arange(C)[:, None] != torch.arange(C)[None, :])[None, :, None, :] \
        & (c.obj_group == 0)[:, None, :, None]  # [O, C, O, C]
    # first_at[b, f, o1 c1]: (o1, r1) holds in keyframe f with some (o2, r2) it fits with
    flat = lit.reshape(B, -1, O * C)
    first_at = flat & ((flat.float() @ fits.reshape(O * C, O * C).T.float()) > 0)
    f, has_f = pick(first_at.any(-1), c.u("actant-swap", 0, fm.shape[1]))
    oc, _ = pick(first_at[rows, f], c.u("actant-swap", 1, O * C))
    o1, c1 = oc // C, oc % C
    # swapped[b, o2, c2]: some keyframe has r1 on o2 and r2 on o1
    swapped = torch.einsum("bfo,bfc->boc", implied[rows, :, :, c1].float(), implied[rows, :, o1, :].float()) > 0
    partner = lit[rows, f] & ~swapped & fits[o1, c1]
    oc2, has2 = pick(partner.reshape(B, -1), c.u("actant-swap", 2, O * C))
    o2, c2 = oc2 // C, oc2 % C
    return c.rows_of(has_f & has2, o1, o2, swap_rel[c1] * v.num_relations + swap_rel[c2],
                     ground=lit[rows, :, o1, c1] & lit[rows, :, o2, c2])


def _actions(c: _Facts) -> dict[str, Rows]:
    """Replacement by any action that does not happen; object swap by one of the same verb."""
    v = c.v
    a, has = pick(c.occurs, c.u("action-replacement", 0, v.num_actions))
    out = {"action-replacement": c.rows_of(has, a, foil_ok=~c.act_syn, ground=c.act_frames[c.rows, a])}
    verb, objs = torch.tensor(v.action_verb), torch.tensor(v.action_object)
    swap = (verb[:, None] == verb[None, :]) & (objs[:, None] != objs[None, :]) \
        & (objs[:, None] != NO_OBJECT) & (objs[None, :] != NO_OBJECT)  # [A, A]
    swappable = c.occurs & ((~c.act_syn).float() @ swap.T.float() > 0)  # some same-verb partner does not happen
    a, has = pick(swappable, c.u("object-swap", 0, v.num_actions))
    out["object-swap"] = c.rows_of(has, a, foil_ok=swap[a] & ~c.act_syn, ground=c.act_frames[c.rows, a])
    return out


def _counting(c: _Facts) -> dict[str, Rows]:
    """Subject 0 = the objects they interact with, 1 + a = the times action a happens."""
    rows, inter_fo = c.rows, c.inter_fo
    inter = window_any(c.fm[:, None], inter_fo)[:, 0]  # [B, O] over the whole video
    subject_n = torch.cat([count(inter)[:, None], c.times], 1)  # [B, 1 + A]
    subject_ok = torch.cat([torch.ones(c.B, 1, dtype=torch.bool), c.occurs], 1)
    out = {}
    for name, lo, hi in COUNTING:
        s, has = pick(subject_ok & (subject_n >= lo) & (subject_n <= hi), c.u(name, 0, 1 + c.v.num_actions))
        n = subject_n[rows, s]
        # an action is counted from once up: "exactly 0 times" does not read (its absence is existence's)
        foil_ok = counting_foils(name, n) & ((s == 0)[:, None] | (torch.arange(NUMERALS)[None, :] > 0))
        ground = torch.where((s == 0)[:, None], inter_fo.any(2), c.act_frames[rows, (s - 1).clamp(min=0)])
        out[name] = c.rows_of(has, s - 1, n=n, foil_ok=foil_ok, ground=ground)
    return out


def _plurals(c: _Facts) -> Rows:
    """"<a> once" vs "<a> several times" (flag: the caption is plural)."""
    times = c.times
    several = times >= 2
    want_several = several.any(1) & torch.as_tensor(c.u("plurals", 1)[:, 0] < 0.5)  # plural cases are rarer
    ok = torch.where(want_several[:, None], several, times == 1)
    a, has = pick(torch.where(ok.any(1, keepdim=True), ok, c.occurs), c.u("plurals", 0, c.v.num_actions))
    n = times[c.rows, a]
    return c.rows_of(has, a, n=n, flag=n >= 2, ground=c.act_frames[c.rows, a])


def _temporal_order(c: _Facts) -> Rows:
    """x and y happen once each, x ends before y starts; flag: the caption says "x before y"."""
    single = c.times == 1
    start = c.batch.inst_start.gather(1, c.ci.first_inst)  # [B, A], exact where the class has one instance
    end = c.batch.inst_end.gather(1, c.ci.first_inst)
    pair = single[:, :, None] & single[:, None, :] & (end[:, :, None] < start[:, None, :])  # [B, A, A]
    x, has = pick(pair.any(2), c.u("temporal-order", 0, c.v.num_actions))  # x, then y among x's partners
    y, _ = pick(pair[c.rows, x], c.u("temporal-order", 2, c.v.num_actions))
    before = torch.as_tensor(c.u("temporal-order", 1)[:, 0] < 0.5)
    return c.rows_of(has, x, y, flag=before, ground=c.act_frames[c.rows, x] | c.act_frames[c.rows, y])


def _first_last(c: _Facts) -> Rows:
    """The one instance that starts first and the one that ends last, of different classes; flag: the
    caption is about the first."""
    batch, rows = c.batch, c.rows
    in_graph = instance_frames(batch)[2]  # [B, N] instances that cover a keyframe
    inf = torch.tensor(float("inf"))
    s_key = torch.where(in_graph, batch.inst_start.float(), inf)
    e_key = torch.where(in_graph, batch.inst_end.float(), -inf)
    s_min, n_first = s_key.min(1)
    e_max, n_last = e_key.max(1)
    unique = ((s_key == s_min[:, None]).sum(1) == 1) & ((e_key == e_max[:, None]).sum(1) == 1)
    c_first, c_last = batch.inst_cls[rows, n_first], batch.inst_cls[rows, n_last]
    keep = in_graph.any(1) & unique & (c_first != c_last)
    about_first = torch.as_tensor(c.u("first-last", 0)[:, 0] < 0.5)
    ground = torch.where(about_first[:, None], batch.inst_frames[rows, n_first], batch.inst_frames[rows, n_last])
    return c.rows_of(keep, c_first, c_last, flag=about_first, ground=ground)


def candidates(batch: SceneBatch, first: int, seed: int) -> dict[str, Rows]:
    c = _Facts(batch, first, seed)
    out = {"existence": _existence(c), "relations": _relations(c), "actant-swap": _actant_swap(c)}
    out |= _actions(c)
    out |= _counting(c)
    out |= {"plurals": _plurals(c), "temporal-order": _temporal_order(c), "first-last": _first_last(c)}
    return out
