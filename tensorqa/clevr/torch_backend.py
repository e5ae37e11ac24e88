"""The torch backend's rows (any device): a template over its grid for all the block's scenes that
reach it at once (``grid``), CLEVR's rules as masks over them (constraints: NULL is applied while
drawing, NEQ and OUT_NEQ here; the degeneracy test; the answer's domain), and CLEVR's per-scene loop
(templates stable-sorted by use count, ``--instances-per-template`` per template, stop after
``--templates-per-image``, answer-count rejection, counts reset every ``--reset-counts-every``
scenes), reading only the masks and answer codes. The numba backend (``compiled``) accepts the same
rows."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from tensorqa.clevr import columns
from tensorqa.clevr.constants import MAX_COUNT, ROUNDS
from tensorqa.clevr.options import Options, rejected
from tensorqa.clevr.grid import Run, run_template
from tensorqa.clevr.scene_block import Block, SceneTables
from tensorqa.clevr.templates import Template, answer_domain
from tensorqa.scenes.static_batch import StaticBatch
from tensorqa.scenes.static_store import StaticStore


def _differ(a: tuple, b: tuple) -> torch.Tensor:
    if a[1].dim() == 2:
        return (a[1] != b[1]).any(-1)
    return a[1] != b[1]


def constraints_mask(t: Template, run: Run, sem) -> torch.Tensor:
    """bool[P]: the rows that satisfy every NEQ / OUT_NEQ constraint."""
    ok = torch.ones_like(run.ok)
    for c in t.constraints:
        if c["type"] == "OUT_NEQ":
            i, j = c["params"]
            a, b = run.outs[i], run.outs[j]
            if a[0] == b[0] == "int" and not sem.out_neq_compares_counts and i in run.pre and j in run.pre:
                a, b = ("set", run.pre[i]), ("set", run.pre[j])
            ok &= _differ(a, b)
        elif c["type"] == "NEQ":
            p1, p2 = c["params"]
            v1, v2 = run.params[p1], run.params[p2]
            both = (v1 >= 0) & (v2 >= 0)
            ok &= ~both | ((v1 == v2) if sem.neq_inverted else (v1 != v2))
    return ok


def answer_codes(run: Run) -> torch.Tensor:
    """int64[P]: the final output as a bin of :func:`answer_domain` (bool 0/1, count, class id)."""
    return run.outs[-1][1].long()


def degenerate_mask(t: Template, tid: int, blk: Block, run: Run, sem) -> torch.Tensor:
    """bool[P]: rows where replacing some raw ``relate`` node with ``scene`` keeps the answer
    (CLEVR's is_degenerate); such questions are rejected."""
    deg = torch.zeros_like(run.ok)
    ans = answer_codes(run)
    for k, node in enumerate(t.nodes):
        if node["type"] != "relate":
            continue
        again = run_template(t, tid, blk, sem, params=run.params, replace={k: blk.mask.clone()})
        deg |= again.ok & (answer_codes(again) == ans)
    return deg


def valid_rows(t: Template, tid: int, blk: Block, run: Run, sem) -> torch.Tensor:
    """bool[P]: complete, constraint-satisfying, non-degenerate rows with an answer in the domain."""
    ok = run.ok & constraints_mask(t, run, sem)
    ans = answer_codes(run)
    ok &= (ans >= 0) & (ans <= MAX_COUNT)
    return ok & ~degenerate_mask(t, tid, blk, run, sem)


@dataclass
class Bookkeeping:
    """Use counts and answer histograms per template, reset as CLEVR resets them."""

    templates: list
    use: np.ndarray = None
    hist: list = field(default_factory=list)

    def reset(self) -> None:
        self.use = np.zeros(len(self.templates), np.int64)
        self.hist = [[0] * len(answer_domain(t)[1]) for t in self.templates]


class TemplateRows:
    """One template's grid results for the scenes of a block, filled on demand: ok bool[B, M],
    answer codes int64[B, M], params name -> int64[B, M], done bool[B]."""

    def __init__(self, B: int, M: int):
        self.ok = np.zeros((B, M), bool)
        self.ans = np.zeros((B, M), np.int64)
        self.params: dict = {}
        self.done = np.zeros(B, bool)

    def fill(self, t: Template, tid: int, batch: StaticBatch, pos: np.ndarray, rows: np.ndarray, opt: Options,
             tables: SceneTables) -> None:
        """Evaluate ``rows`` (block scene rows) in rounds of draws (ROUNDS, up to ``opt.draws``): a scene goes
        on while it has fewer than ``opt.valid_draws`` valid rows, reading only its own rows (the same
        rows whatever the block)."""
        first = 0
        for size in ROUNDS:
            m = min(size, opt.draws - first)
            if m <= 0 or not len(rows):
                break
            idx = torch.from_numpy(rows).to(batch.attrs.device)
            blk = Block.build(batch.select(idx), torch.from_numpy(pos[rows]), m, opt.seed, tables, idx, first)
            run = run_template(t, tid, blk, opt.semantics)
            shape, cols = (len(rows), m), slice(first, first + m)
            self.ok[rows, cols] = valid_rows(t, tid, blk, run, opt.semantics).view(shape).cpu().numpy()
            self.ans[rows, cols] = answer_codes(run).view(shape).cpu().numpy()
            for k, v in run.params.items():
                self.params.setdefault(k, np.zeros_like(self.ans))[rows, cols] = v.view(shape).cpu().numpy()
            self.done[rows] = True
            first += m
            rows = rows[self.ok[rows, :first].sum(1) < opt.valid_draws]


def choose(rows: list[TemplateRows], pos: np.ndarray, book: Bookkeeping, opt: Options) -> tuple[list, dict]:
    """CLEVR's per-scene loop over the masks: accepted (scene row b, template id, draw m). Where a
    (scene, template) the loop reaches is not evaluated yet, it is listed in ``missing``
    (template -> rows) and assumed to succeed; the caller evaluates those and runs the loop again."""
    accepted, missing = [], {}
    for b, g in enumerate(pos):
        if book.use is None or g % opt.reset_counts_every == 0:
            book.reset()
        done = 0
        for tid in np.argsort(book.use, kind="stable"):
            tr = rows[tid]
            if not tr.done[b]:
                missing.setdefault(int(tid), []).append(b)
            else:  # the valid draws in order, as CLEVR's rejection and deduplication allow
                got, seen, dedupe = 0, set(), opt.instances_per_template > 1
                for m in np.flatnonzero(tr.ok[b]):
                    a = int(tr.ans[b, m])
                    key = tuple(int(v[b, m]) for v in tr.params.values()) if dedupe else None
                    if key in seen or rejected(book.hist[tid], a):
                        continue
                    book.hist[tid][a] += 1
                    if dedupe:
                        seen.add(key)
                    accepted.append((b, int(tid), int(m)))
                    got += 1
                    if got >= opt.instances_per_template:
                        break
                if not got:
                    continue
            book.use[tid] += 1
            done += 1
            if done >= opt.templates_per_image:
                break
    return accepted, missing


def choose_block(templates: list[Template], batch: StaticBatch, pos: np.ndarray, book: Bookkeeping, opt: Options):
    """Evaluate only the templates CLEVR's loop reaches: run the loop, evaluate what it reached
    unevaluated (for all the block's scenes at once), run it again from the block's start state,
    until it reaches nothing new. Returns (accepted, rows)."""
    rows = [TemplateRows(len(batch), opt.draws) for _ in templates]
    tables = SceneTables.of(batch)
    start = (None if book.use is None else book.use.copy(), [list(h) for h in book.hist])
    while True:
        book.use = None if start[0] is None else start[0].copy()
        book.hist = [list(h) for h in start[1]]
        accepted, missing = choose(rows, pos, book, opt)
        if not missing:
            return accepted, rows
        for tid in missing:
            rows[tid].fill(templates[tid], tid, batch, pos, np.flatnonzero(~rows[tid].done), opt, tables)


def generate_columns(store: StaticStore, templates: list[Template], synonyms: dict, opt: Options,
                     start: int = 0, stop: int | None = None, with_output: bool = False) -> dict:
    """The questions of scenes [start, stop) of the store as columns (``columns.COLUMNS``; programs as
    JSON text, or with ``with_output`` as node lists with ``_output``), built a template at a time."""
    stop = len(store) if stop is None else min(stop, len(store))
    book = Bookkeeping(templates)
    parts, memo = [], {}
    for a in range(start, stop, opt.batch_scenes):
        z = min(a + opt.batch_scenes, stop)
        batch = store.batch(a, z, opt.device)
        pos = np.arange(a, z)
        if a == start:
            book.use = None  # CLEVR resets at the run's first scene
        accepted, rows = choose_block(templates, batch, pos, book, opt)
        parts.append(columns.block_columns(templates, synonyms, opt.seed, opt.semantics, batch, pos, accepted, rows, memo,
                                           with_output))
    return columns.concat(parts)
