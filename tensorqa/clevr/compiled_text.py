"""The compiled twin of the question text of ``columns`` (numba, CPU; oracle: ``render`` in
tests/clevr/oracle.py): a question's text as UTF-8 bytes in a scratch buffer, with the variant, synonyms and optional parts chosen by the same hashed picks as
``text.picks``, whitespace collapsed as the pieces are joined, and ``other_heuristic``.

The writer's loops over a block's questions and the per-question helpers they inline (here and in
``compiled_records``) allocate nothing and are compiled without numba's reference counting
(``_nrt=False``): numba would otherwise incref and decref every array a call or an inlined call is
given, and every array read from a NamedTuple, once per question and node.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from tensorqa.clevr.compiled_bytes import B_A, B_ANOTHER, B_OTHER, B_SPACE, put, replace_all
from tensorqa.clevr.plan import CLOSE, GAP, LIT, OPEN
from tensorqa.engine.rng_numba import below, fold

BRACKET_SLOT = 64  # text.BRACKET_SLOT


class Block(NamedTuple):
    """A block's accepted questions (rows of ``compiled.generate_block``) and how to write them."""

    b: np.ndarray  # int64[Q] the question's scene (row of the block)
    t: np.ndarray  # int64[Q] its template
    m: np.ndarray  # int64[Q] its draw
    a: np.ndarray  # int64[Q] its answer code
    p: np.ndarray  # int64[Q, P] its parameter codes (-1: NULL)
    v: np.ndarray  # int64[Q, L] each node's value
    pos: np.ndarray  # int64[B] the scenes' rows in the store
    relbits: np.ndarray  # int64[B, N, 4] ``SceneBits.relbits``
    attrbits: np.ndarray  # int64[B, 4, 8] ``SceneBits.attrbits``
    root: np.uint64  # the text stream's root (``text_root``)
    with_output: bool  # programs carry each node's ``_output``
    answer_json: bool  # answers as JSON (true, 3, "red") rather than Parquet strings (yes, 3, red)
    other_thing_is_value: bool


class Scratch(NamedTuple):
    """Fixed buffers a question is written through (allocated once per block), and the node texts."""

    T1: np.ndarray  # uint8[8192] scratch of ``other_heuristic``
    T2: np.ndarray  # uint8[8192] the question's text
    PS: np.ndarray  # uint8[...] its program (the output buffer itself when writing whole records)
    AS: np.ndarray  # uint8[256] its answer
    shown: np.ndarray  # int64[P] each parameter's shown word
    imap: np.ndarray  # int64[L] template node -> emitted node
    head: np.ndarray  # uint8[S * 48] ``compiled_bytes.node_texts``
    head_n: np.ndarray  # int64[S]
    mid: np.ndarray  # uint8[(S + 1) * 48]
    mid_n: np.ndarray  # int64[S + 1]


@njit(cache=True, inline="always")
def text_key(root, scene, tid, draw):
    """The key of a question's text picks (``text.picks``): (scene, template, draw) folded into the
    text stream's root."""
    return fold(fold(fold(root, scene), tid), draw)


@njit(cache=True, inline="always")
def pick(k, slot, n):
    """``text.picks``' pick of ``slot`` among ``n``: an int in [0, n)."""
    return below(fold(k, slot), n)


@njit(cache=True, inline="always", _nrt=False)  # inlined into the writer's loops, without refcounts
def question_text(q, blk, s, plan, tp):
    """The text of question ``q`` into ``s.T2``; returns its length."""
    T2, shown, strings, str_off = s.T2, s.shown, tp.strings, tp.str_off
    ti = blk.t[q]
    k = text_key(blk.root, blk.pos[blk.b[q]], ti, blk.m[q])
    v = tp.var_start[ti] + pick(k, 0, tp.var_start[ti + 1] - tp.var_start[ti])
    for i in range(plan.nparams[ti]):  # each parameter's word or a synonym (slot 1 + i)
        ty, code = plan.ptype[ti, i], blk.p[q, i]
        cnt = tp.syn_count[ty, code + 1]
        if cnt > 0:
            shown[i] = tp.syn_ids[tp.syn_start[ty, code + 1] + pick(k, 1 + i, cnt)]
        else:
            shown[i] = tp.word[ty, code + 1]
    # the pieces joined with their whitespace collapsed as they come (" ".join(text.split())):
    # each piece's collapsed core, one space where whitespace separates two cores
    ops, spacing, core = tp.ops, tp.spacing, tp.core
    n, j, skip, gap = 0, 0, False, False
    for x in range(tp.var_ops_start[v], tp.var_ops_start[v + 1]):
        kd, arg = ops[x, 0], ops[x, 1]
        if kd >= GAP:  # a literal of whitespace only came before
            kd -= GAP
            if not skip:
                gap = True
        if kd == OPEN:
            skip = pick(k, BRACKET_SLOT + j, 2) != 1
            j += 1
        elif kd == CLOSE:
            skip = False
        elif not skip:
            sid = arg if kd == LIT else shown[arg]
            sp = spacing[sid]
            if sp & 4:
                if n > 0 and (gap or sp & 1):
                    T2[n] = 32
                    n += 1
                n = put(T2, n, strings, str_off, core[sid])
                gap = (sp & 2) != 0
            elif sp & 1:
                gap = True
    if tp.other[ti]:
        drop = False
        for a in range(4):
            v1, v2 = blk.p[q, tp.pair_params[ti, a]], blk.p[q, tp.pair_params[ti, a + 4]]
            if v1 != v2 and ((v1 >= 0 and v2 >= 0) or (a == 3 and blk.other_thing_is_value)):
                drop = True
        if drop:
            n = replace_all(T2, n, B_OTHER, B_SPACE, s.T1)
            n = replace_all(s.T1, n, B_ANOTHER, B_A, T2)
    return n
