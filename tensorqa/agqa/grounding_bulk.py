"""The bulk path of :mod:`.grounding`: columns, with no Python loop over rows (scene tables per
video block, rows laid out per group of identical key layouts, id lists built once per distinct
request, the JSON texts one gather over a string pool). ``grounding.grounding_column`` is its
public face."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from tensorqa.errors import TensorQAError
from tensorqa.engine.primitives.localize import KIND_NAMES, ClassInstances, class_instances, compare_bounds, window_frames
from tensorqa.engine.program_shapes import PROGRAM_SHAPES
from tensorqa.scenes.batch import SceneBatch
from tensorqa.engine.semantics import ANY_PRESENT, Semantics, interaction_relations
from tensorqa.agqa.templates import (
    ACTION_REFERENCE_FRAMES,
    OBJECT_REFERENCE_FRAMES,
    TEMPLATES,
    WINDOW_FRAMES,
)
from tensorqa.scenes.vocab import vocab
from tensorqa.agqa.grounding_text import (
    _CATEGORY,
    _FORWARD,
    ACTION_SLOTS,
    CHOOSE,
    EXISTS_OBJ,
    OBJ_REL,
    REF_KINDS,
    REL_ANY,
    SIDE_OBJ,
    SIDE_REL,
    STRETCH,
    VARIANT_SHIFT,
    VIDEO_OPENING,
    VIDEO_OPENING_SPAN,
    ZERO_WIDTH_SHIFT,
    _action_reference_layout,
    _action_reference_text,
    _frame_parts,
    _lit,
    _object_phrases,
    _object_reference_phrases,
)
from tensorqa.agqa.text import gather_text

# sources of id lists; a request is one int64 row (source, video, o, o2, r, lo, hi)
SRC_NONE, SRC_OBJ_REL, SRC_PAIR_REL, SRC_REL_ANY, SRC_INTERACT_EXISTS, SRC_INTERACT_TIME, SRC_FRAMES = range(7)
_MAX_FRAMES = 64  # frame variants per template (records.render's group key uses the same bound)


@functools.cache
def _tables() -> dict[str, Any]:
    """Constant tables of the bulk path.

    ``lexicon``: every string a question is re-rendered from (slot phrases, frame literals), one
    pyarrow array addressed by ``base[section] + index`` or ``literal[text]``, with ``length``
    int64 per entry. ``json_static``: the fixed atoms of the JSON texts (``JSON_END``,
    ``JSON_EMPTY``, then ``'"cNNN/1"'`` per action from ``JSON_INSTANCE``, "" for none)."""
    v = vocab()
    R, A = v.num_relations, v.num_actions
    counts = {len(f) for f in OBJECT_REFERENCE_FRAMES.values()}
    assert len(counts) == 1, "every reference kind has the same number of wordings"
    V = counts.pop()
    strings, base = [""], {}

    def section(name: str, xs) -> None:
        base[name] = len(strings)
        strings.extend(xs)

    # object reference phrases [((kind - 1) * V + variant) * R + relation]
    ref_phrases = [_object_reference_phrases(k, r)[var] for k in REF_KINDS[1:] for var in range(V) for r in range(R)]
    has_frame = [a_id in ACTION_REFERENCE_FRAMES for a_id in v.actions]
    section("object_phrase", _object_phrases())
    section("relation_word", v.relation_english)
    section("action_phrase", v.action_phrases)
    section("ref_phrase", ref_phrases)
    # indirect-object action texts [action * len(ref_phrases) + reference phrase index]
    section("action_ref", (_action_reference_text(a, p) if has_frame[a] else "" for a in range(A) for p in ref_phrases))
    pre = [WINDOW_FRAMES[k].split("{action}")[0] for k in KIND_NAMES]  # " before ", ... by time kind
    section("window_pre", pre)
    between_mid = WINDOW_FRAMES["between"].split("{action}")[1].split("{action2}")[0]  # " and "
    literal = {}
    names = list(TEMPLATES)
    opening = np.zeros((len(names), _MAX_FRAMES), bool)
    for i, t in enumerate(names):
        assert len(TEMPLATES[t].frames) <= _MAX_FRAMES
        for f, text in enumerate(TEMPLATES[t].frames):
            opening[i, f] = text.startswith(VIDEO_OPENING)
            for is_slot, part in _frame_parts(t, f):
                if not is_slot and part not in literal:
                    literal[part] = len(strings)
                    strings.append(part)
    literal.setdefault(between_mid, len(strings))
    strings.append(between_mid)
    before = np.zeros((A + 1, 2), np.int64)  # literal characters before the action's 1st / 2nd {object}
    n_inner = np.zeros(A + 1, np.int64)
    for a in range(A):
        if has_frame[a]:
            layout = _action_reference_layout(a)
            n_inner[a], before[a, :len(layout)] = len(layout), layout
    assert n_inner.max() <= 2
    return {
        "V": V, "R": R, "A": A, "n_ref": len(ref_phrases),
        "lexicon": pa.array(strings, pa.string()), "length": np.array([len(x) for x in strings], np.int64),
        "base": base, "literal": literal, "between_mid": between_mid,
        "action_ref_before": before, "action_ref_inner": n_inner,
        "prefix": pa.array([f"{x}/" for x in v.object_ids] + [f"{x}/" for x in v.relation_ids] + [""], pa.string()),
        "json_static": pa.array(["", "]}", "{}"] + [f'"{a}/1"' for a in v.actions] + [""], pa.string()),
        "templates": names, "opening": opening,
        "category": np.array([_CATEGORY[TEMPLATES[t].program] for t in names], np.int64),
        "forward": np.array([TEMPLATES[t].program in _FORWARD for t in names]),
        "has_window": np.array([TEMPLATES[t].has_window for t in names]),
        # merged form: the object an indirect-object action's reference points at (§b.3)
        "action_object": np.asarray([v.merged_action_object(a) for a in range(v.num_actions)], np.int64),
    }


JSON_END, JSON_EMPTY, JSON_INSTANCE = 1, 2, 3  # atoms of _tables()["json_static"]


def _codes(records: pa.Table, column: str, values: list[str], what: str) -> np.ndarray:
    """int64[M]: index of each value of a column in ``values``; -1 for "" / null / an absent
    optional column; an unknown value raises."""
    if column not in records.column_names:
        return np.full(records.num_rows, -1, np.int64)
    col = records.column(column)
    out = pc.index_in(col, value_set=pa.array(values, pa.string())).fill_null(-1).to_numpy(zero_copy_only=False)
    out = out.astype(np.int64)
    given = pc.fill_null(pc.not_equal(col, _lit("")), False).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero((out < 0) & given)
    if bad.size:
        raise TensorQAError(f"sg_grounding: unknown {what} {col[int(bad[0])].as_py()!r} in column {column}")
    return out


def _first(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position of the first True in each row of m bool[n, F], whether the row has one)."""
    return m.argmax(1), m.any(1)


def _last(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return m.shape[1] - 1 - m[:, ::-1].argmax(1), m.any(1)


def _run(lo: np.ndarray, hi: np.ndarray, F: int) -> np.ndarray:
    """bool[n, F]: keyframe positions in [lo, hi)."""
    pos = np.arange(F)
    return (pos >= lo[:, None]) & (pos < hi[:, None])


def _stretches(occ: np.ndarray, lo: np.ndarray, hi: np.ndarray, forward: bool, extra: int,
               check: Callable[[np.ndarray], None]) -> tuple[np.ndarray, np.ndarray]:
    """objFirst (forward) / objLast stretches [lo, hi) of rows occ bool[n, F] inside [lo, hi)."""
    inwin = _run(lo, hi, occ.shape[1])
    pos = np.arange(occ.shape[1])
    if forward:
        start, ok = _first(occ & inwin)
        stop, ok2 = _first(~occ & inwin & (pos >= start[:, None]))
        check(ok & ok2)
        return start, stop + 1
    last, ok = _last(occ & inwin)
    gap, ok2 = _last(~occ & inwin & (pos <= last[:, None]))
    check(ok & ok2)
    return np.maximum(gap - extra, lo), last + 1


@dataclass
class _SceneTables:
    """B videos as numpy arrays (F keyframes, padded) and their keyframe names."""

    rel: np.ndarray  # bool[B, F, O, R]
    occurs: np.ndarray  # bool[B, F, R]: the relation holds with some object
    interact: dict  # "objExists" / "objTime" -> bool[B, F, O] (§c.1 rules)
    nf: np.ndarray  # int64[B] real keyframes
    names: pa.Array  # [B * F] "000105"
    count: np.ndarray  # int64[B, A + 1] instances with keyframes (column A: "no action", 0)
    first0: np.ndarray  # int64[B, A + 1] first / last keyframe of the first instance
    last0: np.ndarray
    first1: np.ndarray  # int64[B, A + 1] first / last keyframe of the last instance
    last1: np.ndarray
    present: np.ndarray  # bool[B, A + 1] some instance, with or without keyframes: cNNN/1 exists

    @classmethod
    def build(cls, batch: SceneBatch, sem: Semantics) -> _SceneTables:
        batch = batch.to("cpu")
        A = vocab().num_actions
        B = len(batch)
        rel = batch.rel.numpy()
        ci = class_instances(batch, torch.arange(A).expand(B, A))

        def pad(t: torch.Tensor) -> np.ndarray:
            return np.concatenate([t.numpy(), np.zeros((B, 1), np.int64)], 1)

        present = np.zeros((B, A + 1), bool)
        b, n = np.nonzero(batch.inst_mask.numpy())
        present[b, batch.inst_cls.numpy()[b, n]] = True
        interact = {}
        for context in ("objExists", "objTime"):
            rule = sem.interaction_rule(context)
            interact[context] = batch.obj.numpy() if rule == ANY_PRESENT else rel[..., interaction_relations(rule)].any(-1)
        fids = pa.array(batch.frame_ids.numpy().reshape(-1).astype(np.int64)).cast(pa.string())
        return cls(rel=rel, occurs=rel.any(2), interact=interact, nf=batch.frame_mask.sum(1).numpy().astype(np.int64),
                   names=pc.utf8_lpad(fids, 6, "0"), count=pad(ci.count), first0=pad(ci.first_kf0),
                   last0=pad(ci.last_kf0), first1=pad(ci.first_kf1), last1=pad(ci.last_kf1), present=present)

    @property
    def F(self) -> int:
        return self.rel.shape[1]

    def instances(self, b: np.ndarray, a: np.ndarray) -> ClassInstances:
        """The ClassInstances of action a[i] in video b[i] (instance indices are not kept: zeros)."""
        def at(t: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray(t[b, a]))
        unused = torch.zeros(len(b), dtype=torch.long)
        return ClassInstances(count=at(self.count), first_inst=unused, last_inst=unused, first_kf0=at(self.first0),
                              last_kf0=at(self.last0), first_kf1=at(self.first1), last_kf1=at(self.last1))


@functools.cache
def _action_slot_order() -> np.ndarray:
    """int64[T, 4]: per template, the action slots (``ACTION_SLOTS`` indices, -1 padding) in the
    order their ``ToAction`` calls first appear in the program text (``<window>`` holds X then Y)."""
    names = _tables()["templates"]
    out = np.full((len(names), len(ACTION_SLOTS)), -1, np.int64)
    for i, t in enumerate(names):
        text = PROGRAM_SHAPES[TEMPLATES[t].program]
        found = []
        for m in re.finditer(r"<(action2?|window)>", text):
            for slot in (("window_action", "window_action2") if m.group(1) == "window" else (m.group(1),)):
                if slot not in found:
                    found.append(slot)
        out[i, :len(found)] = [ACTION_SLOTS.index(slot) for slot in found]
    return out


_REFERENCE_RELATION = r"\[relations, (?P<relation>[^,\]]+), objects\]"


def _reference_relations(records: pa.Table, template: np.ndarray, aref: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{action slot: int64[M] relation of its indirect-object action's reference (-1: direct)}.

    Read from the program text without parsing it: the k-th ``ToAction(`` of a program belongs to
    the k-th indirect action slot in the template's order (:func:`_action_slot_order`), and the
    reference's relation is the first ``[relations, R, objects]`` after it."""
    M = records.num_rows
    out = {s: np.full(M, -1, np.int64) for s in ACTION_SLOTS}
    rows = np.flatnonzero(np.any([aref[s] > 0 for s in ACTION_SLOTS], 0))
    if not rows.size:
        return out
    pieces = pc.split_pattern(records.column("program").take(pa.array(rows)).combine_chunks(), "ToAction(")
    offsets = pieces.offsets.to_numpy().astype(np.int64)
    start = offsets[:-1] - offsets[0]  # a row's piece start + k: the text after its k-th ToAction(
    n_pieces = np.diff(offsets)
    words = pc.extract_regex(pieces.flatten(), _REFERENCE_RELATION).field("relation")
    rel = pc.index_in(words, value_set=pa.array(vocab().relation_english)).fill_null(-1).to_numpy(zero_copy_only=False)
    order = _action_slot_order()[template[rows]]  # [n, 4]
    seen = np.zeros(rows.size, np.int64)
    for k in range(order.shape[1]):
        for j, slot in enumerate(ACTION_SLOTS):
            hit = (order[:, k] == j) & (aref[slot][rows] > 0)
            seen = seen + hit
            ok = hit & (seen < n_pieces)
            out[slot][rows[ok]] = rel[start[ok] + seen[ok]]
    return out


class _Rows:
    """A block of records as integer columns (int64[M]; -1 where a slot is unused), with their
    windows [lo, hi) and evidence runs [elo, ehi) as keyframe positions (module docstring)."""

    def __init__(self, records: pa.Table, video: np.ndarray, st: _SceneTables, sem: Semantics):
        t, v = _tables(), vocab()
        self.M = records.num_rows
        self.qid = records.column("question_id") if "question_id" in records.column_names else None
        self.b = video
        self.template = _codes(records, "template", t["templates"], "template")
        self.check(self.template >= 0, np.arange(self.M), "template")
        self.frame = records.column("frame").to_numpy(zero_copy_only=False).astype(np.int64)
        n_frames = np.array([len(TEMPLATES[n].frames) for n in t["templates"]])[self.template]
        self.check((self.frame >= 0) & (self.frame < n_frames), np.arange(self.M), "frame of its template")
        self.o1, self.o2 = (_codes(records, c, list(v.object_ids), "object id") for c in ("object", "object2"))
        self.r = _codes(records, "relation", list(v.relation_ids), "relation id")
        self.oref1, self.oref2 = (_codes(records, c, list(REF_KINDS), "reference kind").clip(min=0)
                                  for c in ("object_ref", "object2_ref"))
        self.oref_rel1, self.oref_rel2 = (_codes(records, c, list(v.relation_ids), "relation id")
                                          for c in ("object_ref_relation", "object2_ref_relation"))
        self.act = {s: _codes(records, s, list(v.actions), "action id") for s in ACTION_SLOTS}
        self.aref = {s: _codes(records, s + "_ref", list(REF_KINDS), "reference kind").clip(min=0) for s in ACTION_SLOTS}
        self.aref_rel = _reference_relations(records, self.template, self.aref)
        for s in ACTION_SLOTS:
            self.check((self.aref[s] == 0) | (self.aref_rel[s] >= 0), np.arange(self.M), f"ToAction reference for {s}")
        self.category = t["category"][self.template]
        self.has_window = t["has_window"][self.template]
        self.kind = np.where(self.has_window, _codes(records, "window", list(KIND_NAMES), "window kind").clip(min=0), 0)
        answer = records.column("answer")
        self.before = pc.fill_null(pc.equal(answer, _lit("before")), False).to_numpy(zero_copy_only=False)
        self._check_actions(st)
        self.lo, self.hi = self._windows(st, sem)
        self.elo, self.ehi = self._evidence(st, sem)

    def name(self, i: int) -> str:
        return str(self.qid[i]) if self.qid is not None else f"at row {i}"

    def check(self, ok: np.ndarray, rows: np.ndarray, what: str) -> None:
        if not ok.all():
            raise TensorQAError(f"sg_grounding: record {self.name(int(rows[~ok][0]))}: no {what} "
                                "(record and scene disagree)")

    def checker(self, rows: np.ndarray, what: str) -> Callable[[np.ndarray], None]:
        return lambda ok: self.check(ok, rows, what)

    def _check_actions(self, st: _SceneTables) -> None:
        """Localizing and compared actions must have keyframes in the video."""
        A = vocab().num_actions
        for used, a in ((self.has_window & (self.kind > 0), self.act["window_action"]),
                        (self.has_window & (self.kind == 4), self.act["window_action2"]),
                        (np.isin(self.category, (SIDE_REL, SIDE_OBJ)), self.act["action"])):
            ok = ~used | ((a >= 0) & (st.count[self.b, np.where(a < 0, A, a)] > 0))
            self.check(ok, np.arange(self.M), "keyframe of a localizing or compared action in its video")

    def _windows(self, st: _SceneTables, sem: Semantics) -> tuple[np.ndarray, np.ndarray]:
        """[lo, hi) of the localization window (§a.1, ``localize.window_frames``: the one rule);
        the whole video without one."""
        b = self.b
        nf = torch.from_numpy(st.nf[b])
        ci_x, ci_y = (st.instances(b, self.act[s].clip(min=0)) for s in ("window_action", "window_action2"))
        kind = torch.from_numpy(self.kind)
        lo, hi = torch.zeros_like(nf), nf.clone()
        for k in torch.unique(kind).tolist():
            start, stop, _ = window_frames(k, ci_x, ci_y, nf, sem)
            rows = kind == k
            lo, hi = torch.where(rows, start, lo), torch.where(rows, stop, hi)
        return lo.numpy(), hi.numpy()

    def _evidence(self, st: _SceneTables, sem: Semantics) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.lo.copy(), self.hi.copy()
        F, b, r = st.F, self.b, self.r
        forward = _tables()["forward"][self.template]
        pos = np.arange(F)
        for fwd in (True, False):
            # objFirst / objLast and their Verify forms: the relation's stretch
            i = np.flatnonzero((self.category == STRETCH) & (forward == fwd))
            if i.size:
                lo[i], hi[i] = _stretches(st.occurs[b[i], :, r[i]], self.lo[i], self.hi[i], fwd,
                                          sem.obj_last_extra_keyframes, self.checker(i, "stretch of the relation"))
            # objFirstChoose / objLastChoose: the chosen object's stretch
            i = np.flatnonzero((self.category == CHOOSE) & (forward == fwd))
            if i.size:
                inwin = _run(self.lo[i], self.hi[i], F)
                rel1, rel2 = st.rel[b[i], :, self.o1[i], r[i]], st.rel[b[i], :, self.o2[i], r[i]]
                at, ok = (_first if fwd else _last)((rel1 | rel2) & inwin)
                holds = np.where(rel1[np.arange(i.size), at][:, None], rel1, rel2)
                side = (pos >= at[:, None]) if fwd else (pos <= at[:, None])
                end, ok2 = (_first if fwd else _last)(~holds & inwin & side)
                self.check(ok & ok2, i, "stretch of the chosen object")
                keep = int(sem.choose_stretch_includes_stop)
                lo[i], hi[i] = (at, end + keep) if fwd else (end + 1 - keep, at + 1)
        # relTime / objTime: the compare side the answer names (§a.2)
        i = np.flatnonzero(np.isin(self.category, (SIDE_REL, SIDE_OBJ)))
        if i.size:
            bi, before = b[i], self.before[i]
            before_stop, after_start = (t.numpy() for t in compare_bounds(st.instances(bi, self.act["action"][i]), sem))
            lo[i] = np.where(before, 0, after_start)
            hi[i] = np.where(before, before_stop, st.nf[bi])
        return lo, hi


_READS = {  # the request fields (o, o2, r) each source reads; the others are zeroed so equal lists meet
    SRC_OBJ_REL: (True, False, True), SRC_PAIR_REL: (True, True, True), SRC_REL_ANY: (False, False, True),
    SRC_INTERACT_EXISTS: (True, False, False), SRC_INTERACT_TIME: (True, False, False),
    SRC_FRAMES: (False, False, False),
}


def _lists(st: _SceneTables, req: np.ndarray) -> pa.Array:
    """JSON list bodies (``"o4/000105", "o4/000134"``) of distinct requests int64[U, 7] (source,
    video, o, o2 + 1, r, lo, hi) -> string [U]."""
    src, b, o, o2, r, lo, hi = req.T
    F, O = st.F, vocab().num_objects
    fills = {
        SRC_OBJ_REL: lambda i: st.rel[b[i], :, o[i], r[i]],
        SRC_PAIR_REL: lambda i: st.rel[b[i], :, o[i], r[i]] | (st.rel[b[i], :, (o2[i] - 1).clip(min=0), r[i]]
                                                               & (o2[i] > 0)[:, None]),
        SRC_REL_ANY: lambda i: st.occurs[b[i], :, r[i]],
        SRC_INTERACT_EXISTS: lambda i: st.interact["objExists"][b[i], :, o[i]],
        SRC_INTERACT_TIME: lambda i: st.interact["objTime"][b[i], :, o[i]],
        SRC_FRAMES: lambda i: np.ones((i.size, F), bool),
    }
    m = np.zeros((len(req), F), bool)
    for s, fill in fills.items():
        i = np.flatnonzero(src == s)
        if i.size:
            m[i] = fill(i)
    m &= _run(lo, hi, F)
    row, f = np.nonzero(m)
    prefix = np.select([np.isin(src, (SRC_OBJ_REL, SRC_INTERACT_EXISTS, SRC_INTERACT_TIME)),
                        np.isin(src, (SRC_PAIR_REL, SRC_REL_ANY))], [o, O + r], -1)[row]
    prefixes = _tables()["prefix"]
    quote = _lit('"')
    items = pc.binary_join_element_wise(quote, prefixes.take(pa.array(np.where(prefix < 0, len(prefixes) - 1, prefix))),
                                        st.names.take(pa.array(b[row] * F + f)), quote, _lit(""))
    offsets = np.concatenate([[0], np.cumsum(m.sum(1))]).astype(np.int32)
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), items), _lit(", "))


def _id_lists(rows: _Rows, st: _SceneTables, sem: Semantics) -> tuple[dict[str, np.ndarray], pa.Array]:
    """({list name: int64[M] atom of each row's list}, the block's distinct list bodies).

    Atoms index ``json_static`` followed by the bodies. Lists: object, object2, relation, window
    (its keyframes), video (all keyframes), ``inner:<slot>`` (the object reference inside an
    indirect-object action) and ``instance:<slot>`` (``"cNNN/1"``) for the action slots; an
    unused list is the empty string (atom 0). Each distinct (source, video, o, o2, r, run) is
    built once: requests are packed into one int64 key each and deduplicated."""
    t = _tables()
    M, b, o1, o2, r, cat = rows.M, rows.b, rows.o1, rows.o2, rows.r, rows.category
    zero = np.zeros(M, np.int64)
    radix = np.array([len(_READS) + 1, st.rel.shape[0], vocab().num_objects, vocab().num_objects + 1,
                      vocab().num_relations, st.F + 1, st.F + 1], np.int64)
    if np.prod(radix.astype(float)) >= 2.0 ** 62:
        raise TensorQAError(f"sg_grounding: block too large ({st.rel.shape[0]} videos of {st.F} keyframes); "
                            "lower block_videos")
    fields, owners = [], []  # per request kind: used rows' fields int64[n, 7], (name, rows)

    def request(name, use, src, o=zero, o_2=zero - 1, rr=zero, lo=rows.elo, hi=rows.ehi) -> None:
        i = np.flatnonzero(use)
        src = np.broadcast_to(src, (M,))[i]
        reads = np.array([_READS.get(s, (False, False, False)) for s in range(len(_READS) + 1)])[src]
        f = np.stack([src, b[i], o[i] * reads[:, 0], (o_2[i] + 1) * reads[:, 1], rr[i] * reads[:, 2],
                      np.broadcast_to(lo, (M,))[i], np.broadcast_to(hi, (M,))[i]], 1)
        fields.append(f)
        owners.append((name, i))

    with_objects = np.isin(cat, (OBJ_REL, STRETCH, CHOOSE)) & (o1 >= 0)
    pair = np.isin(cat, (OBJ_REL, CHOOSE))
    request("object", with_objects | np.isin(cat, (EXISTS_OBJ, SIDE_OBJ)),
            np.select([cat == EXISTS_OBJ, cat == SIDE_OBJ], [SRC_INTERACT_EXISTS, SRC_INTERACT_TIME], SRC_OBJ_REL),
            o1, rr=r)
    request("object2", with_objects & (o2 >= 0), SRC_OBJ_REL, o2, rr=r)
    request("relation", np.isin(cat, (REL_ANY, STRETCH, SIDE_REL)) | pair, np.where(pair, SRC_PAIR_REL, SRC_REL_ANY),
            o1.clip(min=0), o2, r)
    request("window", rows.has_window & (rows.kind > 0), SRC_FRAMES, lo=rows.lo, hi=rows.hi)
    request("video", (rows.has_window & (rows.kind == 0)) | t["opening"][rows.template, rows.frame], SRC_FRAMES,
            lo=zero, hi=st.nf[b])
    # object references inside indirect-object actions: the keyframes that define the reference
    for slot in ACTION_SLOTS:
        kind, ref_rel = rows.aref[slot], rows.aref_rel[slot]
        lo, hi = zero.copy(), st.nf[b].copy()
        for k, fwd in ((1, True), (2, False)):
            i = np.flatnonzero(kind == k)
            if i.size:
                lo[i], hi[i] = _stretches(st.occurs[b[i], :, ref_rel[i]], lo[i], hi[i], fwd,
                                          sem.obj_last_extra_keyframes,
                                          rows.checker(i, "stretch of an object reference"))
        referent = t["action_object"][rows.act[slot].clip(min=0)]
        request("inner:" + slot, kind > 0, SRC_OBJ_REL, referent, rr=ref_rel.clip(min=0), lo=lo, hi=hi)
    every = np.concatenate(fields)
    key = np.zeros(len(every), np.int64)
    for k in range(every.shape[1]):
        key = key * radix[k] + every[:, k]
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    bodies = _lists(st, every[first])
    atoms = len(t["json_static"]) + inverse.reshape(-1)
    out, k = {}, 0
    for name, i in owners:
        out[name] = np.zeros(M, np.int64)
        out[name][i] = atoms[k:k + len(i)]
        k += len(i)
    A = t["A"]
    for slot in ACTION_SLOTS:
        a = np.where(rows.act[slot] < 0, A, rows.act[slot])
        out["instance:" + slot] = JSON_INSTANCE + np.where(st.present[b, a], a, A)
    return out, bodies


class _Group:
    """Rows with the same (template, frame, window shape, indirect-action shape), laid out
    together: ``pos`` int64[n] advances through the questions, ``atoms`` collects their lexicon
    ids piece by piece (the re-rendered question) and ``keys`` the (start, end, list atom) of
    each key in output order."""

    def __init__(self, rows: _Rows, idx: np.ndarray, lists: dict[str, np.ndarray]):
        self.rows, self.idx, self.lists = rows, idx, lists
        self.frame = int(rows.frame[idx[0]])
        self.pos = np.zeros(len(idx), np.int64)
        self.atoms: list[np.ndarray] = []
        self.keys: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def key(self, start: np.ndarray, end: np.ndarray, name: str) -> None:
        self.keys.append((start, end, self.lists[name][self.idx]))

    def literal(self, text: str) -> None:
        self.atoms.append(np.full(len(self.idx), _tables()["literal"][text], np.int64))
        self.pos = self.pos + len(text)

    def phrase(self, ids: np.ndarray, name: str | None) -> None:
        """A slot phrase (lexicon ids) at ``pos``, keyed with list ``name`` unless None."""
        end = self.pos + _tables()["length"][ids]
        if name is not None:
            self.key(self.pos, end, name)
        self.atoms.append(ids)
        self.pos = end

    def object(self, slot: str) -> None:
        """An object slot: the object's phrase or its reference's (records.render's wording variant)."""
        t, rows, idx = _tables(), self.rows, self.idx
        o, ref, ref_rel = ((rows.o1, rows.oref1, rows.oref_rel1) if slot == "object"
                           else (rows.o2, rows.oref2, rows.oref_rel2))
        o, ref, ref_rel = o[idx], ref[idx], ref_rel[idx]
        variant = (self.frame + VARIANT_SHIFT[slot]) % t["V"]
        k = ((ref - 1).clip(min=0) * t["V"] + variant) * t["R"] + ref_rel.clip(min=0)
        direct = np.where(o < 0, 0, t["base"]["object_phrase"] + o)
        self.phrase(np.where(ref > 0, t["base"]["ref_phrase"] + k, direct), slot)

    def action(self, slot: str, inner: int, name: str) -> None:
        """An action slot: direct, or an indirect-object action naming its object ``inner`` times."""
        t, rows, idx = _tables(), self.rows, self.idx
        a = rows.act[slot][idx]
        if not inner:
            self.phrase(np.where(a < 0, 0, t["base"]["action_phrase"] + a), name)
            return
        variant = (self.frame + VARIANT_SHIFT[slot]) % t["V"]
        k = ((rows.aref[slot][idx] - 1) * t["V"] + variant) * t["R"] + rows.aref_rel[slot][idx]
        length = t["length"][t["base"]["ref_phrase"] + k]
        for j in range(inner):
            start = self.pos + t["action_ref_before"][a, j] + j * length
            self.key(start, start + length, "inner:" + slot)
        self.phrase(t["base"]["action_ref"] + a * t["n_ref"] + k, name)


def _layout(rows: _Rows, lists: dict[str, np.ndarray]) -> list[_Group]:
    """Every row's keys and question atoms, group by group."""
    t = _tables()
    inner = {s: np.where(rows.aref[s] > 0, t["action_ref_inner"][rows.act[s].clip(min=0)], 0) for s in ACTION_SLOTS}
    shape = np.where(rows.has_window, np.minimum(rows.kind, 1) + (rows.kind == 4), 0)  # no / one / two actions
    key = (rows.template * _MAX_FRAMES + rows.frame) * 3 + shape
    for s in ACTION_SLOTS:
        key = key * 3 + inner[s]
    order = np.argsort(key, kind="stable")
    groups = []
    for idx in np.split(order, np.flatnonzero(np.diff(key[order])) + 1):
        g = _Group(rows, idx, lists)
        i0 = idx[0]
        template = t["templates"][rows.template[i0]]
        if t["opening"][rows.template[i0], g.frame]:
            g.key(np.zeros(len(idx), np.int64), np.full(len(idx), VIDEO_OPENING_SPAN), "video")
        for is_slot, part in _frame_parts(template, g.frame):
            if not is_slot:
                g.literal(part)
            elif part in ("object", "object2"):
                g.object(part)
            elif part == "relation":
                g.phrase(np.where(rows.r[idx] < 0, 0, t["base"]["relation_word"] + rows.r[idx]), "relation")
            elif part in ("action", "action2"):
                g.action(part, int(inner[part][i0]), "instance:" + part)
            elif part == "window" and shape[i0] == 0:
                z = np.maximum(g.pos + ZERO_WIDTH_SHIFT, 0)
                g.key(z, z, "video")
            elif part == "window":
                start = g.pos
                g.phrase(t["base"]["window_pre"] + rows.kind[idx], None)  # " before ", " between ", ...
                g.action("window_action", int(inner["window_action"][i0]), "instance:window_action")
                if shape[i0] == 2:
                    g.literal(t["between_mid"])
                    g.action("window_action2", int(inner["window_action2"][i0]), "instance:window_action2")
                g.key(start + 1, g.pos, "window")  # the phrase without its leading space
            else:
                raise TensorQAError(f"sg_grounding: frame of {template} has an unknown placeholder {{{part}}}")
        groups.append(g)
    return groups


def _ragged(M: int, blocks: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Row-major ragged ids from (rows int64[n], ids int64[n, k]) blocks: (ids, lengths int64[M])."""
    lengths = np.zeros(M, np.int64)
    for idx, ids in blocks:
        lengths[idx] = ids.shape[1]
    start = np.concatenate([[0], np.cumsum(lengths)])
    out = np.zeros(start[-1], np.int64)
    for idx, ids in blocks:
        out[start[idx][:, None] + np.arange(ids.shape[1])] = ids
    return out, lengths


def _assemble(rows: _Rows, lists: dict[str, np.ndarray], bodies: pa.Array,
              questions: pa.Array) -> tuple[pa.Array | pa.ChunkedArray, np.ndarray]:
    """(JSON texts [M], bool[M]: the question re-rendered from the record's slots with
    records.render's wording variants equals its text)."""
    t = _tables()
    M = rows.M
    groups = _layout(rows, lists)
    # the questions, re-rendered: one gather over the lexicon
    ids, lengths = _ragged(M, [(g.idx, np.stack(g.atoms, 1)) for g in groups if g.atoms])
    rebuilt = gather_text(t["lexicon"], ids, lengths)
    same = pc.fill_null(pc.equal(rebuilt, questions), False).to_numpy(zero_copy_only=False)
    # the JSON texts: '{"s-e": [' body '], "s-e": [' body ... ']}' (or '{}'), one gather over the
    # static atoms, the block's list bodies and its distinct key openers
    starts = np.concatenate([s for g in groups for s, _, _ in g.keys] or [np.zeros(0, np.int64)])
    ends = np.concatenate([e for g in groups for _, e, _ in g.keys] or [np.zeros(0, np.int64)])
    firsts = np.concatenate([np.full(len(g.idx), k == 0) for g in groups for k in range(len(g.keys))]
                            or [np.zeros(0, bool)])
    width = int(ends.max(initial=0)) + 1
    openers, opener = np.unique((starts * width + ends) * 2 + firsts, return_inverse=True)
    opener_text = [('{"' if c % 2 else '], "') + f"{c // 2 // width}-{c // 2 % width}" + '": [' for c in openers.tolist()]
    opener_base = len(t["json_static"]) + len(bodies)
    blocks, k0 = [], 0
    for g in groups:
        n, k = len(g.idx), len(g.keys)
        if not k:
            blocks.append((g.idx, np.full((n, 1), JSON_EMPTY, np.int64)))
            continue
        atoms = np.empty((n, 2 * k + 1), np.int64)
        for j, (_, _, body) in enumerate(g.keys):
            atoms[:, 2 * j] = opener_base + opener[k0 + j * n:k0 + (j + 1) * n]
            atoms[:, 2 * j + 1] = body
        atoms[:, -1] = JSON_END
        k0 += k * n
        blocks.append((g.idx, atoms))
    pool = pa.concat_arrays([t["json_static"], bodies, pa.array(opener_text, pa.string())])
    ids, lengths = _ragged(M, blocks)
    return gather_text(pool, ids, lengths), same
