"""One block of videos -> its question records: grids, validity masks, references (in slots and
localizations), numbering, frame variants and rendering.

A video's questions depend only on the video, the seed and the templates (ids ``<video>-<n>`` in
template then grid order; frame variants hash seed, video, template and n), so the pool is the same
whatever the block size, device or shard count."""

from __future__ import annotations

import functools
import time
from typing import Callable

import numpy as np
import pyarrow as pa
import torch

from tensorqa.agqa.grid import ANSWER_KINDS, GridContext, evaluate
from tensorqa.agqa.templates import TEMPLATES
from tensorqa.scenes.vocab import vocab
from tensorqa.agqa.validity import rule_cells
from tensorqa.agqa.records import MAX_STEPS, TEMPLATE_NAMES, CellBlock, frame_variants, question_steps, render, video_key
from tensorqa.agqa.indirect import action_reference_slots, object_references, reference_rule, reference_rule_for, slots_by_object
from tensorqa.agqa.text import stable_order
from tensorqa.agqa.options import StageTimes


def generate_block(batch, templates: list[str], rel_obj_counts: torch.Tensor, semantics, seed: int,
                   times: StageTimes, with_cells: bool = False) -> "pa.Table | tuple[pa.Table, CellBlock]":
    """The RECORD_SCHEMA table of one batch of videos (``with_cells``: and its CellBlock, row for row,
    for grounding). On CUDA each stage clock reading first waits for the GPU, so a stage is charged for
    its own kernels."""
    clock = _stage_clock(batch.device)
    ctx = GridContext(batch, semantics)
    keys = np.array([video_key(v) for v in batch.video_ids], dtype=np.int64)
    tables = _ReferenceTables(batch, ctx, seed, keys)
    blocks, kinds = [], []
    for name in templates:
        spec = TEMPLATES[name]
        t0 = clock()
        grid = evaluate(spec, batch, semantics, context=ctx)
        t1 = clock()
        # the rules once; a pair slot's direct cells come once, in candidate (id) order (keep & pairs);
        # its reference forms are enumerated from the kept cells of both orders, kind-major (§b.0)
        keep, pairs, cells = rule_cells(spec.program, grid, ctx, rel_obj_counts, spec.windows)
        idx = (keep if pairs is None else keep & pairs).nonzero(as_tuple=True)
        t2 = clock()
        found = [CellBlock.from_index(name, idx, cells)]
        ref_axes = {axis: kinds_ for axis, kinds_ in spec.references
                    if axis in ("object", "object2") and set(kinds_) & {"first", "last", "whole"}}
        act_axes = [axis for axis, kinds_ in spec.references
                    if axis in ("action", "action2") and "indirect-object" in kinds_]
        kept = (idx, cells, None)
        if pairs is not None and ("object2" in ref_axes or len(act_axes) == 2):
            both = keep.nonzero(as_tuple=True)
            kept = (both, cells, cells.full(pairs)[both])
        # reference enumeration, and the block's reference tables built on first use, count as masks
        t3 = clock()
        if ref_axes:
            found += _reference_blocks(name, grid, kept, tables.refs, ref_axes)
        if len(act_axes) == 2:  # actTime: a pair of actions
            found += _action_reference_blocks(name, grid, kept, tables.refs, tables.act_slots, act_axes)
        elif act_axes:  # relTime, objTime: every kept cell, direct or with object references
            found += _indirect_action_blocks(found, act_axes[0], *tables.window)
        if any((b.window > 0).any() for b in found):
            found += _window_reference_blocks(found, *tables.window)
        t2 += clock() - t3
        kinds += [np.full(len(b), ANSWER_KINDS.index(grid.answer_kind), np.int64) for b in found]
        blocks += found
        times.grid += t1 - t0
        times.masks += t2 - t1
        times.records += clock() - t2
    t0 = clock()
    block = CellBlock.concat(blocks)
    answer_kinds = np.concatenate(kinds) if kinds else np.zeros(0, np.int64)
    rows = np.flatnonzero(question_steps(block) <= MAX_STEPS)  # §b.0: 9 or more steps are discarded
    rows = rows[stable_order(block.video[rows], len(batch))]  # per video: template order, then grid order
    block, answer_kinds = block.take(rows), answer_kinds[rows]
    for t, count in enumerate(np.bincount(block.template, minlength=len(TEMPLATE_NAMES))):  # kept questions
        if count:
            times.per_template[TEMPLATE_NAMES[t]] = times.per_template.get(TEMPLATE_NAMES[t], 0) + int(count)
    starts = np.searchsorted(block.video, np.arange(len(batch)))
    rank = np.arange(len(block)) - starts[block.video]
    variant = frame_variants(block, keys, rank, seed)
    times.records += clock() - t0
    t0 = clock()
    table = render(block, batch.video_ids, batch.splits, rank, variant, answer_kinds)
    times.render += clock() - t0
    times.questions += len(block)
    times.videos += len(batch)
    return (table, block) if with_cells else table


class _ReferenceTables:
    """A block's object references and the indirect-object action slots built on them (and their
    host copies for the window references), each computed on first use: a template subset may
    need none of them."""

    def __init__(self, batch, ctx: GridContext, seed: int, keys: np.ndarray):
        self.batch, self.ctx, self.seed, self.keys = batch, ctx, seed, keys

    @functools.cached_property
    def refs(self):
        return object_references(self.batch, self.ctx, self.seed, torch.as_tensor(self.keys, device=self.batch.device))

    @functools.cached_property
    def act_slots(self) -> torch.Tensor:
        return action_reference_slots(self.batch, self.refs, self.ctx.semantics)

    @functools.cached_property
    def window(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return tuple(t.cpu().numpy() for t in (self.act_slots, self.refs.kind, self.refs.relation))


def _stage_clock(device: torch.device) -> Callable[[], float]:
    """perf_counter, after a device synchronize when the batch lives on CUDA."""
    if device.type != "cuda":
        return time.perf_counter

    def clock() -> float:
        torch.cuda.synchronize(device)
        return time.perf_counter()
    return clock


def _reference_blocks(name, grid, kept, refs, ref_axes) -> list[CellBlock]:
    """Cells whose object slot(s) hold references, enumerated sparsely: valid exactly when the
    referent's direct cell is and the template's reference rules hold (:func:`reference_rule_for`).
    A form's rank is its reference kind (direct 0, first 1, last 2, whole 3: the generator's order).
    ``kept``: (index tensors of the kept cells, their :class:`Cells`, and for a pair slot under
    combinations bool[M], whether each cell is in candidate order (the cells then being both orders),
    else None)."""
    idx, cells, _ = kept
    video = grid.video[idx[0]]
    relation = cells.full(cells.ids("relation"))[idx] if cells.has("relation") else None
    rule = reference_rule_for(name, grid.semantics)
    O = vocab().num_objects
    K = refs.valid.shape[1]

    def candidates(axis: str):
        mine = refs.of_kinds(tuple(ref_axes[axis]))
        table = slots_by_object(mine, O)  # [B, O, S]
        obj = cells.full(cells.ids(axis))[idx]
        # flat indices: index_select / take instead of 2-D advanced indexing (~2x faster on CPUs)
        cand = table.reshape(-1, table.shape[-1]).index_select(0, video * O + obj.clamp(min=0))  # [M, S]
        through = torch.take(mine.relation, video[:, None] * K + cand.clamp(min=0))
        rel = None if relation is None else relation[:, None]
        ok = (cand >= 0) & reference_rule(rel, through, **rule)
        rank = torch.take(mine.kind, video[:, None] * K + cand.clamp(min=0))  # FIRST / LAST / WHOLE
        return mine, cand, ok, rank

    axes = ("object", "object2") if "object2" in ref_axes else ("object",)
    return _slot_reference_blocks(name, kept, video, axes, candidates)


def _action_reference_blocks(name, grid, kept, refs, act_slots, act_axes) -> list[CellBlock]:
    """actTime's cells whose action slot(s) hold indirect-object actions (§b.3), from the kept direct
    cells: ``ToAction(verb, <reference>)`` is the action it was built from, so answer and rules are the
    direct cell's. Every indirect form has rank 1 (no longest / shortest references are built)."""
    idx, cells, _ = kept
    video = grid.video[idx[0]]
    B, A, S = act_slots.shape
    slot_rows = act_slots.reshape(B * A, S)

    def candidates(axis: str):
        act = cells.full(cells.ids(axis))[idx]
        cand = slot_rows.index_select(0, video * A + act.clamp(min=0))  # [M, S] reference positions
        ok = (cand >= 0) & (act >= 0)[:, None]
        return refs, cand, ok, torch.ones_like(cand)

    return _slot_reference_blocks(name, kept, video, tuple(act_axes), candidates)


def _slot_reference_blocks(name, kept, video, axes, candidates) -> list[CellBlock]:
    """The enumeration shared by :func:`_reference_blocks` and :func:`_action_reference_blocks` over
    one slot axis or a pair. ``candidates(axis)``: (references, positions int[M, S], apply bool[M, S],
    rank int[M, S]).

    A pair under combinations (§b.0) lists its forms kind-major (kinds in the generator's order, ids
    ascending within) and takes each 2-subset in that order. So, from the kept cells of both orders:
    (direct, ref) from every cell, never (ref, direct), and (ref, ref) where rank1 < rank2, or equal
    ranks on a cell in candidate order; the swapped cell carries its own answer and rules (XOR's and
    actTime's depend on the order). Without combinations: all three from every kept cell."""
    idx, cells, forward = kept

    def block(m, refs_by_axis):
        return CellBlock.from_index(name, tuple(i[m] for i in idx), cells, refs_by_axis)

    if len(axes) == 1:
        refs, cand, ok, _ = candidates(axes[0])
        m, _ = ok.nonzero(as_tuple=True)
        return [block(m, {axes[0]: _reference_columns(refs, video[m], cand[ok])})]  # cand[ok] is cand[m, j]
    first, second = axes
    refs1, cand1, ok1, rank1 = candidates(first)
    refs2, cand2, ok2, rank2 = candidates(second)
    m, _ = ok2.nonzero(as_tuple=True)  # (direct, ref)
    out = [block(m, {second: _reference_columns(refs2, video[m], cand2[ok2])})]
    both = ok1[:, :, None] & ok2[:, None, :]  # (ref, ref)
    if forward is None:
        m, _ = ok1.nonzero(as_tuple=True)  # (ref, direct)
        out.append(block(m, {first: _reference_columns(refs1, video[m], cand1[ok1])}))
    else:
        r1, r2 = rank1[:, :, None], rank2[:, None, :]
        both &= (r1 < r2) | ((r1 == r2) & forward[:, None, None])
    m, j1, j2 = both.nonzero(as_tuple=True)
    v, S = video[m], cand1.shape[1]
    S2 = cand2.shape[1]
    out.append(block(m, {first: _reference_columns(refs1, v, torch.take(cand1, m * S + j1)),
                         second: _reference_columns(refs2, v, torch.take(cand2, m * S2 + j2))}))
    return out


def _indirect_action_blocks(found: list[CellBlock], axis: str, slots: np.ndarray, kind: np.ndarray,
                            relation: np.ndarray) -> list[CellBlock]:
    """Kept cells of relTime / objTime (direct or with object references) whose action slot holds an
    indirect-object action (§b.3), one row per (cell, reference); answer and rules are the cell's own.
    slots: int64[B, A, S] (:func:`action_reference_slots`); kind / relation: int64[B, K]."""
    cells = CellBlock.concat(found)
    video = cells.video.astype(np.int64)
    cand = _action_candidates(slots, video, getattr(cells, axis).astype(np.int64))
    has = cand >= 0
    m, _ = np.nonzero(has)  # row-major: cand[has] is cand[m, j]
    block = _with_refs(cells, video, kind, relation, m, **{axis: cand[has]})
    return [block] if len(block) else []


def _action_candidates(slots: np.ndarray, video: np.ndarray, action: np.ndarray, where=True) -> np.ndarray:
    """int[M, S]: the reference positions that may stand for each row's action (-1: none, or not ``where``);
    flat 1-D takes, several times faster than 2-D fancy indexing."""
    B, A, S = slots.shape
    rows = slots.reshape(B * A, S).take(video * A + np.maximum(action, 0), axis=0)
    return np.where((where & (action >= 0))[:, None], rows, -1)


def _with_refs(cells: CellBlock, video: np.ndarray, kind: np.ndarray, relation: np.ndarray, m: np.ndarray,
               **positions: np.ndarray) -> CellBlock:
    """Rows ``m`` of ``cells`` with, per axis, the (kind, relation) of the reference at its position."""
    refs = {}
    for axis, c in positions.items():
        at = video.take(m) * kind.shape[1] + c
        refs[axis + "_ref"] = kind.reshape(-1).take(at).astype(np.int32)
        refs[axis + "_ref_rel"] = relation.reshape(-1).take(at).astype(np.int32)
    return cells.take(m, **refs)


def _reference_columns(refs, video: torch.Tensor, position: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(kind, relation) of reference ``position`` of each ``video``: flat takes, which are faster
    than 2-D advanced indexing."""
    at = video * refs.valid.shape[1] + position
    return torch.take(refs.kind, at), torch.take(refs.relation, at)


def _window_reference_blocks(found: list[CellBlock], slots: np.ndarray, kind: np.ndarray,
                             relation: np.ndarray) -> list[CellBlock]:
    """Localized cells of ``found`` whose localizing action(s) are indirect-object actions (§b.3): X
    for before / after / while; X, Y or both for between. Window, answer and rules are the cell's own;
    each adds one step. slots, kind, relation: as for :func:`_indirect_action_blocks`."""
    cells = CellBlock.concat(found)
    cells = cells.take(np.flatnonzero(cells.window > 0))
    video, S = cells.video.astype(np.int64), slots.shape[2]
    cx = _action_candidates(slots, video, cells.window_x)
    cy = _action_candidates(slots, video, cells.window_y, cells.window == 4)
    has_x, has_y = cx >= 0, cy >= 0
    m, _ = np.nonzero(has_x)  # np.nonzero and a boolean mask both go in row-major order
    out = [_with_refs(cells, video, kind, relation, m, window_x=cx[has_x])]
    m, _ = np.nonzero(has_y)
    out.append(_with_refs(cells, video, kind, relation, m, window_y=cy[has_y]))
    both = np.flatnonzero(has_x.any(1) & has_y.any(1))  # the pairs, on the rows that have some
    pairs = has_x[both][:, :, None] & has_y[both][:, None, :]  # [n, S, S]
    b, j1, j2 = np.nonzero(pairs)
    m = both.take(b)
    out.append(_with_refs(cells, video, kind, relation, m, window_x=cx[both].reshape(-1).take(b * S + j1),
                          window_y=cy[both].reshape(-1).take(b * S + j2)))
    return [b for b in out if len(b)]
