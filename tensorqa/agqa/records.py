"""Question records, built columnar: grid cells -> id columns (:class:`CellBlock`) -> text. Every
string of a record is in one shared lexicon or a small per-block extension, so each text column
is one ``take`` of lexicon ids (:mod:`.text`), with no Python format call per question."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, fields

import numpy as np
import pyarrow as pa
import torch

from tensorqa.engine import rng
from tensorqa.agqa.grid import ANSWER_KINDS
from tensorqa.agqa.templates import TEMPLATES
from tensorqa.scenes.vocab import vocab
from tensorqa.writers import RECORD_SCHEMA, coded_schema
from tensorqa.agqa.validity import Cells
from tensorqa.agqa.indirect import REF_KINDS
from tensorqa.agqa.text import compose, gather_text
from tensorqa.agqa.record_texts import (  # noqa: F401  (re-exported: the record constants)
    MAX_STEPS, REF_AXES, REF_VARIANTS, SLOT_NAMES, TEMPLATE_NAMES, Texts, WINDOW_STEPS, ID_PATTERN,
    frame_pattern, group_pattern, local_pattern, program_pattern, texts)
from tensorqa.engine.windows import WINDOW_KINDS


@dataclass
class CellBlock:
    """One row per question (numpy int32 columns; -1 where a slot is unused)."""

    video: np.ndarray  # index into the batch's video_ids
    template: np.ndarray  # index into TEMPLATE_NAMES
    object: np.ndarray
    object2: np.ndarray
    relation: np.ndarray
    action: np.ndarray
    action2: np.ndarray
    window: np.ndarray  # time kind (WINDOW_KINDS index)
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
    window_x_ref: np.ndarray  # the localizing action X as an indirect-object action (0 direct)
    window_x_ref_rel: np.ndarray
    window_y_ref: np.ndarray  # the same for Y of between
    window_y_ref_rel: np.ndarray

    def action_reference_relations(self) -> dict[str, np.ndarray]:
        """{action slot of the records (action, action2, window_action, window_action2): int64[M]
        relation its indirect-object action's reference goes through (-1: direct)}."""
        return {"action": self.action_ref_rel, "action2": self.action2_ref_rel,
                "window_action": self.window_x_ref_rel, "window_action2": self.window_y_ref_rel}

    def __len__(self) -> int:
        return len(self.video)

    @classmethod
    def from_index(cls, template: str, idx: tuple[torch.Tensor, ...], cells: Cells,
                   refs: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None) -> "CellBlock":
        """Cells given by index tensors (one per grid dimension); ``refs`` maps an object axis to
        (reference kind, reference relation) per cell, for cells whose object is a reference; an
        action axis to the same, for cells whose action is an indirect-object action."""
        M = idx[0].numel()

        def np64(t: torch.Tensor) -> np.ndarray:
            return t.cpu().numpy().astype(np.int32)

        def take(t: torch.Tensor) -> np.ndarray:
            return np64(cells.full(t)[idx])

        cols = {name: (take(cells.ids(name)) if cells.has(name) else np.full(M, -1, np.int32)) for name in SLOT_NAMES}
        for axis in REF_AXES:
            kind_rel = (refs or {}).get(axis)
            if kind_rel is None:
                cols[axis + "_ref"], cols[axis + "_ref_rel"] = np.zeros(M, np.int32), np.full(M, -1, np.int32)
            else:
                cols[axis + "_ref"], cols[axis + "_ref_rel"] = np64(kind_rel[0]), np64(kind_rel[1])
        return cls(video=np64(cells.grid.video[idx[0]]), template=np.full(M, TEMPLATE_NAMES.index(template), np.int32),
                   window=take(cells.kind), window_x=take(cells.x), window_y=take(cells.y),
                   answer=take(cells.grid.answer), **cols)

    @classmethod
    def concat(cls, blocks: list["CellBlock"]) -> "CellBlock":
        return cls(**{f.name: np.concatenate([getattr(b, f.name) for b in blocks]) if blocks else np.zeros(0, np.int32)
                      for f in fields(cls)})

    def take(self, order: np.ndarray, **columns: np.ndarray) -> "CellBlock":
        """Rows ``order``; ``columns`` (already in that order) replace those columns."""
        return CellBlock(**{f.name: columns[f.name] if f.name in columns else getattr(self, f.name)[order]
                            for f in fields(self)})


# -- the lexicon (built once) -----------------------------------------------------------------------

def question_steps(block: CellBlock) -> np.ndarray:
    """int64[M]: AGQA's steps (§b.4): the template's base steps + the localization's + one per
    reference (object references, indirect-object actions, in the question or in its localization)."""
    base = np.array([TEMPLATES[t].base_steps for t in TEMPLATE_NAMES])
    return base.take(block.template) + WINDOW_STEPS.take(block.window) + sum(_references(block))


def _references(block: CellBlock) -> list[np.ndarray]:
    """bool[M] per slot that may hold a reference: it does (an object reference or an indirect-object action)."""
    return [getattr(block, axis + "_ref") > 0 for axis in REF_AXES]


@functools.lru_cache(maxsize=None)
def _dictionary(values: tuple[str, ...]) -> tuple[pa.Array, np.ndarray]:
    """(distinct strings of ``values`` and "", index of each value among them) for a vocabulary column."""
    distinct = list(dict.fromkeys(values + ("",)))
    return pa.array(distinct, pa.string()), np.array([distinct.index(v) for v in values + ("",)], np.int32)


def coded(values, index: np.ndarray) -> pa.DictionaryArray:
    """The column ``values[index]`` (-1: "") as a dictionary array over the whole vocabulary
    (:data:`..writers.VOCABULARY_COLUMNS`): no string is copied per row."""
    dictionary, lookup = _dictionary(tuple(values))
    # the indices come out of ``lookup``, so they are in range: no validation pass (safe=False)
    return pa.DictionaryArray.from_arrays(pa.array(lookup.take(index), pa.int32()), dictionary, safe=False)


@functools.lru_cache(maxsize=1)
def _global_lists() -> tuple[np.ndarray, pa.Array]:
    """(offsets of each template's ``global`` list in ``values``, values)."""
    lists = [list(TEMPLATES[t].global_) for t in TEMPLATE_NAMES]
    return np.cumsum([0] + [len(g) for g in lists]), pa.array(sum(lists, []), pa.string())


def _global_column(template: np.ndarray) -> pa.Array:
    """list<string>[M]: each row's template's ``global`` categories (offsets arithmetic, one take)."""
    starts, values = _global_lists()
    lengths = (starts[1:] - starts[:-1])[template]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    within = np.arange(offsets[-1]) - np.repeat(offsets[:-1], lengths)
    items = values.take(pa.array(np.repeat(starts[:-1][template], lengths) + within))
    return pa.ListArray.from_arrays(pa.array(offsets), items, type=RECORD_SCHEMA.field("global").type)


# -- rendering ---------------------------------------------------------------------------------------

def frame_variants(block: CellBlock, video_keys: np.ndarray, rank: np.ndarray, seed: int) -> np.ndarray:
    """int64[M]: the question frame of each row, a seeded hash of (video, template, rank in video)
    so that it does not depend on batch size, device or shard count."""
    counts = np.array([len(TEMPLATES[t].frames) for t in TEMPLATE_NAMES], np.int64)
    h = rng.derive(seed, "agqa.frame", video_keys[block.video], block.template, rank)
    return rng.below(h, counts[block.template])


def answer_strings(kind: str) -> list[str]:
    """The released answer strings of an answer kind ("yes/no", "before/after", "object",
    "action"), indexed by answer id."""
    v = vocab()
    return {"yes/no": ["no", "yes"], "before/after": ["before", "after"], "object": list(v.object_english),
            "action": list(v.action_phrases)}[kind]


def video_key(video_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(video_id.encode(), digest_size=8).digest(), "little") >> 1


def _object_atoms(tx: Texts, obj, ref, ref_rel, variant, program: bool) -> np.ndarray:
    """Lexicon ids of an object slot: the object's phrase / word, or its reference's phrase / sub-program."""
    lex = tx.lexicon
    direct = lex.ids("object_word" if program else "object_phrase", obj)
    if not (ref > 0).any():
        return direct
    R = vocab().num_relations
    k, r = np.maximum(ref - 1, 0), np.maximum(ref_rel, 0)
    indirect = (lex.ids("ref_program", k * R + r) if program
                else lex.ids("ref_phrase", (k * REF_VARIANTS + variant % REF_VARIANTS) * R + r))
    return np.where(ref > 0, indirect, direct)


def _action_atoms(tx: Texts, act, ref, ref_rel, variant, program: bool) -> np.ndarray:
    """Lexicon ids of an action slot: the action's phrase / program word, or, for an indirect-object
    action, its phrase with the object's reference phrase (question) / ``ToAction(verb, <reference>)``."""
    lex = tx.lexicon
    direct = lex.ids("action_word" if program else "action_phrase", act)
    if not (ref > 0).any():
        return direct
    R = vocab().num_relations
    k, r, a = np.maximum(ref - 1, 0), np.maximum(ref_rel, 0), np.maximum(act, 0)
    if program:
        verb = np.asarray(vocab().action_verb, np.int64)[a]
        indirect = lex.ids("action_ref_program", (verb * 3 + k) * R + r)
    else:
        indirect = lex.ids("action_ref_phrase", ((a * 3 + k) * REF_VARIANTS + variant % REF_VARIANTS) * R + r)
    return np.where(ref > 0, indirect, direct)


def _window_index(rows: CellBlock) -> np.ndarray:
    """Each row's localization's index in the (time kind, action, action2) layout of :func:`window_strings`."""
    A = vocab().num_actions
    kind, x, y = rows.window, np.maximum(rows.window_x, 0), np.maximum(rows.window_y, 0)
    return np.where(kind == 0, 0, np.where(kind < 4, 1 + (kind - 1) * A + x, 1 + 3 * A + x * A + y))


def _indirect_windows(tx: Texts, rows: CellBlock, variant: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Localizations around indirect-object actions: (rows bool[M], index int64[n] of each such row in
    ``texts``, texts). Few are distinct per block, so each is rendered once (phrase with ``variant``,
    else program) and the rows point at it."""
    indirect = (rows.window_x_ref > 0) | (rows.window_y_ref > 0)
    sel = np.flatnonzero(indirect)
    if not len(sel):
        return indirect, sel, pa.array([], pa.string())
    A, R = vocab().num_actions + 1, vocab().num_relations + 1
    key = np.zeros(len(sel), np.int64)
    fields_ = [(rows.window, 5), (rows.window_x + 1, A), (rows.window_x_ref, 4), (rows.window_x_ref_rel + 1, R),
               (rows.window_y + 1, A), (rows.window_y_ref, 4), (rows.window_y_ref_rel + 1, R)]
    if variant is not None:
        fields_.append((variant % REF_VARIANTS, REF_VARIANTS))
    for values, radix in fields_:  # mixed-radix key of everything the text depends on
        key = key * radix + values[sel]
    inverse, first = _first_occurrences(key)
    r = rows.take(sel[first])
    program = variant is None
    v = None if program else variant[sel[first]]
    parts = (tx.window_program if program else tx.window_question)[r.window]  # [U, 3]
    xs = _action_atoms(tx, r.window_x, r.window_x_ref, r.window_x_ref_rel, None if program else v + 2, program)
    ys = _action_atoms(tx, r.window_y, r.window_y_ref, r.window_y_ref_rel, None if program else v + 3, program)
    atoms = np.stack([parts[:, 0], xs, parts[:, 1], np.where(r.window == 4, ys, 0), parts[:, 2]], axis=1)
    texts_ = gather_text(tx.lexicon.array(), atoms)
    if isinstance(texts_, pa.ChunkedArray):
        texts_ = texts_.combine_chunks()
    return indirect, inverse, texts_


def _first_occurrences(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code of each value, position of each code's first occurrence): codes number the distinct
    values in order of first appearance (a hash table, Arrow's ``dictionary_encode``: no sort)."""
    inverse = pa.array(key).dictionary_encode().indices.to_numpy()
    if not len(inverse):
        return inverse, inverse.astype(np.int64)
    # code c first appears where the running maximum of the codes first reaches c
    grows = np.empty(len(inverse), bool)
    grows[0] = True
    np.greater(inverse[1:], np.maximum.accumulate(inverse)[:-1], out=grows[1:])
    return inverse, np.flatnonzero(grows)


_NUMBERS: list[pa.Array] = [pa.array([], pa.string())]


def _numbers(n: int) -> pa.Array:
    """The strings "0" .. str(n - 1) (question numbers), from a table kept across blocks."""
    if len(_NUMBERS[0]) < n:
        _NUMBERS[0] = pa.array([str(i) for i in range(max(n, 2 * len(_NUMBERS[0])))], pa.string())
    return _NUMBERS[0].slice(0, n)


def render(block: CellBlock, video_ids: tuple[str, ...], splits: tuple[str, ...], rank: np.ndarray,
           variant: np.ndarray, answer_kinds: np.ndarray) -> pa.Table:
    """The records of a block (rows in block order): :data:`RECORD_SCHEMA`, with the vocabulary
    columns as dictionary arrays (:func:`..writers.coded_schema`)."""
    return _record_table(block, video_ids, splits, variant, answer_kinds, _text_columns(block, video_ids, rank, variant))


def _text_columns(block: CellBlock, video_ids: tuple[str, ...], rank: np.ndarray, variant: np.ndarray) -> dict:
    """The text columns of a block's records (question, program, local, direct_group, question_id),
    each one ``compose`` over the shared lexicon extended by the block's own strings."""
    tx = texts()
    lex = tx.lexicon
    M = len(block)
    # per-block strings after the shared lexicon: video ids, "<video>-", "<video>|<template>|",
    # question numbers, then the localizations around indirect-object actions (questions, then
    # programs)
    per_video = pa.array(list(video_ids) + [f"{v}-" for v in video_ids]
                         + [f"{v}|{t}|" for v in video_ids for t in TEMPLATE_NAMES], pa.string())
    numbers = _numbers(int(rank.max(initial=-1)) + 1)
    window = _window_index(block)
    window_q, window_p = lex.ids("window_question", window), lex.ids("window_program", window)
    ind_q, at_q, texts_q = _indirect_windows(tx, block, variant)
    ind_p, at_p, texts_p = _indirect_windows(tx, block, None)
    base = len(lex)
    per_block = len(per_video) + len(numbers)
    window_q[ind_q] = base + per_block + at_q
    window_p[ind_p] = base + per_block + len(texts_q) + at_p
    extended = lex.extend([per_video, numbers, texts_q, texts_p])  # valid for this block only

    def slot_atoms(program: bool, window_atoms: np.ndarray) -> dict[str, np.ndarray]:
        """The question's (program's) atoms per slot; a second object / action reads the next wording."""
        atoms = {"relation": lex.ids("relation_word", block.relation), "window": window_atoms}
        for slot, shift, of in (("object", 0, _object_atoms), ("object2", 1, _object_atoms),
                                ("action", 0, _action_atoms), ("action2", 1, _action_atoms)):
            atoms[slot] = of(tx, getattr(block, slot), getattr(block, slot + "_ref"), getattr(block, slot + "_ref_rel"),
                             None if program else variant + shift, program)
        return atoms

    question = compose(lex, block.template * 64 + variant, frame_pattern, slot_atoms(False, window_q), extended)
    program = compose(lex, block.template, program_pattern, slot_atoms(True, window_p), extended)
    # balancing keys and ids
    V, between = len(video_ids), block.window == 4
    keys = {"object": lex.ids("object_id", block.object), "object2": lex.ids("object_id", block.object2),
            "relation": lex.ids("relation_id", block.relation), "action": lex.ids("action_id", block.action),
            "action2": lex.ids("action_id", block.action2), "window_local": lex.ids("window_local", window),
            "window_action": np.stack([lex.ids("action_id", block.window_x), np.where(between, tx.dash, 0),
                                       np.where(between, lex.ids("action_id", block.window_y), 0)], axis=1),
            "video_dash": base + V + block.video,
            "video_template": base + 2 * V + block.video * len(TEMPLATE_NAMES) + block.template,
            "rank": base + (2 + len(TEMPLATE_NAMES)) * V + rank}
    local = compose(lex, block.template, local_pattern, keys, extended)
    direct_group = compose(lex, block.template, group_pattern, keys, extended)
    qid = compose(lex, np.zeros(M, np.int64), lambda _: ID_PATTERN, keys, extended)
    return {"question_id": qid, "question": question, "program": program, "local": local,
            "direct_group": direct_group}


def _record_table(block: CellBlock, video_ids: tuple[str, ...], splits: tuple[str, ...], variant: np.ndarray,
                  answer_kinds: np.ndarray, text: dict) -> pa.Table:
    """The records: the text columns with the id, answer, category and flag columns around them."""
    M = len(block)
    vids = pa.array(video_ids, pa.string()).take(pa.array(block.video))
    spl = pa.array(splits, pa.string()).take(pa.array(block.video))
    v = vocab()
    answer_tables = [answer_strings(kind) for kind in ANSWER_KINDS]
    offsets = np.cumsum([0] + [len(a) for a in answer_tables])[:-1]
    answer = coded(sum(answer_tables, []), offsets[answer_kinds] + block.answer)

    specs = [TEMPLATES[t] for t in TEMPLATE_NAMES]
    steps = question_steps(block)

    def per_template(values) -> pa.Array:
        return coded(values, block.template)

    is_temp = (block.window != 0).astype(np.int8)
    # an indirect-object action counts as object indirection (§b.3)
    is_obj = np.any(_references(block), axis=0).astype(np.int8)
    zeros = np.zeros(M, np.int8)
    table = pa.table({
        "question_id": text["question_id"], "video_id": vids, "split": spl, "template": per_template(TEMPLATE_NAMES),
        "frame": pa.array(variant.astype(np.int8)), "question": text["question"], "answer": answer,
        "global": _global_column(block.template),
        "local": text["local"], "ans_type": per_template([sp.ans_type for sp in specs]),
        "steps": pa.array(steps.astype(np.int8)), "semantic": per_template([sp.semantic for sp in specs]),
        "structural": per_template([sp.structural for sp in specs]), "program": text["program"],
        "window": coded(WINDOW_KINDS, block.window),
        "window_action": coded(v.actions, block.window_x), "window_action2": coded(v.actions, block.window_y),
        "window_action_ref": coded(REF_KINDS, block.window_x_ref),
        "window_action2_ref": coded(REF_KINDS, block.window_y_ref),
        "relation": coded(v.relation_ids, block.relation), "object": coded(v.object_ids, block.object),
        "object_ref": coded(REF_KINDS, block.object_ref),
        "object_ref_relation": coded(v.relation_ids, block.object_ref_rel),
        "object2": coded(v.object_ids, block.object2), "object2_ref": coded(REF_KINDS, block.object2_ref),
        "object2_ref_relation": coded(v.relation_ids, block.object2_ref_rel), "action": coded(v.actions, block.action),
        "action_ref": coded(REF_KINDS, block.action_ref), "action2_ref": coded(REF_KINDS, block.action2_ref),
        "action2": coded(v.actions, block.action2),
        "direct_group": text["direct_group"],
        "is_direct": pa.array((1 - (is_temp | is_obj)).astype(np.int8)), "indirect": pa.array(is_temp | is_obj),
        "i_obj": pa.array(is_obj), "i_rel": pa.array(zeros), "i_act": pa.array(zeros), "i_temp": pa.array(is_temp),
        "sg_grounding": pa.nulls(M, pa.string()),
    })
    return table.select(RECORD_SCHEMA.names).cast(coded_schema(RECORD_SCHEMA))
