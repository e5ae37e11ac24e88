"""One row of a template on one scene, compiled: ``grid.run_template`` (the draws and the program)
and ``torch_backend.valid_rows`` (constraints, degeneracy), and CLEVR's answer-count rejection over a
template's sorted counts (``options.rejects``, compiled).

A row's draws hash (seed, scene, template, node, draw), so a row does not depend on what else is
evaluated. The per-row functions allocate nothing and run with numba's reference counting off
(``_nrt=False``): with it on, every call increfs each array of its NamedTuple arguments.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tensorqa.clevr.compiled_bits import absent_keys, key_index, lowest_bit, popcount, uniform_in
from tensorqa.clevr.compiled_classes import HASHED, class_table, draw_key, has_extra_keys, plain_draw
from tensorqa.clevr.constants import MAX_BINS
from tensorqa.clevr.options import rejects as _rejects
from tensorqa.clevr.plan import (
    COUNT, COUNTED, EQUAL, EXIST, FILTER, FILTER_ATTR, GREATER, INT, INTERSECT, LESS, NEQ, ONE, OUT_NEQ, PLAIN,
    QUERY, RELATE, SAME, SCENE, UNION, UNIQUE,
)

rejects = njit(cache=True, inline="always")(_rejects)  # the one definition, compiled


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def draw_filter(plan, rules, scene, ws, sc, ti, k, b, x, draw, w):
    """Draws the key params of filter node k (and its relation for relate_filter*) into PRM, from the
    node's class table, computed or cached; False where no key is an option."""
    rel, ct, a0, PRM = plan.related[ti, k], plan.ctid[ti, k], plan.in0[ti, k], sc.PRM
    N = scene.relbits.shape[1]
    if not rel and x == 0 and plan.ct_base[ct] <= ONE:
        return False  # filter / filter_unique of the empty set: no key is an option
    J = 4 if rel else 1
    slot = -1
    if rel:
        slot = 1 + x
        for j in range(4):
            sc.keys.sets[j] = scene.relbits[b, x, j]
    else:
        sc.keys.sets[0] = x
        if plan.op[ti, a0] == SCENE:
            slot = 0
        elif plan.op[ti, a0] == SAME:
            slot = 1 + N + plan.attr[ti, a0] * N + sc.VALS[w, plan.in0[ti, a0]]
    base = plan.ct_base[ct]
    u = uniform_in(sc.hs_box[0], ti, draw, k)
    if slot < 0 and base == ONE:
        # any other set (a row's own: rarely seen twice) as input of filter_unique:
        # one class of options, drawn without a table
        key = plain_draw(ws.tables, sc.keys, ct, plan.ct_null[ct], x, base, u)
        if key < 0:
            return False
        for i in range(4):
            p = plan.kp[ti, k, i]
            if p >= 0:
                PRM[p] = plan.keys[key, plan.kp_attr[ti, k, i]]
        return True
    if slot == -1:  # any other set: a hashed slot, tagged with the set
        slot = 1 + 5 * N + ((x * 0x9E3779B1) >> 7) % HASHED
    if ws.stamp[ct, slot] != sc.keys.scene_box[0] or ws.tag[ct, slot] != x:
        sc.stats[2 + (J == 4)] += 1
        class_table(ws.tables, sc.keys, ct, J, slot == 0, slot, base, plan.ct_related[ct], plan.ct_nallowed[ct],
                    plan.ct_null[ct], rules.faithful)
        ws.stamp[ct, slot] = sc.keys.scene_box[0]
        ws.tag[ct, slot] = x
    key, j = draw_key(plan, rules, ws, sc, u, J, ct, slot, has_extra_keys(base, rel), rel)
    if key == -1:
        return False
    if key < -1:
        if ws.absent_stamp[ct] != sc.keys.scene_box[0]:
            absent_keys(ct, sc.present, plan.ct_allowed, ws.absent)
            ws.absent_stamp[ct] = sc.keys.scene_box[0]
        key = ws.absent[ct, -2 - key]
    for i in range(4):
        p = plan.kp[ti, k, i]
        if p >= 0:
            PRM[p] = plan.keys[key, plan.kp_attr[ti, k, i]]
    if rel:
        PRM[plan.rp[ti, k]] = j
    return True


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def node_value(plan, scene, sc, ti, k, b, draw, sample, replace, w):
    """(answered, output, input set) of node k of template ``ti`` on scene ``b``, its inputs in VALS[w]
    and a filter's params in PRM; ``sample``: draws a relate's or filter_<a>'s param into PRM first.
    ``replace``: a node whose output is the whole scene (the degeneracy test), or -1. Not answered:
    '__INVALID__' (a unique of no or several objects)."""
    op, in0, in1, attr, PRM, VALS = plan.op, plan.in0, plan.in1, plan.attr, sc.PRM, sc.VALS
    relbits, attrbits, attrs = scene.relbits, scene.attrbits, scene.attrs
    o_ = op[ti, k]
    a0 = in0[ti, k]
    x = VALS[w, a0] if a0 >= 0 else 0
    v, pre = np.int64(0), np.int64(0)  # the node's output and input set
    if k == replace or o_ == SCENE:
        v = scene.maskbits[b]
    elif o_ == FILTER:
        rel = plan.related[ti, k]
        s = relbits[b, x, PRM[plan.rp[ti, k]]] if rel else x
        f = s & scene.keybits[b, key_index(PRM, plan.kp[ti, k], plan.kp_attr[ti, k])]
        pre = f
        sf = plan.suffix[ti, k]
        if sf == PLAIN:
            v = f
        elif sf == ONE:
            if popcount(f) != 1:
                return False, v, pre
            v = lowest_bit(f)
        elif sf == COUNTED:
            v = popcount(f)
        else:
            v = 1 if f != 0 else 0
    elif o_ == RELATE:
        if sample:
            PRM[plan.rp[ti, k]] = min(np.int64(uniform_in(sc.hs_box[0], ti, draw, k) * 4.0), 3)
        v = relbits[b, x, PRM[plan.rp[ti, k]]]
    elif o_ == FILTER_ATTR:
        a = attr[ti, k]
        if sample:
            nv = plan.nvals[a]
            PRM[plan.sp[ti, k]] = min(np.int64(uniform_in(sc.hs_box[0], ti, draw, k) * nv), nv - 1)
        v = x & attrbits[b, a, PRM[plan.sp[ti, k]]]
    elif o_ == SAME:
        a = attr[ti, k]
        v = attrbits[b, a, attrs[b, x, a]] & ~(np.int64(1) << x)
    elif o_ == UNION:
        v = x | VALS[w, in1[ti, k]]
    elif o_ == INTERSECT:
        v = x & VALS[w, in1[ti, k]]
    elif o_ == COUNT:
        pre = x
        v = popcount(x)
    elif o_ == EXIST:
        pre = x
        v = 1 if x != 0 else 0
    elif o_ == UNIQUE:
        if popcount(x) != 1:
            return False, v, pre
        v = lowest_bit(x)
    elif o_ == QUERY:
        v = attrs[b, x, attr[ti, k]]
    elif o_ == EQUAL:
        v = 1 if x == VALS[w, in1[ti, k]] else 0
    elif o_ == LESS:
        v = 1 if x < VALS[w, in1[ti, k]] else 0
    elif o_ == GREATER:
        v = 1 if x > VALS[w, in1[ti, k]] else 0
    return True, v, pre


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def run_row(plan, rules, scene, ws, sc, ti, b, draw):
    """One row of template ``ti`` on scene ``b``: draws its params into PRM, node outputs in VALS[0]
    (sets as object bits), filter / count / exist inputs in PRE[0]. False where the row has no answer
    ('__INVALID__', or a node with no option); the remaining nodes are then not run."""
    for k in range(plan.nnodes[ti]):
        if plan.op[ti, k] == FILTER:
            a0 = plan.in0[ti, k]
            x = sc.VALS[0, a0] if a0 >= 0 else 0
            if not draw_filter(plan, rules, scene, ws, sc, ti, k, b, x, draw, 0):
                return False
        ok, v, pre = node_value(plan, scene, sc, ti, k, b, draw, True, -1, 0)
        if not ok:
            return False
        sc.VALS[0, k] = v
        sc.PRE[0, k] = pre
    return True


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def replay_row(plan, scene, sc, ti, b, replace):
    """The row in PRM again, node ``replace``'s output replaced by the whole scene (the degeneracy
    test), into VALS[1] and PRE[1]; False where it has no answer. No draws: no class tables here."""
    for k in range(plan.nnodes[ti]):
        ok, v, pre = node_value(plan, scene, sc, ti, k, b, 0, False, replace, 1)
        if not ok:
            return False
        sc.VALS[1, k] = v
        sc.PRE[1, k] = pre
    return True


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def is_valid(plan, rules, scene, sc, ti, b):
    """``torch_backend.valid_rows`` for a row that ran: NEQ / OUT_NEQ, the answer's range, CLEVR's
    degeneracy test (a raw relate replaced by the scene keeps the answer)."""
    cons, kind, PRM, VALS, PRE = plan.cons, plan.kind, sc.PRM, sc.VALS, sc.PRE
    for c in range(plan.ncons[ti]):
        typ, i, j = cons[ti, c, 0], cons[ti, c, 1], cons[ti, c, 2]
        if typ == OUT_NEQ:
            if kind[ti, i] == INT and kind[ti, j] == INT and not rules.out_neq_counts:
                if PRE[0, i] == PRE[0, j]:
                    return False
            elif VALS[0, i] == VALS[0, j]:
                return False
        elif typ == NEQ:
            v1, v2 = PRM[i], PRM[j]
            if v1 >= 0 and v2 >= 0 and ((v1 != v2) if rules.neq_inverted else (v1 == v2)):
                return False
    last = plan.nnodes[ti] - 1
    ans = VALS[0, last]
    if ans < 0 or ans > MAX_BINS - 1:
        return False
    for k in range(plan.nnodes[ti]):
        if plan.op[ti, k] == RELATE and replay_row(plan, scene, sc, ti, b, k) and VALS[1, last] == ans:
            return False
    return True


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def count_answer(plan, sc, ti, a):
    """hist[ti, a] += 1, hsort kept sorted: the last of the counts equal to the old one goes up."""
    hist, hsort = sc.hist, sc.hsort
    c = hist[ti, a]
    hist[ti, a] = c + 1
    j = plan.nbins[ti] - 1
    while j >= 0 and hsort[ti, j] != c:
        j -= 1
    if j >= 0:  # (an answer outside the template's bins is counted, not ranked, as options.rejected)
        hsort[ti, j] = c + 1


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def rejected(plan, sc, ti, a):
    """``options.rejects`` over the sorted counts."""
    nb = plan.nbins[ti]
    return rejects(sc.hist[ti, a], sc.hsort[ti, nb - 2], sc.hsort[ti, nb // 2])


@njit(cache=True)
def sort_counts(hist, hsort, nbins):
    """hsort[ti]: each template's answer counts in ascending order (insertion sort: at most 11 bins)."""
    for ti in range(hist.shape[0]):
        for i in range(nbins[ti]):
            v = hist[ti, i]
            j = i
            while j > 0 and hsort[ti, j - 1] > v:
                hsort[ti, j] = hsort[ti, j - 1]
                j -= 1
            hsort[ti, j] = v


@njit(cache=True)
def only_false(plan, out_neq_counts):
    """bool[T]: whether every valid row of a template answers False: the last node is ``equal_*`` of
    two outputs that an OUT_NEQ keeps apart (CLEVR's ``compare_integer#0`` under defect 4)."""
    T = plan.nnodes.shape[0]
    out = np.zeros(T, np.bool_)
    for ti in range(T):
        last = plan.nnodes[ti] - 1
        if plan.op[ti, last] != EQUAL:
            continue
        i, j = plan.in0[ti, last], plan.in1[ti, last]
        ints = plan.kind[ti, i] == INT and plan.kind[ti, j] == INT
        for c in range(plan.ncons[ti]):
            a, z = plan.cons[ti, c, 1], plan.cons[ti, c, 2]
            apart = plan.cons[ti, c, 0] == OUT_NEQ and ((a == i and z == j) or (a == j and z == i))
            if apart and (out_neq_counts or not ints):
                out[ti] = True
    return out
