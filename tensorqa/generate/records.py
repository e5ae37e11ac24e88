"""Question records, built columnar: grid cells -> id columns -> rendered text (pyarrow kernels).

A :class:`CellBlock` holds one row per question as integer columns (video, template, slot ids,
time kind and actions, answer). Text is rendered per (template, frame variant) group by joining
literal fragments of the frame with slot strings taken from small per-vocabulary string tables
(``pyarrow.compute.binary_join_element_wise``); there is no Python format call per question.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, fields

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from ..grid import action_word
from ..primitives.localize import KIND_NAMES
from ..program_shapes import PROGRAM_SHAPES
from ..templates import ACTION_REFERENCE_FRAMES, OBJECT_REFERENCE_FRAMES, TEMPLATES, WINDOW_FRAMES
from ..vocab import vocab
from ..writers import RECORD_SCHEMA
from .qualifiers import Cells

TEMPLATE_NAMES = tuple(TEMPLATES)
# steps a localization adds (agqa_semantics.md §b.3): whole video 0, before/after/while 2, between 3
WINDOW_STEPS = np.array([0, 2, 2, 2, 3], dtype=np.int64)
MAX_STEPS = 8
# English noun phrase of each object where "a <name>" does not read well
OBJECT_ARTICLE = {"clothes": "some clothes", "food": "some food", "floor": "the floor", "medicine": "some medicine",
                  "groceries": "some groceries"}
SLOT_NAMES = ("object", "object2", "relation", "action", "action2")
REF_AXES = ("object", "object2", "action", "action2")  # slots that may hold an object reference


@dataclass
class CellBlock:
    """One row per question (numpy int64 columns; -1 where a slot is unused)."""

    video: np.ndarray  # index into the batch's video_ids
    template: np.ndarray  # index into TEMPLATE_NAMES
    object: np.ndarray
    object2: np.ndarray
    relation: np.ndarray
    action: np.ndarray
    action2: np.ndarray
    window: np.ndarray  # time kind (KIND_NAMES index)
    window_x: np.ndarray
    window_y: np.ndarray
    answer: np.ndarray
    object_ref: np.ndarray  # reference kind of the object slot (0 direct, FIRST / LAST / WHOLE)
    object_ref_rel: np.ndarray  # relation the reference goes through (-1 direct)
    object2_ref: np.ndarray
    object2_ref_rel: np.ndarray
    action_ref: np.ndarray  # indirect-object action: reference kind of the action's object (0 direct)
    action_ref_rel: np.ndarray  # relation that reference goes through (-1 direct)
    action2_ref: np.ndarray
    action2_ref_rel: np.ndarray

    def __len__(self) -> int:
        return len(self.video)

    @classmethod
    def from_cells(cls, template: str, keep: torch.Tensor, cells: Cells) -> "CellBlock":
        """The kept cells of a grid (row-major: dimension 0 (videos or their windows), then the slots)."""
        return cls.from_index(template, keep.nonzero(as_tuple=True), cells)

    @classmethod
    def from_index(cls, template: str, idx: tuple[torch.Tensor, ...], cells: Cells,
                   refs: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None) -> "CellBlock":
        """Cells given by index tensors (one per grid dimension); ``refs`` maps an object axis to
        (reference kind, reference relation) per cell, for cells whose object is a reference; an
        action axis to the same, for cells whose action is an indirect-object action."""
        M = idx[0].numel()

        def np64(t: torch.Tensor) -> np.ndarray:
            return t.cpu().numpy().astype(np.int64)

        def take(t: torch.Tensor) -> np.ndarray:
            return np64(cells.full(t)[idx])

        cols = {name: (take(cells.ids(name)) if cells.has(name) else np.full(M, -1, np.int64)) for name in SLOT_NAMES}
        for axis in REF_AXES:
            kind_rel = (refs or {}).get(axis)
            if kind_rel is None:
                cols[axis + "_ref"], cols[axis + "_ref_rel"] = np.zeros(M, np.int64), np.full(M, -1, np.int64)
            else:
                cols[axis + "_ref"], cols[axis + "_ref_rel"] = np64(kind_rel[0]), np64(kind_rel[1])
        return cls(video=np64(cells.grid.video[idx[0]]), template=np.full(M, TEMPLATE_NAMES.index(template), np.int64),
                   window=take(cells.kind), window_x=take(cells.x), window_y=take(cells.y),
                   answer=take(cells.grid.answer), **cols)

    @classmethod
    def concat(cls, blocks: list["CellBlock"]) -> "CellBlock":
        return cls(**{f.name: np.concatenate([getattr(b, f.name) for b in blocks]) if blocks else np.zeros(0, np.int64)
                      for f in fields(cls)})

    def take(self, order: np.ndarray) -> "CellBlock":
        return CellBlock(**{f.name: getattr(self, f.name)[order] for f in fields(self)})


# -- string tables (built once) ----------------------------------------------------------------------

@dataclass(frozen=True)
class StringTables:
    object_phrase: pa.Array  # [O + 1] "a blanket" (last entry "": unused slot)
    object_word: pa.Array  # [O + 1] "blanket"
    object_id: pa.Array  # [O + 1] "o4"
    relation_word: pa.Array  # [R + 1]
    relation_id: pa.Array
    action_phrase: pa.Array  # [A + 1] question text
    action_word: pa.Array  # [A + 1] program text
    action_id: pa.Array
    kind_name: pa.Array  # [5]
    answers: dict  # answer kind -> pa.Array
    ref_phrase: pa.Array  # [(kind - 1) * V * R + variant * R + relation] "the object they were holding first"
    ref_program: pa.Array  # [(kind - 1) * R + relation] the reference's sub-program
    ref_variants: int
    action_ref_phrase: pa.Array  # [((action * 3 + kind - 1) * V + variant) * R + relation] indirect-object action text
    action_ref_program: pa.Array  # [((verb * 3 + kind - 1) * R + relation] "ToAction(taking, <reference>)"


@functools.cache
def string_tables() -> StringTables:
    v = vocab()
    def arr(xs):
        return pa.array(list(xs) + [""], pa.string())
    return StringTables(
        object_phrase=arr(OBJECT_ARTICLE.get(e, f"a {e}") for e in v.object_english),
        object_word=arr(v.object_english),
        object_id=arr(v.object_ids),
        relation_word=arr(v.relation_english),
        relation_id=arr(v.relation_ids),
        action_phrase=arr(v.action_phrases),
        action_word=arr(action_word(a) for a in range(v.num_actions)),
        action_id=arr(v.actions),
        kind_name=pa.array(KIND_NAMES, pa.string()),
        answers={"yes/no": pa.array(["no", "yes"]), "before/after": pa.array(["before", "after"]),
                 "object": pa.array(v.object_english), "action": pa.array(v.action_phrases)},
        ref_phrase=pa.array([OBJECT_REFERENCE_FRAMES[k][i % len(OBJECT_REFERENCE_FRAMES[k])].format(relation=r)
                             for k in ("first", "last", "whole") for i in range(REF_VARIANTS)
                             for r in v.relation_english], pa.string()),
        ref_program=pa.array([_reference_program(k, r) for k in ("first", "last", "whole") for r in v.relation_english],
                             pa.string()),
        ref_variants=REF_VARIANTS,
        action_ref_phrase=pa.array([
            ACTION_REFERENCE_FRAMES[a].format(object=OBJECT_REFERENCE_FRAMES[k][i % len(OBJECT_REFERENCE_FRAMES[k])]
                                              .format(relation=r)) if a in ACTION_REFERENCE_FRAMES else ""
            for a in v.actions for k in ("first", "last", "whole") for i in range(REF_VARIANTS)
            for r in v.relation_english], pa.string()),
        action_ref_program=pa.array([f"ToAction({verb}, {_reference_program(k, r)})" for verb in v.verb_english
                                     for k in ("first", "last", "whole") for r in v.relation_english], pa.string()),
    )


REF_VARIANTS = 3


def _reference_program(kind: str, relation: str) -> str:
    """The AGQA sub-program of an object reference (agqa.md §2.4; AGQA 2.0 prints backward for last)."""
    rel = f"Filter(frame, [relations, {relation}, objects])"
    if kind == "whole":
        return f"Query(class, OnlyItem(Iterate(video, {rel})))"
    direction = "forward" if kind == "first" else "backward"
    return (f"Query(class, OnlyItem(IterateUntil({direction}, video, Exists({relation}, Filter(frame, [relations])), "
            f"{rel})))")


def question_steps(block: CellBlock) -> np.ndarray:
    """int64[M]: AGQA's steps (§b.4): the template's base steps + the localization's + one per reference."""
    base = np.array([TEMPLATES[t].base_steps for t in TEMPLATE_NAMES])
    return (base[block.template] + WINDOW_STEPS[block.window] + (block.object_ref > 0) + (block.object2_ref > 0)
            + (block.action_ref > 0) + (block.action2_ref > 0))


@functools.lru_cache(maxsize=4096)
def lit(value) -> pa.Scalar:
    """A pyarrow scalar for a Python literal. Compute kernels called with plain Python str / int
    arguments take a slow conversion path (~250 us per call); scalars do not."""
    return pa.scalar(value)


def _take(table: pa.Array, ids: np.ndarray) -> pa.Array:
    """table[ids] with -1 reading the table's last (empty) entry."""
    return table.take(pa.array(np.where(ids < 0, len(table) - 1, ids)))


_PLACEHOLDER = re.compile(r"\{(\w+)\}|<(\w+)>")


def _split(text: str) -> list[str]:
    """Alternating literal fragments and slot names: [lit, slot, lit, slot, ..., lit]."""
    parts, last = [], 0
    for m in _PLACEHOLDER.finditer(text):
        parts += [text[last:m.start()], m.group(1) or m.group(2)]
        last = m.end()
    return parts + [text[last:]]


def _join(parts: list[str], slots: dict[str, pa.Array]) -> pa.Array:
    pieces = [slots[p] if i % 2 else lit(p) for i, p in enumerate(parts) if (i % 2) or p]
    if not any(isinstance(p, pa.Array) for p in pieces):
        n = len(next(iter(slots.values())))
        return pa.array(["".join(p.as_py() for p in pieces)] * n, pa.string())
    return pc.binary_join_element_wise(*pieces, lit(""))


# -- rendering ---------------------------------------------------------------------------------------

def frame_variants(block: CellBlock, video_keys: np.ndarray, rank: np.ndarray, seed: int) -> np.ndarray:
    """int64[M]: the question frame of each row, a seeded hash of (video, template, rank in video)
    so that it does not depend on batch size, device or shard count."""
    counts = np.array([len(TEMPLATES[t].frames) for t in TEMPLATE_NAMES], np.uint64)
    with np.errstate(over="ignore"):
        x = (video_keys[block.video].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             ^ (rank.astype(np.uint64) + np.uint64(seed) * np.uint64(0xD1B54A32D192ED03))
             ^ (block.template.astype(np.uint64) << np.uint64(48)))
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return (x % counts[block.template]).astype(np.int64)


def video_key(video_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(video_id.encode(), digest_size=8).digest(), "little") >> 1


def _object_text(s: StringTables, obj, ref, ref_rel, variant, program: bool) -> pa.Array:
    """An object slot: the object's phrase / word, or its reference phrase / sub-program."""
    direct = _take(s.object_word if program else s.object_phrase, obj)
    if not (ref > 0).any():
        return direct
    R = len(s.relation_word) - 1
    k = np.maximum(ref - 1, 0)
    if program:
        idx = k * R + np.maximum(ref_rel, 0)
        indirect = s.ref_program.take(pa.array(idx))
    else:
        idx = (k * s.ref_variants + variant % s.ref_variants) * R + np.maximum(ref_rel, 0)
        indirect = s.ref_phrase.take(pa.array(idx))
    return pc.if_else(pa.array(ref > 0), indirect, direct)


def _action_text(s: StringTables, act, ref, ref_rel, variant, program: bool) -> pa.Array:
    """An action slot: the action's phrase / program word, or, for an indirect-object action, its
    phrase with the object's reference phrase (question) / ``ToAction(verb, <reference>)`` (program)."""
    direct = _take(s.action_word if program else s.action_phrase, act)
    if not (ref > 0).any():
        return direct
    R = len(s.relation_word) - 1
    k, r, a = np.maximum(ref - 1, 0), np.maximum(ref_rel, 0), np.maximum(act, 0)
    if program:
        verb = np.asarray(vocab().action_verb, np.int64)[a]
        indirect = s.action_ref_program.take(pa.array((verb * 3 + k) * R + r))
    else:
        indirect = s.action_ref_phrase.take(pa.array(((a * 3 + k) * s.ref_variants + variant % s.ref_variants) * R + r))
    return pc.if_else(pa.array(ref > 0), indirect, direct)


def _window_text(s: StringTables, rows: CellBlock, program: bool) -> pa.Array:
    """The localization phrase (question) or ``<window>`` program of each row."""
    kinds = rows.window
    x = _take(s.action_word if program else s.action_phrase, rows.window_x)
    y = _take(s.action_word if program else s.action_phrase, rows.window_y)
    if program:
        pre = ["video", "Localize(before, ", "Localize(after, ", "Localize(while, ", "Localize(between, ["]
        mid = ["", "", "", "", ", "]
        post = ["", ")", ")", ")", "])"]
    else:
        pre = [WINDOW_FRAMES[k].split("{action}")[0] for k in KIND_NAMES]
        mid = ["", "", "", "", WINDOW_FRAMES["between"].split("{action}")[1].split("{action2}")[0]]
        post = [""] * 5
    k = pa.array(kinds)
    return pc.binary_join_element_wise(pa.array(pre).take(k), x, pa.array(mid).take(k),
                                       pc.if_else(pc.equal(k, lit(4)), y, lit("")), pa.array(post).take(k), lit(""))


def render(block: CellBlock, video_ids: tuple[str, ...], splits: tuple[str, ...], rank: np.ndarray,
           variant: np.ndarray, answer_kinds: np.ndarray) -> pa.Table:
    """The RECORD_SCHEMA table of a block (rows in block order)."""
    s = string_tables()
    M = len(block)
    group = block.template * 64 + variant
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    q_parts, p_parts, tlocal_parts, local_parts = [], [], [], []
    for rows_idx in np.split(order, bounds) if M else []:
        rows = block.take(rows_idx)
        t = TEMPLATE_NAMES[int(rows.template[0])]
        spec = TEMPLATES[t]
        frame = spec.frames[int(variant[rows_idx[0]])]
        slots_q = {
            "object": _object_text(s, rows.object, rows.object_ref, rows.object_ref_rel, variant[rows_idx], False),
            "object2": _object_text(s, rows.object2, rows.object2_ref, rows.object2_ref_rel, variant[rows_idx] + 1, False),
            "relation": _take(s.relation_word, rows.relation),
            "action": _action_text(s, rows.action, rows.action_ref, rows.action_ref_rel, variant[rows_idx], False),
            "action2": _action_text(s, rows.action2, rows.action2_ref, rows.action2_ref_rel, variant[rows_idx] + 1, False),
            "window": _window_text(s, rows, program=False),
        }
        slots_p = {
            "object": _object_text(s, rows.object, rows.object_ref, rows.object_ref_rel, None, True),
            "object2": _object_text(s, rows.object2, rows.object2_ref, rows.object2_ref_rel, None, True),
            "relation": _take(s.relation_word, rows.relation),
            "action": _action_text(s, rows.action, rows.action_ref, rows.action_ref_rel, None, True),
            "action2": _action_text(s, rows.action2, rows.action2_ref, rows.action2_ref_rel, None, True),
            "window": _window_text(s, rows, program=True),
        }
        q_parts.append(_join(_split(frame), slots_q))
        p_parts.append(_join(_split(PROGRAM_SHAPES[spec.program]), slots_p))
        tl, loc = _locals(spec, s, rows)
        tlocal_parts.append(tl)
        local_parts.append(loc)
    # scatter the group results back into block order
    inverse = pa.array(np.argsort(order, kind="stable"))

    def gathered(parts: list[pa.Array]) -> pa.Array:
        return pa.concat_arrays(parts).take(inverse) if parts else pa.array([], pa.string())

    q_all, p_all, tlocal, local = (gathered(x) for x in (q_parts, p_parts, tlocal_parts, local_parts))

    vids = pa.array(video_ids, pa.string()).take(pa.array(block.video))
    spl = pa.array(splits, pa.string()).take(pa.array(block.video))
    tnames = pa.array(TEMPLATE_NAMES, pa.string()).take(pa.array(block.template))
    qid = pc.binary_join_element_wise(vids, pa.array(rank).cast(pa.string()), lit("-"))
    # answers: one table per answer kind, concatenated with offsets
    ans_tables = [s.answers[k] for k in ("yes/no", "before/after", "object", "action")]
    offsets = np.cumsum([0] + [len(a) for a in ans_tables])[:-1]
    answer = pa.concat_arrays(ans_tables).take(pa.array(offsets[answer_kinds] + block.answer))

    specs = [TEMPLATES[t] for t in TEMPLATE_NAMES]
    steps = question_steps(block)
    def per_template(values) -> pa.Array:
        return pa.array(values).take(pa.array(block.template))

    ids = {"object": _take(s.object_id, block.object), "object2": _take(s.object_id, block.object2),
           "relation": _take(s.relation_id, block.relation), "action": _take(s.action_id, block.action),
           "action2": _take(s.action_id, block.action2)}
    wx, wy = _take(s.action_id, block.window_x), _take(s.action_id, block.window_y)
    is_temp = (block.window != 0).astype(np.int8)
    # an indirect-object action counts as object indirection (§b.3)
    is_obj = ((block.object_ref > 0) | (block.object2_ref > 0) | (block.action_ref > 0)
              | (block.action2_ref > 0)).astype(np.int8)
    zeros = np.zeros(M, np.int8)
    ref_names = pa.array(["", "first", "last", "whole"])
    table = pa.table({
        "question_id": qid, "video_id": vids, "split": spl, "template": tnames,
        "frame": pa.array(variant.astype(np.int8)), "question": q_all, "answer": answer,
        "global": per_template([list(sp.global_) for sp in specs]),
        "local": local, "ans_type": per_template([sp.ans_type for sp in specs]),
        "steps": pa.array(steps.astype(np.int8)), "semantic": per_template([sp.semantic for sp in specs]),
        "structural": per_template([sp.structural for sp in specs]), "program": p_all,
        "window": s.kind_name.take(pa.array(block.window)), "window_action": wx, "window_action2": wy,
        "relation": ids["relation"], "object": ids["object"], "object_ref": ref_names.take(pa.array(block.object_ref)),
        "object_ref_relation": _take(s.relation_id, block.object_ref_rel), "object2": ids["object2"],
        "object2_ref": ref_names.take(pa.array(block.object2_ref)),
        "object2_ref_relation": _take(s.relation_id, block.object2_ref_rel), "action": ids["action"],
        # one column for both action slots: the kind of the first one that is indirect
        "action_ref": ref_names.take(pa.array(block.action_ref)),
        "action2_ref": ref_names.take(pa.array(block.action2_ref)),
        "action2": ids["action2"],
        "direct_group": pc.binary_join_element_wise(vids, tnames, tlocal, lit("|")),
        "is_direct": pa.array((1 - (is_temp | is_obj)).astype(np.int8)), "indirect": pa.array(is_temp | is_obj),
        "i_obj": pa.array(is_obj), "i_rel": pa.array(zeros), "i_act": pa.array(zeros), "i_temp": pa.array(is_temp),
        "sg_grounding": pa.nulls(M, pa.string()),
    })
    return table.select(RECORD_SCHEMA.names).cast(RECORD_SCHEMA)


def _locals(spec, s: StringTables, rows: CellBlock) -> tuple[pa.Array, pa.Array]:
    """(template local (§b.1), released local (§b.4)) of rows of one template.

    Released local: binary = answer-space tag - template local - time kind - time action(s);
    open = the template local."""
    ids = {"object": _take(s.object_id, rows.object), "object2": _take(s.object_id, rows.object2),
           "relation": _take(s.relation_id, rows.relation), "action": _take(s.action_id, rows.action),
           "action2": _take(s.action_id, rows.action2)}
    wx, wy = _take(s.action_id, rows.window_x), _take(s.action_id, rows.window_y)
    kind = pa.array(rows.window)
    window_action = pc.if_else(pc.equal(kind, lit(4)), pc.binary_join_element_wise(wx, wy, lit("-")), wx)
    ids["window_action"] = window_action
    M = len(rows)
    parts = _split(spec.local_format)
    tlocal = _join(parts, ids) if len(parts) > 1 else pa.array([spec.local_format] * M, pa.string())
    if spec.ans_type == "open":
        return tlocal, tlocal
    time = pc.if_else(pc.equal(kind, lit(0)), lit("all"), s.kind_name.take(kind))
    dash = lit("-")
    if spec.answer_space in ("yes-no", "before-after"):
        local = pc.binary_join_element_wise(lit(spec.answer_space), tlocal, time, window_action, dash)
    elif spec.family == "length":  # 2-way length choose: tag = template local, middle = longer / shorter
        local = pc.binary_join_element_wise(tlocal, lit("longer" if "Longer" in spec.name else "shorter"), time,
                                            window_action, dash)
    else:  # object choose templates: the tag is the template local itself
        local = pc.binary_join_element_wise(tlocal, tlocal, time, window_action, dash)
    return tlocal, local
