"""The records side of bulk grounding: a block of records as integer columns (``Rows``), with the
windows and evidence keyframes of each row, and its videos' scene tables (``SceneTables``); the
constant tables the texts are rebuilt from (``tables``). ``grounding_bulk`` turns them into JSON."""

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
from tensorqa.engine.primitives.first_last import first_stretch, last_stretch, object_runs
from tensorqa.engine.primitives.localize import ClassInstances, class_instances, compare_bounds, window_frames
from tensorqa.agqa.shapes import PROGRAM_SHAPES
from tensorqa.scenes.batch import SceneBatch
from tensorqa.agqa.semantics import Semantics
from tensorqa.engine.primitives.filter import ANY_PRESENT, interaction_relations
from tensorqa.agqa.templates import ACTION_REFERENCE_FRAMES, OBJECT_REFERENCE_FRAMES, TEMPLATES, WINDOW_FRAMES
from tensorqa.scenes.vocab import vocab
from tensorqa.agqa.grounding_text import (
    EVIDENCE_OF_PROGRAM, FORWARD_PROGRAMS, ACTION_SLOTS, CHOOSE, SIDE_OBJ, SIDE_REL, STRETCH,
    VIDEO_OPENING, action_reference_layout, frame_parts, string_scalar)
from tensorqa.agqa.record_texts import REF_VARIANTS, texts
from tensorqa.agqa.indirect import REF_KINDS
from tensorqa.engine.windows import WINDOW_KINDS


# sources of id lists; a request is one int64 row (source, video, o, o2, r, lo, hi)
SRC_NONE, SRC_OBJ_REL, SRC_PAIR_REL, SRC_REL_ANY, SRC_INTERACT_EXISTS, SRC_INTERACT_TIME, SRC_FRAMES = range(7)
MAX_FRAME_VARIANTS = 64  # frame variants per template (records.render's group key uses the same bound)


@functools.cache
def tables() -> dict[str, Any]:
    """Constant tables of the bulk path. Questions are re-rendered from the records' own lexicon
    (``record_texts.texts``): ``lexicon`` with int64 ``length``, section ``base`` ids (reference
    phrases [(kind - 1) * V + variant) * R + relation], indirect-object actions [action * n_ref +
    reference phrase]), frame ``literal`` ids, ``window_pre`` ids (" before ", ... by time kind);
    ``json_static`` holds the fixed atoms of the JSON texts (``JSON_END``, ``JSON_EMPTY``, ``"cNNN/1"``)."""
    v, tx = vocab(), texts()
    lex = tx.lexicon
    assert {len(f) for f in OBJECT_REFERENCE_FRAMES.values()} == {REF_VARIANTS}, "wordings per reference kind"
    R, A = v.num_relations, v.num_actions
    names = list(TEMPLATES)
    opening = np.zeros((len(names), MAX_FRAME_VARIANTS), bool)
    literal = {}
    for i, t in enumerate(names):
        assert len(TEMPLATES[t].frames) <= MAX_FRAME_VARIANTS
        for f, text in enumerate(TEMPLATES[t].frames):
            opening[i, f] = text.startswith(VIDEO_OPENING)
            literal.update((part, lex.literal(part)) for is_slot, part in frame_parts(t, f) if not is_slot)
    between_mid = WINDOW_FRAMES["between"].split("{action}")[1].split("{action2}")[0]  # " and "
    literal[between_mid] = lex.literal(between_mid)
    strings = lex.array()
    before = np.zeros((A + 1, 2), np.int64)  # literal characters before the action's 1st / 2nd {object}
    n_inner = np.zeros(A + 1, np.int64)
    for a in range(A):
        if v.actions[a] in ACTION_REFERENCE_FRAMES:
            layout = action_reference_layout(a)
            n_inner[a], before[a, :len(layout)] = len(layout), layout
    assert n_inner.max() <= 2
    return {
        "V": REF_VARIANTS, "R": R, "A": A, "n_ref": (len(REF_KINDS) - 1) * REF_VARIANTS * R,
        "lexicon": strings, "length": pc.utf8_length(strings).to_numpy(zero_copy_only=False).astype(np.int64),
        "base": {"object_phrase": lex.bases["object_phrase"], "relation_word": lex.bases["relation_word"],
                 "action_phrase": lex.bases["action_phrase"], "ref_phrase": lex.bases["ref_phrase"],
                 "action_ref": lex.bases["action_ref_phrase"]},
        "literal": literal, "between_mid": between_mid, "window_pre": tx.window_question[:, 0],
        "action_ref_before": before, "action_ref_inner": n_inner,
        "prefix": pa.array([f"{x}/" for x in v.object_ids] + [f"{x}/" for x in v.relation_ids] + [""], pa.string()),
        "json_static": pa.array(["", "]}", "{}"] + [f'"{a}/1"' for a in v.actions] + [""], pa.string()),
        "templates": names, "opening": opening,
        "category": np.array([EVIDENCE_OF_PROGRAM[TEMPLATES[t].program] for t in names], np.int64),
        "forward": np.array([TEMPLATES[t].program in FORWARD_PROGRAMS for t in names]),
        "has_window": np.array([TEMPLATES[t].has_window for t in names]),
        # merged form: the object an indirect-object action's reference points at (§b.3)
        "action_object": np.asarray([v.merged_action_object(a) for a in range(v.num_actions)], np.int64),
    }


JSON_END, JSON_EMPTY, JSON_INSTANCE = 1, 2, 3  # atoms of tables()["json_static"]


def _codes(records: pa.Table, column: str, values: list[str], what: str) -> np.ndarray:
    """int64[M]: index of each value of a column in ``values``; -1 for "" / null / an absent
    optional column; an unknown value raises."""
    if column not in records.column_names:
        return np.full(records.num_rows, -1, np.int64)
    col = records.column(column)
    out = pc.index_in(col, value_set=pa.array(values, pa.string())).fill_null(-1).to_numpy(zero_copy_only=False)
    out = out.astype(np.int64)
    given = pc.fill_null(pc.not_equal(col, string_scalar("")), False).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero((out < 0) & given)
    if bad.size:
        raise TensorQAError(f"sg_grounding: unknown {what} {col[int(bad[0])].as_py()!r} in column {column}")
    return out


def keyframes_in(lo: np.ndarray, hi: np.ndarray, F: int) -> np.ndarray:
    """bool[n, F]: keyframe positions in [lo, hi)."""
    pos = np.arange(F)
    return (pos >= lo[:, None]) & (pos < hi[:, None])


def chosen_stretch(rel1: np.ndarray, rel2: np.ndarray, lo: np.ndarray, hi: np.ndarray, forward: bool, sem: Semantics,
                   check: Callable[[np.ndarray], None]) -> tuple[np.ndarray, np.ndarray]:
    """objFirstChoose / objLastChoose: [lo, hi) of the chosen object's stretch, from the rows'
    relation with each of the two objects (bool[n, F]): the primitives' rule (``first_last.object_runs``
    and the pick of ``choose_pairs``), the stop keyframe included with ``choose_stretch_includes_stop``."""
    rel = torch.from_numpy(np.ascontiguousarray(np.stack([rel1, rel2], -1)))[..., None]  # [n, F, 2, 1]
    hit, end, ok = object_runs(rel, torch.arange(len(rel1)), torch.from_numpy(np.ascontiguousarray(lo)),
                               torch.from_numpy(np.ascontiguousarray(hi)), forward)
    hit, end, ok = hit[..., 0].numpy(), end[..., 0].long().numpy(), ok[..., 0].numpy()  # [n, 2]
    first = hit[:, 0] <= hit[:, 1] if forward else hit[:, 0] >= hit[:, 1]  # the first object holds at the pair's hit
    pick = np.where(first, 0, 1)
    rows = np.arange(len(pick))
    at, stop = hit[rows, pick], end[rows, pick]
    check(ok[rows, pick])
    keep = int(sem.choose_stretch_includes_stop)
    return (at, stop + keep) if forward else (stop + 1 - keep, at + 1)


def stretches(occ: np.ndarray, lo: np.ndarray, hi: np.ndarray, forward: bool, sem: Semantics,
              check: Callable[[np.ndarray], None]) -> tuple[np.ndarray, np.ndarray]:
    """objFirst (forward) / objLast stretches [lo, hi) of rows occ bool[n, F] inside [lo, hi):
    the primitives' stretch rule (``first_last.first_stretch`` / ``last_stretch``), one row each."""
    occurs = torch.from_numpy(np.ascontiguousarray(occ))[:, :, None]
    video = torch.arange(len(occ))
    start, stop = torch.from_numpy(np.ascontiguousarray(lo)), torch.from_numpy(np.ascontiguousarray(hi))
    if forward:
        f0, g, ok = first_stretch(occurs, video, start, stop)
        check(ok[:, 0].numpy())
        return f0[:, 0].numpy(), g[:, 0].numpy() + 1
    first, last, ok = last_stretch(occurs, video, start, stop, sem)
    check(ok[:, 0].numpy())
    return first[:, 0].numpy(), last[:, 0].numpy() + 1


@dataclass
class SceneTables:
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
    def build(cls, batch: SceneBatch, sem: Semantics) -> SceneTables:
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
    names = tables()["templates"]
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
    """{action slot: int64[M] relation of its indirect-object action's reference (-1: direct)}, read
    from the program text without parsing: the k-th ``ToAction(`` is the k-th indirect action slot
    (:func:`_action_slot_order`), its relation the first ``[relations, R, objects]`` after it."""
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


class Rows:
    """A block of records as integer columns (int64[M]; -1 where a slot is unused), with their
    windows [lo, hi) and evidence runs [elo, ehi) as keyframe positions (module docstring)."""

    def __init__(self, records: pa.Table, video: np.ndarray, st: SceneTables, sem: Semantics,
                 reference_relations: dict[str, np.ndarray] | None = None):
        t, v = tables(), vocab()
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
        if reference_relations is None:  # records from elsewhere: read back from the program text
            self.aref_rel = _reference_relations(records, self.template, self.aref)
        else:  # generation's own ids (CellBlock)
            self.aref_rel = {s: np.where(self.aref[s] > 0, np.asarray(reference_relations[s], np.int64), -1)
                             for s in ACTION_SLOTS}
        for s in ACTION_SLOTS:
            self.check((self.aref[s] == 0) | (self.aref_rel[s] >= 0), np.arange(self.M), f"ToAction reference for {s}")
        self.category = t["category"][self.template]
        self.has_window = t["has_window"][self.template]
        self.kind = np.where(self.has_window, _codes(records, "window", list(WINDOW_KINDS), "window kind").clip(min=0), 0)
        answer = records.column("answer")
        self.before = pc.fill_null(pc.equal(answer, string_scalar("before")), False).to_numpy(zero_copy_only=False)
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

    def _check_actions(self, st: SceneTables) -> None:
        """Localizing and compared actions must have keyframes in the video."""
        A = vocab().num_actions
        for used, a in ((self.has_window & (self.kind > 0), self.act["window_action"]),
                        (self.has_window & (self.kind == 4), self.act["window_action2"]),
                        (np.isin(self.category, (SIDE_REL, SIDE_OBJ)), self.act["action"])):
            ok = ~used | ((a >= 0) & (st.count[self.b, np.where(a < 0, A, a)] > 0))
            self.check(ok, np.arange(self.M), "keyframe of a localizing or compared action in its video")

    def _windows(self, st: SceneTables, sem: Semantics) -> tuple[np.ndarray, np.ndarray]:
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

    def _evidence(self, st: SceneTables, sem: Semantics) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.lo.copy(), self.hi.copy()
        b, r = self.b, self.r
        forward = tables()["forward"][self.template]
        for fwd in (True, False):
            # objFirst / objLast and their Verify forms: the relation's stretch
            i = np.flatnonzero((self.category == STRETCH) & (forward == fwd))
            if i.size:
                lo[i], hi[i] = stretches(st.occurs[b[i], :, r[i]], self.lo[i], self.hi[i], fwd, sem,
                                         self.checker(i, "stretch of the relation"))
            # objFirstChoose / objLastChoose: the chosen object's stretch
            i = np.flatnonzero((self.category == CHOOSE) & (forward == fwd))
            if i.size:
                lo[i], hi[i] = chosen_stretch(st.rel[b[i], :, self.o1[i], r[i]], st.rel[b[i], :, self.o2[i], r[i]],
                                              self.lo[i], self.hi[i], fwd, sem,
                                              self.checker(i, "stretch of the chosen object"))
        # relTime / objTime: the compare side the answer names (§a.2)
        i = np.flatnonzero(np.isin(self.category, (SIDE_REL, SIDE_OBJ)))
        if i.size:
            bi, before = b[i], self.before[i]
            before_stop, after_start = (t.numpy() for t in compare_bounds(st.instances(bi, self.act["action"][i]), sem))
            lo[i] = np.where(before, 0, after_start)
            hi[i] = np.where(before, before_stop, st.nf[bi])
        return lo, hi
