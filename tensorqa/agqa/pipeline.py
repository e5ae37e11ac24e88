"""``generate``: a scene store -> AGQA's unbalanced question pool, streamed in blocks of videos.

For each block of videos: evaluate every template's program over its whole slot grid
(:func:`tensorqa.engine.grid.evaluate`, one shared :class:`GridContext` per block), keep the cells that
AGQA's validity rules allow (:mod:`.validity`), number the questions of each video, pick each
question's frame with a seeded hash, render text and programs (:mod:`.records`) and append to
the shard's writer. Memory is bounded by the block size.

Determinism: a video's questions depend only on the video (compact grid axes are per video), the
seed and the template list; question ids ``<video>-<n>`` number them in template order then grid
order; frame variants hash (seed, video, template, n). So the pool is the same whatever the block
size, device or number of shards; rows are written in row groups of a fixed size.

Shards: shard i of K takes the i-th contiguous range of videos; ``--num-shards`` and
``--shard-index`` default from torchrun's WORLD_SIZE and RANK.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import torch
from tqdm import tqdm

from tensorqa import kernels as kernels_mod
from tensorqa.errors import TensorQAError
from tensorqa.engine.grid import GridContext, evaluate
from tensorqa.memory import keep_freed_memory
from tensorqa.outputs import check_output_folder, output_lock
from tensorqa.engine.semantics import get_semantics
from tensorqa.scenes.store import open_store
from tensorqa.agqa.templates import ACTIVE_TEMPLATES, TEMPLATES, template_spec
from tensorqa.scenes.vocab import vocab
from tensorqa.writers import AgqaJsonShardWriter, ParquetShardWriter, resume_shard, write_dataset_card
from tensorqa.agqa.grounding import with_grounding
from tensorqa.agqa.validity import rule_cells
from tensorqa.agqa.records import MAX_STEPS, TEMPLATE_NAMES, CellBlock, frame_variants, question_steps, render, video_key
from tensorqa.agqa.indirect import action_reference_slots, object_references, reference_rule, reference_rule_for, slots_by_object
from tensorqa.agqa.text import stable_order

ANSWER_KINDS = ("yes/no", "before/after", "object", "action")


@dataclass
class StageTimes:
    """Seconds spent per stage (grid evaluation, validity masks, record building, rendering, writing)."""

    grid: float = 0.0
    masks: float = 0.0
    records: float = 0.0
    render: float = 0.0
    write: float = 0.0
    questions: int = 0
    videos: int = 0
    per_template: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def shard_range(n_videos: int, num_shards: int, shard_index: int) -> tuple[int, int]:
    if num_shards < 1:
        raise TensorQAError(f"--num-shards must be at least 1, got {num_shards}")
    if num_shards < 1 or not 0 <= shard_index < num_shards:
        raise TensorQAError(f"shard index {shard_index} is not in 0..{num_shards - 1}")
    return n_videos * shard_index // num_shards, n_videos * (shard_index + 1) // num_shards


def resolve_templates(names: list[str] | None, include_retired: bool = False) -> list[str]:
    """Catalogue names to generate, in catalogue order (Table 14 spelling)."""
    if not names:
        return [t for t in TEMPLATES if t in ACTIVE_TEMPLATES or include_retired]
    wanted = {template_spec(n).name for n in names}
    return [t for t in TEMPLATES if t in wanted]


def generate_block(batch, templates: list[str], rel_obj_counts: torch.Tensor, semantics, seed: int,
                   times: StageTimes) -> pa.Table:
    """The RECORD_SCHEMA table of one batch of videos.

    Stage seconds are host clock readings; on CUDA each reading first waits for the GPU's queued
    work, so a stage is charged for its own kernels rather than the next stage's first sync."""
    clock = _stage_clock(batch.device)
    ctx = GridContext(batch, semantics)
    keys = np.array([video_key(v) for v in batch.video_ids], dtype=np.int64)
    tables = _ReferenceTables(batch, ctx, seed, keys)
    blocks, kinds = [], []
    for name in templates:
        spec = TEMPLATES[name]
        t0 = clock()
        grid = evaluate(spec.program, batch, semantics, context=ctx)
        t1 = clock()
        # the rules once; a pair slot's direct cells come once, in referent order (keep & pairs), and
        # its reference forms are enumerated from those cells (§b.0: candidates expand in place)
        keep, pairs, cells = rule_cells(spec.program, grid, ctx, rel_obj_counts, spec.windows)
        idx = (keep if pairs is None else keep & pairs).nonzero(as_tuple=True)
        t2 = clock()
        found = [CellBlock.from_index(name, idx, cells)]
        ref_axes = {axis: kinds_ for axis, kinds_ in spec.references
                    if axis in ("object", "object2") and set(kinds_) & {"first", "last", "whole"}}
        # reference enumeration, and the block's reference tables built on first use, count as masks
        if ref_axes:
            t3 = clock()
            found += _reference_blocks(name, grid, (idx, cells), tables.refs, ref_axes)
            t2 += clock() - t3
        act_axes = [axis for axis, kinds_ in spec.references
                    if axis in ("action", "action2") and "indirect-object" in kinds_]
        if act_axes:
            t3 = clock()
            if len(act_axes) == 2:  # actTime: a pair of actions
                found += _action_reference_blocks(name, grid, (idx, cells), tables.refs, tables.act_slots, act_axes)
            else:  # relTime, objTime: every kept cell, direct or with object references
                found += _indirect_action_blocks(found, act_axes[0], *tables.window)
            t2 += clock() - t3
        if any((b.window > 0).any() for b in found):
            t3 = clock()
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
    return table


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
        return action_reference_slots(self.batch, self.refs)

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
    """Cells whose object slot(s) hold references, enumerated sparsely: a reference cell is valid
    exactly when its referent's direct cell is (the same answer and rules) and the reference rules
    of the template hold (:func:`reference_rule_for`). One-object templates: (ref). Pairs: (direct,
    ref), (ref, direct) and (ref, ref) of every kept direct pair: AGQA's generator expands each
    candidate object in place into its forms, so a pair comes in the order of its referents
    (§b.0), whatever forms it takes.

    ``kept``: (index tensors of the cells that pass the template's rules, each pair once in
    referent order; their :class:`Cells`)."""
    idx, cells = kept
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
        return mine, cand, ok

    axes = ("object", "object2") if "object2" in ref_axes else ("object",)
    return _slot_reference_blocks(name, kept, video, axes, candidates)


def _action_reference_blocks(name, grid, kept, refs, act_slots, act_axes) -> list[CellBlock]:
    """actTime's cells whose action slot(s) hold indirect-object actions (§b.3 "Actions"),
    enumerated sparsely from the kept direct cells: ``ToAction(verb, <reference>)`` denotes the
    same action as the direct cell (``act_slots`` only lists references for which it resolves
    back), so the answer and the template's rules are the direct cell's. (direct, ref),
    (ref, direct) and (ref, ref) of every kept direct pair, which comes in action order (§b.0).
    ``kept``: as for :func:`_reference_blocks`."""
    idx, cells = kept
    video = grid.video[idx[0]]
    B, A, S = act_slots.shape
    slot_rows = act_slots.reshape(B * A, S)

    def candidates(axis: str):
        act = cells.full(cells.ids(axis))[idx]
        cand = slot_rows.index_select(0, video * A + act.clamp(min=0))  # [M, S] reference positions
        ok = (cand >= 0) & (act >= 0)[:, None]
        return refs, cand, ok

    return _slot_reference_blocks(name, kept, video, tuple(act_axes), candidates)


def _slot_reference_blocks(name, kept, video, axes, candidates) -> list[CellBlock]:
    """The enumeration :func:`_reference_blocks` and :func:`_action_reference_blocks` share, over
    one slot axis, or a pair of them (every kept direct pair in the forms (direct, ref),
    (ref, direct), (ref, ref)). ``candidates(axis)`` gives, per kept cell and reference slot:
    (the references, their positions int[M, S], which apply bool[M, S])."""
    idx, cells = kept

    def block(m, refs_by_axis):
        return CellBlock.from_index(name, tuple(i[m] for i in idx), cells, refs_by_axis)

    if len(axes) == 1:
        refs, cand, ok = candidates(axes[0])
        m, _ = ok.nonzero(as_tuple=True)
        return [block(m, {axes[0]: _reference_columns(refs, video[m], cand[ok])})]  # cand[ok] is cand[m, j]
    first, second = axes
    refs1, cand1, ok1 = candidates(first)
    refs2, cand2, ok2 = candidates(second)
    m, _ = ok2.nonzero(as_tuple=True)  # (direct, ref)
    out = [block(m, {second: _reference_columns(refs2, video[m], cand2[ok2])})]
    m, _ = ok1.nonzero(as_tuple=True)  # (ref, direct)
    out.append(block(m, {first: _reference_columns(refs1, video[m], cand1[ok1])}))
    both = ok1[:, :, None] & ok2[:, None, :]  # (ref, ref)
    m, j1, j2 = both.nonzero(as_tuple=True)
    v, S = video[m], cand1.shape[1]
    S2 = cand2.shape[1]
    out.append(block(m, {first: _reference_columns(refs1, v, torch.take(cand1, m * S + j1)),
                         second: _reference_columns(refs2, v, torch.take(cand2, m * S2 + j2))}))
    return out


def _indirect_action_blocks(found: list[CellBlock], axis: str, slots: np.ndarray, kind: np.ndarray,
                            relation: np.ndarray) -> list[CellBlock]:
    """Kept cells of a one-action template (relTime, objTime), direct or with object references,
    whose action slot holds an indirect-object action (§b.3): ``ToAction(verb, <reference>)``
    denotes the same action in the same video (``slots`` lists only the references for which it
    resolves back), so the answer and every rule are the cell's own. One row per (cell, reference).

    slots: int64[B, A, S] (:func:`action_reference_slots`); kind / relation: int64[B, K]."""
    cells = CellBlock.concat(found)
    B, A, S = slots.shape
    K = kind.shape[1]
    video = cells.video.astype(np.int64)
    action = getattr(cells, axis).astype(np.int64)
    cand = np.where((action >= 0)[:, None], slots.reshape(B * A, S).take(video * A + np.maximum(action, 0), axis=0), -1)
    has = cand >= 0
    m, _ = np.nonzero(has)  # row-major: cand[has] is cand[m, j]
    at = video.take(m) * K + cand[has]
    block = cells.take(m, **{axis + "_ref": kind.reshape(-1).take(at).astype(np.int32),
                             axis + "_ref_rel": relation.reshape(-1).take(at).astype(np.int32)})
    return [block] if len(block) else []


def _reference_columns(refs, video: torch.Tensor, position: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(kind, relation) of reference ``position`` of each ``video``: flat takes, which are faster
    than 2-D advanced indexing."""
    at = video * refs.valid.shape[1] + position
    return torch.take(refs.kind, at), torch.take(refs.relation, at)


def _window_reference_blocks(found: list[CellBlock], slots: np.ndarray, kind: np.ndarray,
                             relation: np.ndarray) -> list[CellBlock]:
    """Localized cells whose localizing action(s) are indirect-object actions (§b.3: "localizations
    wrap direct and indirect-object actions alike"), from the kept cells ``found`` of a template
    (direct and reference cells alike): ``ToAction(verb, <reference>)`` denotes the same action in
    the same video, so the window, the answer and every rule are the cell's own. Before / after /
    while: X indirect. Between: X indirect, Y indirect, both. Each adds one step (the step cap is
    applied later).

    slots: int64[B, A, S] (:func:`action_reference_slots`); kind / relation: int64[B, K] of the
    reference axis."""
    cells = CellBlock.concat(found)
    cells = cells.take(np.flatnonzero(cells.window > 0))
    # flat layouts: 1-D takes instead of 2-D fancy indexing (several times faster)
    B, A, S = slots.shape
    K = kind.shape[1]
    slot_rows = slots.reshape(B * A, S)
    kind_flat, relation_flat = kind.reshape(-1).astype(np.int32), relation.reshape(-1).astype(np.int32)
    video = cells.video.astype(np.int64)

    def candidates(action: np.ndarray, where: np.ndarray) -> np.ndarray:  # [M, S] reference positions
        return np.where((where & (action >= 0))[:, None], slot_rows.take(video * A + np.maximum(action, 0), axis=0), -1)

    def with_refs(m: np.ndarray, **axes) -> CellBlock:
        refs = {}
        for axis, c in axes.items():
            at = video.take(m) * K + c
            refs[axis + "_ref"], refs[axis + "_ref_rel"] = kind_flat.take(at), relation_flat.take(at)
        return cells.take(m, **refs)

    cx = candidates(cells.window_x, np.ones(len(cells), bool))
    cy = candidates(cells.window_y, cells.window == 4)
    has_x, has_y = cx >= 0, cy >= 0
    # np.nonzero and a boolean mask both go in row-major order: cx[has_x] is cx[m, j]
    m, _ = np.nonzero(has_x)
    out = [with_refs(m, window_x=cx[has_x])]
    m, _ = np.nonzero(has_y)
    out.append(with_refs(m, window_y=cy[has_y]))
    both = np.flatnonzero(has_x.any(1) & has_y.any(1))  # the pairs, on the rows that have some
    pairs = has_x[both][:, :, None] & has_y[both][:, None, :]  # [n, S, S]
    b, j1, j2 = np.nonzero(pairs)
    m = both.take(b)
    out.append(with_refs(m, window_x=cx[both].reshape(-1).take(b * S + j1),
                         window_y=cy[both].reshape(-1).take(b * S + j2)))
    return [b for b in out if len(b)]


def store_rel_obj_counts(src, device: str) -> torch.Tensor:
    """int64[O, R] on ``device``: keyframes per (object, relation) over the whole store, which the
    dataset-frequency validity rule reads (written by ``pack``)."""
    counts = src.meta.get("rel_obj_keyframes")
    if counts is None:
        raise TensorQAError(f"{src.path}: store has no relation-object counts (meta 'rel_obj_keyframes'); repack it")
    return torch.tensor(counts, dtype=torch.int64, device=device)


def checked_run_options(device: str, batch_videos: int | None, max_videos: int | None) -> int:
    """The block size (``batch_videos``, or the device's default) after refusing impossible run
    options: what ``generate`` and ``ablate`` share."""
    if max_videos is not None and max_videos < 1:
        raise TensorQAError(f"--max-videos must be at least 1, got {max_videos}")
    if not isinstance(device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise TensorQAError(f"--device {device}: expected cpu, cuda or cuda:N")
    batch_videos = default_batch_videos(device) if batch_videos is None else batch_videos
    if batch_videos < 1:
        raise TensorQAError(f"--batch-videos must be at least 1, got {batch_videos}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise TensorQAError(f"--device {device}: CUDA is not available on this machine")
    return batch_videos


MAX_SEED = 2**63 - 1


def check_seed(seed, flag: str = "--seed") -> int:
    """A seed is an integer in 0..2**63 - 1 (the question-frame hash reads it as an int64)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED:
        raise TensorQAError(f"{flag} must be an integer in 0..{MAX_SEED}, got {seed!r}")
    return int(seed)


def videos_used(src, max_videos: int | None) -> int:
    """How many of the store's videos a run reads: all, or the first ``max_videos``."""
    return len(src) if max_videos is None else min(len(src), max_videos)


def default_grounding(fmt: str, grounding: bool | None) -> bool:
    """``--grounding`` unless given: on for AGQA JSON, off for Parquet."""
    return fmt == "agqa-json" if grounding is None else bool(grounding)


def default_batch_videos(device: str) -> int:
    """Videos per block: 16 on the CPU (measured fastest on the 2-core machine: 32 and 64 keep more
    text out of the caches, 8 pays more per-block overhead), 64 on CUDA (benchmarks/RESULTS.md).
    Host memory grows with the block: a block's text is rendered at once (~600 bytes a question,
    ~15K questions a video), so 256-video blocks peaked at 10 GiB RSS per process on the H200
    machine and 16 such processes ran out of its 128 GiB, while grid evaluation, the only stage on
    the GPU, took 1.2 s of 60 s per 1,000 videos at 256. With 64, 16 processes wrote the whole pool
    in 57 s at under 5 GiB each."""
    return 64 if str(device).startswith("cuda") else 16


def shared_gpu(process: int) -> str:
    """The GPU of the ``process``-th process of a machine when its processes share the GPUs round
    robin (torchrun ranks, ``--jobs`` shards)."""
    return f"cuda:{process % max(1, torch.cuda.device_count())}"


def rank_device(device: str) -> str:
    """Under torchrun, a bare ``cuda`` means this rank's GPU, ``cuda:<LOCAL_RANK mod GPUs>`` (more
    ranks than GPUs share them round robin); an indexed CUDA device also becomes the current one,
    since Triton kernels launch on the current device whatever their tensors' device."""
    if device == "cuda" and "LOCAL_RANK" in os.environ:
        device = shared_gpu(int(os.environ["LOCAL_RANK"]))
    if device.startswith("cuda:"):
        torch.cuda.set_device(torch.device(device))
    return device


def generate(store: str | os.PathLike, out: str | os.PathLike, templates: list[str] | None = None,
             device: str = "cpu", batch_videos: int | None = None, num_shards: int | None = None,
             shard_index: int | None = None, fmt: str = "parquet", seed: int = 0, semantics: str = "agqa",
             include_retired: bool = False, progress: bool = True, max_videos: int | None = None,
             kernels: str = "auto", grounding: bool | None = None, jobs: int | str = 1, threads: int | None = None,
             on_block: Callable[[int, int], None] | None = None, lock: bool = True) -> dict:
    """Generate the unbalanced pool of ``store`` into ``out`` (Hugging Face layout, or AGQA JSON).

    ``jobs``: run that many shard processes side by side on this machine (:mod:`.jobs`; shards
    0..jobs-1 of ``jobs``, one CPU thread each where cores are scarce; "auto": one per core, as
    many as the memory holds, :func:`.jobs.auto_jobs`); the pool's records are the
    same as with one process. Not with an explicit shard or under torchrun.

    ``threads``: torch CPU threads (of each process with ``jobs``); default: torch's choice, or
    ``cores // jobs`` with ``jobs``.

    ``on_block(videos, questions)``: called after each block is written (progress reporting).

    ``grounding``: fill ``sg_grounding`` (question spans -> scene-graph vertex ids,
    :mod:`.grounding`); default: on for AGQA JSON, off for Parquet.

    ``kernels``: "auto" runs the Triton kernels (:mod:`tensorqa.kernels`) on CUDA, except those
    that measured slower than torch there, and the torch primitives elsewhere; "on" / "off" force
    them. The output is the same either way.

    ``lock``: hold an exclusive lock on the shard in ``out`` (:func:`shard_lock_name`) while it is
    written, so that a second run of the same shard into the same folder is refused (the ``--jobs``
    parent holds its shards' locks for its processes).

    Returns the shard's statistics (questions, videos, per-template counts, stage seconds)."""
    if threads is not None and threads < 1:
        raise TensorQAError(f"--threads must be at least 1, got {threads}")
    check_seed(seed)
    if num_shards is not None and num_shards < 1:
        raise TensorQAError(f"--num-shards must be at least 1, got {num_shards}")
    batch_videos = checked_run_options(device, batch_videos, max_videos)
    out = check_output_folder(out, what="the pool is a folder")
    if jobs == "auto":
        from tensorqa.agqa.jobs import auto_jobs

        jobs = auto_jobs(device)
    elif not isinstance(jobs, int):
        raise TensorQAError(f"--jobs must be a number of processes or 'auto', not {jobs!r}")
    if jobs != 1:
        from tensorqa.agqa.jobs import generate_jobs

        return generate_jobs(jobs, store=store, out=out, templates=templates, device=device, batch_videos=batch_videos,
                             num_shards=num_shards, shard_index=shard_index, fmt=fmt, seed=seed, semantics=semantics,
                             include_retired=include_retired, progress=progress, max_videos=max_videos,
                             kernels=kernels, grounding=grounding, threads=threads)
    if threads is not None:
        torch.set_num_threads(threads)
    if fmt not in ("parquet", "agqa-json"):
        raise TensorQAError(f"--format must be parquet or agqa-json, not {fmt!r}")
    device = rank_device(device)
    num_shards = int(os.environ.get("WORLD_SIZE", 1)) if num_shards is None else num_shards
    shard_index = int(os.environ.get("RANK", 0)) if shard_index is None else shard_index
    names = resolve_templates(templates, include_retired)
    sem = get_semantics(semantics)
    src = open_store(store)
    n = videos_used(src, max_videos)
    a, b = shard_range(n, num_shards, shard_index)
    grounding = default_grounding(fmt, grounding)
    params = record_params(src, names, seed, sem.name, fmt, grounding, n)
    held = contextlib.ExitStack()  # the shard's lock, released on every way out below
    try:
        if lock:
            held.enter_context(output_lock(out, shard_lock_name(shard_index, num_shards)))
        complete = resume_shard(out, shard_index, num_shards, params)
        if not complete:
            rel_obj_counts = store_rel_obj_counts(src, device)
    except BaseException:
        held.close()
        src.close()
        raise
    if complete:
        held.close()
        src.close()
        return {"skipped": True, "shard": shard_index, "num_shards": num_shards}
    keep_freed_memory()
    out.mkdir(parents=True, exist_ok=True)
    writer = ParquetShardWriter(out, shard_index, num_shards) if fmt == "parquet" else AgqaJsonShardWriter(out, shard_index, num_shards)
    times = StageTimes()
    t_start = time.perf_counter()
    bar = tqdm(total=b - a, desc=f"generate shard {shard_index + 1}/{num_shards}", unit="video",
               disable=not progress, dynamic_ncols=True)
    backend = kernels_mod.configure(kernels, device)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # blocks make no reference cycles; the collector's scans were 2 % of a run
    try:
        with torch.inference_mode():
            for batch in src.blocks(batch_videos, a, b, device=device):
                table = generate_block(batch, names, rel_obj_counts, sem, seed, times)
                if grounding:
                    t0 = time.perf_counter()
                    table = with_grounding(table, batch, sem)
                    times.render += time.perf_counter() - t0
                t0 = time.perf_counter()
                writer.write(table)
                times.write += time.perf_counter() - t0
                bar.update(len(batch))
                if on_block is not None:
                    on_block(len(batch), times.questions)
                bar.set_postfix(questions=f"{times.questions:,}",
                                q_per_s=f"{times.questions / max(time.perf_counter() - t_start, 1e-9):,.0f}")
        t0 = time.perf_counter()
        stats = {"shard": shard_index, "num_shards": num_shards, **params, "store": str(Path(src.path).resolve()),
                 "device": device,
                 "backend": kernels_mod.backend_for(kernels, device), **times.as_dict(),
                 "seconds": round(time.perf_counter() - t_start, 3)}
        writer.close(stats)
        times.write += time.perf_counter() - t0
        if fmt == "parquet":
            write_dataset_card(out, "tensorqa unbalanced AGQA-style pool", _card_body(stats))
    except OSError as e:  # a full disk, a quota: one line naming the file, no partial file left
        writer.abort()
        raise writer.write_error(e) from None
    except BaseException:
        writer.abort()
        raise
    finally:
        if gc_was_enabled:
            gc.enable()
        backend.undo()
        bar.close()
        src.close()
        held.close()
    return stats


def shard_lock_name(index: int, count: int) -> str:
    """The lock file of shard ``index`` of ``count`` in a pool folder (removed when the run ends)."""
    return f".lock-{index:05d}-of-{count:05d}"


def record_params(src, templates: list[str], seed: int, semantics: str, fmt: str, grounding: bool,
                  videos: int) -> dict:
    """What decides a shard's records besides its index, as its done marker records it: a restart
    into the same folder must match (``writers.resume_shard``). Devices, kernels, block sizes
    and process counts are not among them: the records do not depend on them."""
    return {"store_id": src.fingerprint, "templates": list(templates), "seed": seed, "semantics": semantics,
            "format": fmt, "grounding": grounding, "pool_videos": videos}


def _card_body(stats: dict) -> str:
    return (f"Unbalanced question pool generated by tensorqa from `{Path(stats['store']).name}` "
            f"(seed {stats['seed']}, semantics `{stats['semantics']}`). Columns: see "
            "`tensorqa.writers.RECORD_SCHEMA`. Templates: " + ", ".join(stats["templates"]) + ".")
