"""Question text, compiled (numba, CPU): ``text.render`` of an accepted row, with the same hashed
choices as ``text.picker`` (engine/rng's ``clevr.text`` stream): the variant, synonyms, optional
parts, whitespace and ``other_heuristic``."""

from __future__ import annotations

from numba import njit

from tensorqa.clevr.compiled_bytes import B_A, B_ANOTHER, B_OTHER, B_SPACE, put, replace_all
from tensorqa.clevr.plan import CLOSE, GAP, LIT, OPEN
from tensorqa.engine.rng_numba import below, fold

BRACKET_SLOT = 64  # text.BRACKET_SLOT


@njit(cache=True, inline="always")
def text_key(root, scene, tid, draw):
    """``text.picker``'s key of a question: (scene, template, draw) folded into the text stream's root."""
    return fold(fold(fold(root, scene), tid), draw)


@njit(cache=True, inline="always")
def pick(k, slot, n):
    """``text.picker``'s pick(slot, n): an int in [0, n)."""
    return below(fold(k, slot), n)


@njit(cache=True, inline="always")
def render_text(q, acc, root, plan, tp, sc, other_thing_is_value):
    """``text.render`` of question q into sc.text: the variant, each param's word or synonym, the
    optional parts, whitespace collapsed as it comes (" ".join(text.split())), ``other_heuristic``.
    Returns its length."""
    ti, T2 = acc.t[q], sc.text
    k = text_key(root, acc.pos[acc.b[q]], ti, acc.m[q])
    v = tp.var_start[ti] + pick(k, 0, tp.var_start[ti + 1] - tp.var_start[ti])
    for i in range(plan.nparams[ti]):  # each parameter's word or a synonym (slot 1 + i)
        ty, code = plan.ptype[ti, i], acc.p[q, i]
        cnt = tp.syn_count[ty, code + 1]
        if cnt > 0:
            sc.shown[i] = tp.syn_ids[tp.syn_start[ty, code + 1] + pick(k, 1 + i, cnt)]
        else:
            sc.shown[i] = tp.word[ty, code + 1]
    # each piece's collapsed core, one space where whitespace separates two cores
    n, j, skip, gap = 0, 0, False, False
    for x in range(tp.var_ops_start[v], tp.var_ops_start[v + 1]):
        kd, arg = tp.ops[x, 0], tp.ops[x, 1]
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
            sid = arg if kd == LIT else sc.shown[arg]
            sp = tp.spacing[sid]
            if sp & 4:
                if n > 0 and (gap or sp & 1):
                    T2[n] = 32
                    n += 1
                n = put(T2, n, tp.strings, tp.str_off, tp.core[sid])
                gap = (sp & 2) != 0
            elif sp & 1:
                gap = True
    if tp.other[ti]:
        drop = False
        for a in range(4):
            v1, v2 = acc.p[q, tp.pair_params[ti, a]], acc.p[q, tp.pair_params[ti, a + 4]]
            if v1 != v2 and ((v1 >= 0 and v2 >= 0) or (a == 3 and other_thing_is_value)):
                drop = True
        if drop:
            n = replace_all(T2, n, B_OTHER, B_SPACE, sc.spare)
            n = replace_all(sc.spare, n, B_ANOTHER, B_A, T2)
    return n
