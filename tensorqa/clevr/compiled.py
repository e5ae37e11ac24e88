"""The compiled twin of CLEVR's grid generation (numba, CPU): ``grid.run_template`` (draws),
``torch_backend.valid_rows`` (constraints, degeneracy), ``torch_backend.TemplateRows.fill`` (rounds of draws)
and ``torch_backend.choose`` (CLEVR's per-scene loop) in one pass over a block of scenes.

Why compiled: a scene has at most 62 objects here (CLEVR: 3 to 10), so an object set is one int64
word and every CLEVR function is a few integer operations; the torch grid spends its time in
per-call overheads on small tensors. The same arithmetic (the same hashes, the same option classes
and float64 weights, the same inverse CDF) runs per row (``compiled_rows``, ``compiled_classes``),
and a template is evaluated for a scene only when CLEVR's loop reaches it. ``tests/clevr/test_compiled.py``
checks the accepted rows against the torch grid's, ``test_compiled_driver.py`` both engines' files,
byte for byte, in both semantics and under CLEVR's options.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from tensorqa.clevr.compiled_bits import K, scene_keys, stable_order
from tensorqa.clevr.compiled_classes import KW, SceneKeys, Scratch, key_nulls, key_words, workspace
from tensorqa.clevr.compiled_rows import count_answer, is_valid, only_false, rejected, run_row, sort_counts
from tensorqa.clevr.constants import MAX_BINS
from tensorqa.engine.rng_numba import fold

__all__ = ["generate_block", "workspace"]


class Accepted(NamedTuple):
    """The accepted questions of a block, in order (Q: room for every one the options allow)."""

    b: np.ndarray  # int64[Q] scene row
    t: np.ndarray  # int64[Q] template
    m: np.ndarray  # int64[Q] draw
    a: np.ndarray  # int64[Q] answer code
    p: np.ndarray  # int64[Q, Pmax] params (-1: none)
    v: np.ndarray  # int64[Q, L] node outputs


@njit(cache=True, inline="always")  # inlined into scene_templates, which runs without NRT
def repeated(acc, PRM, q0, q, nparams):
    """Whether the row's params equal those of a question accepted at [q0, q)."""
    for qq in range(q0, q):
        same = True
        for i in range(nparams):
            if acc.p[qq, i] != PRM[i]:
                same = False
                break
        if same:
            return True
    return False


# The rows' code (compiled_rows, compiled_classes) is inlined here, as closures were: a call per row
# would pass every array of the NamedTuples. NRT off (nothing here allocates): no refcounting either.
@njit(cache=True, _nrt=False)
def scene_templates(plan, rules, scene, ws, sc, acc, order, use, answers_false, b, q):
    """CLEVR's loop over the templates of scene ``b`` in ``order`` (least used first) until tpi of them
    give questions. A template's draws run in CLEVR's scan order, each evaluated when the scan reaches
    it: rounds of draws (4, 4, 8, ...) while fewer than valid_draws are valid, as
    ``torch_backend.TemplateRows.fill`` (a round's count is known whenever the scan passes it), until ipt
    are accepted. Accepted rows go to ``acc`` from ``q``; returns the new count."""
    rounds, draws, PRM, VALS = rules.rounds, rules.draws, sc.PRM, sc.VALS
    got_templates = 0
    for ti in order:
        sc.stats[0] += 1
        if answers_false[ti] and rejected(plan, sc, ti, 0):
            continue  # no row can be accepted: skipped, as its scan would end
        nparams, got, q0 = plan.nparams[ti], 0, q
        d, avail, r, n_valid = 0, min(rounds[0], draws), 1, 0
        while d < avail:
            for i in range(nparams):
                PRM[i] = -1
            sc.stats[1] += 1
            if run_row(plan, rules, scene, ws, sc, ti, b, d) and is_valid(plan, rules, scene, sc, ti, b):
                n_valid += 1
                a = VALS[0, plan.nnodes[ti] - 1]
                # the same params twice in one scene and template: once
                dup = rules.ipt > 1 and repeated(acc, PRM, q0, q, nparams)
                if not dup and not rejected(plan, sc, ti, a):
                    count_answer(plan, sc, ti, a)
                    acc.b[q], acc.t[q], acc.m[q], acc.a[q] = b, ti, d, a
                    for i in range(nparams):  # (the rest stays -1)
                        acc.p[q, i] = PRM[i]
                    for i in range(plan.nnodes[ti]):  # (the rest stays 0)
                        acc.v[q, i] = VALS[0, i]
                    q += 1
                    got += 1
                    if got >= rules.ipt:
                        break
            d += 1
            if d == avail:  # the end of a round
                if n_valid >= rules.valid_draws or r >= len(rounds):
                    break
                avail += max(min(rounds[r], draws - avail), 0)
                r += 1
        if got:
            use[ti] += 1
            got_templates += 1
            if got_templates >= rules.tpi:
                break
    return q


@njit(cache=True, nogil=True)  # nogil: the output file's writer thread runs meanwhile
def generate_block(plan, rules, scene, pos, use, hist, fresh, stats, ws):
    """CLEVR's per-scene loop over a block's scenes (``torch_backend.choose`` with ``TemplateRows.fill``
    done lazily). ``use`` int64[T], ``hist`` int64[T, 11]: the bookkeeping, carried across blocks
    (``fresh``: the run's first block, which resets); ``ws``: a ``compiled_classes.Workspace`` for the
    block's object slots. Returns the accepted questions in order: (scene row, template, draw, answer
    code, params int64[Q, Pmax], node outputs int64[Q, L])."""
    T, L = plan.nparams.shape[0], plan.op.shape[1]
    B, N = scene.relbits.shape[0], scene.relbits.shape[1]
    Pmax = max(1, plan.nparams.max())
    ws.stamp[:, :] = -1  # stamps hold a scene's row in the block
    ws.absent_stamp[:] = -1
    ws.tables.allowed_stamp[:] = -1
    sk = SceneKeys(np.zeros(K, np.int64), np.zeros(KW, np.int64), np.zeros((4, KW), np.int64), np.zeros(KW, np.int64),
                   np.zeros((max(N, 1), KW), np.int64), np.zeros(4, np.int64), np.zeros(KW, np.int64),
                   np.zeros((4, KW), np.int64), np.zeros((4, KW), np.int64), np.zeros((4, KW), np.int64),
                   np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64))
    sc = Scratch(sk, key_nulls(plan.keys), np.zeros(K, np.bool_), np.zeros(K, np.int64), np.zeros(K, np.int64),
                 np.full(Pmax, -1, np.int64), np.zeros((2, L), np.int64), np.zeros((2, L), np.int64),
                 hist, np.zeros((T, MAX_BINS), np.int64), stats, np.zeros(1, np.uint64))
    order = np.zeros(T, np.int64)
    bucket = np.zeros(T * rules.draws + 2, np.int64)
    Qmax = B * min(rules.tpi, T) * rules.ipt
    acc = Accepted(np.zeros(Qmax, np.int64), np.zeros(Qmax, np.int64), np.zeros(Qmax, np.int64),
                   np.zeros(Qmax, np.int64), np.full((Qmax, Pmax), -1, np.int64), np.zeros((Qmax, L), np.int64))
    sort_counts(hist, sc.hsort, plan.nbins)
    answers_false = only_false(plan, rules.out_neq_counts)
    q = np.int64(0)  # not a literal: scene_templates compiles for one type of q
    for b in range(B):
        if (fresh and b == 0) or pos[b] % rules.reset_every == 0:
            use[:] = 0
            hist[:, :] = 0
            sc.hsort[:, :] = 0
        npk = scene_keys(scene.keybits[b], sc.present, sk.pk, sc.pkbits, sc.pkscnt)
        sk.words_box[0] = (npk + 63) >> 6
        sk.maskbits_box[0] = scene.maskbits[b]
        key_words(sc, npk)
        sk.scene_box[0] = b
        sc.hs_box[0] = fold(rules.root, pos[b])
        stable_order(use, order, bucket)
        q = scene_templates(plan, rules, scene, ws, sc, acc, order, use, answers_false, b, q)
    return acc.b[:q], acc.t[:q], acc.m[:q], acc.a[:q], acc.p[:q], acc.v[:q]
