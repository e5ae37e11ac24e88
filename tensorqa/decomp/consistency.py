"""AGQA-Decomp internal consistency (``compute_ic.py``, its later revision checking both
directions) and its correlation with accuracy (``ic_acc_correlation.py``, with the older one-check
rules and no deduplication), quirks included (docs/reference/agqa.md §2.7): each rule a boolean
formula over :mod:`.encoding`'s per-composition columns. The Equals rule's two directions are not
mirror images, as in the original; First, Last, Longer and Shorter Choose are never checked."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.errors import TensorQAError
from tensorqa.decomp.constants import (COMPOSITION_RULES, CONSISTENCY_RULES, EQUALS_PROGRAM_SLICE, IC_CHECKER,
                                      PARENT_TO_RULES, QUESTION_TYPES, rules_of)
from tensorqa.decomp.encoding import Encoded, first_rows, ordered, score, sum_by
from tensorqa.decomp.predictions import MISSING, NONE


def _consistency_checks(enc: Encoded, inst_mask: np.ndarray, variant: str):
    """Fired consistency checks of the compositions in ``inst_mask``: (composition int64[K], rule
    int64[K] into CONSISTENCY_RULES, wrong bool[K]). variant "both": ``compute_ic.py``; "single":
    ``ic_acc_correlation.py`` (one check per composition)."""
    I = len(enc.i_parent)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))
    if I == 0:
        return empty
    v = enc.vocab
    pred = enc.pred
    kind_names = ["", "implies", "conjunction", "xor", "equals", "choose"]
    kinds = np.array([kind_names.index(IC_CHECKER.get(r, "")) for r in enc.rule_names] + [0], np.int8)
    kind = kinds[enc.i_rule]
    IMPLIES, CONJUNCTION, XOR, EQUALS, CHOOSE = 1, 2, 3, 4, 5
    rule_yes = _rule_ids(enc.rule_names, "Yes")[enc.i_rule]
    rule_no = _rule_ids(enc.rule_names, "No")[enc.i_rule]
    q = pred[enc.i_parent]
    qy, qn = q == v.yes, q == v.no

    # implication / conjunction inputs: valid children are non-banned yes/no types
    valid = ~enc.banned[enc.e_child] & enc.yesno[enc.e_child]
    cp = pred[enc.e_child]
    n_valid = sum_by(enc.e_inst, I, valid)
    all_yes = sum_by(enc.e_inst, I, valid & (cp != v.yes)) == 0
    one_no = sum_by(enc.e_inst, I, valid & (cp == v.no)) > 0
    has_valid = n_valid > 0

    # pairwise inputs: the first two children
    E = len(enc.e_child)
    c1 = enc.e_child[enc.i_first]
    c2 = enc.e_child[np.minimum(enc.i_first + 1, E - 1)]
    pairwise = (kind == XOR) | (kind == CHOOSE) | ((kind == EQUALS) & enc.obj_equals[enc.i_parent])
    bad = inst_mask & pairwise & (enc.i_arity != 2)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TensorQAError(f"{enc.h.where(enc.hier[enc.i_parent[i]])}: the {enc.rule_names[enc.i_rule[i]]!r} "
                            f"composition of {enc.h.nodes['text'][int(enc.i_parent[i])].as_py()!r} has "
                            f"{int(enc.i_arity[i])} children; its consistency check needs exactly 2")
    p1, p2 = pred[c1], pred[c2]
    pair_ok = pairwise & ~enc.banned[c1] & ~enc.banned[c2] & (enc.i_arity == 2)
    segments = []

    def emit(mask, rule, wrong):
        mask = mask & inst_mask
        rule = np.broadcast_to(rule, mask.shape)
        wrong = np.broadcast_to(wrong, mask.shape)
        segments.append((np.flatnonzero(mask), rule[mask], wrong[mask]))

    # Interaction / After / Before / While imply; And / Between are conjunctions
    implies = kind == IMPLIES
    emit(implies & qy & has_valid, rule_yes, ~all_yes)
    emit(implies & (one_no if variant == "both" else ~qy & one_no), rule_no, ~qn)
    _two_way(emit, (kind == CONJUNCTION) & has_valid, qy, qn, all_yes, rule_yes, rule_no, variant, fails=one_no)
    # Xor: c1 but not c2
    _two_way(emit, (kind == XOR) & pair_ok, qy, qn, (p1 == v.yes) & (p2 == v.no), rule_yes, rule_no, variant)
    m = (kind == EQUALS) & pair_ok
    _two_way(emit, m & enc.is_parent[c1], qy, qn, (p1 == p2) & (p1 != MISSING), rule_yes, rule_no, variant)
    _leaf_equals_checks(emit, enc, m & ~enc.is_parent[c1], inst_mask, c1, p1, p2, qy, qn, rule_yes, rule_no, variant)
    _choose_checks(emit, enc, (kind == CHOOSE) & pair_ok, inst_mask, q, c1, c2, p1, p2)
    if not segments:
        return empty
    idx = np.concatenate([s[0] for s in segments])
    rule = np.concatenate([s[1] for s in segments]).astype(np.int64)
    wrong = np.concatenate([s[2] for s in segments]).astype(bool)
    return idx, rule, wrong


def _leaf_equals_checks(emit, enc: Encoded, leaf, inst_mask, c1, p1, p2, qy, qn, rule_yes, rule_no, variant):
    """Equals under an Object Equals parent whose first child is a leaf: c2 must name the object of
    c1's program, and c1 must say yes."""
    if not (leaf & inst_mask).any():
        return
    hit = p2 == _equals_objects(enc, c1, leaf & inst_mask)
    y1 = p1 == enc.vocab.yes
    if variant == "both":
        emit(leaf & (qy | hit), rule_yes, ~(qy & hit & y1))
        emit(leaf & (qn | ~hit | ~y1), rule_no, ~qn | hit)
    else:
        emit(leaf & qy, rule_yes, ~hit | ~y1)
        emit(leaf & qn, rule_no, hit)
        other = leaf & ~qy & ~qn
        emit(other & (~hit | ~y1), rule_no, True)
        emit(other & hit & y1, rule_yes, True)


def _choose_checks(emit, enc: Encoded, m, inst_mask, q, c1, c2, p1, p2):
    """Choose: before / after names the child that must say yes ("Choose Temporal"); otherwise the
    child whose first Equals child reads "<answer> exist" ("Choose Object")."""
    v = enc.vocab
    temporal, objective = CONSISTENCY_RULES.index("Choose Temporal"), CONSISTENCY_RULES.index("Choose Object")
    qb, qa = q == v.before, q == v.after
    first_yes = (p1 == v.yes) & (p2 == v.no)
    second_yes = (p1 == v.no) & (p2 == v.yes)
    emit(m & qb, temporal, ~first_yes)
    emit(m & qa, temporal, ~second_yes)
    other = m & ~qb & ~qa & inst_mask
    if other.any():
        in1, in2 = _choose_object_hits(enc, other, q, c1, c2)
        emit(in1, objective, ~first_yes)
        emit(~in1 & in2, objective, ~second_yes)


def _two_way(emit, m, qy, qn, holds, rule_yes, rule_no, variant, fails=None):
    """Parent = yes <=> ``holds``, parent = no <=> ``fails`` (default: not ``holds``; a conjunction's children
    may be neither all yes nor one no), in the chosen variant."""
    fails = ~holds if fails is None else fails
    if variant == "both":
        emit(m & (qy | holds), rule_yes, ~(qy & holds))
        emit(m & (qn | fails), rule_no, ~(qn & fails))
    else:
        emit(m & qy, rule_yes, ~holds)
        emit(m & qn, rule_no, ~fails)
        other = m & ~qy & ~qn
        emit(other & holds, rule_yes, True)
        emit(other & fails, rule_no, True)


def _rule_ids(rule_names: list, suffix: str) -> np.ndarray:
    """Per composition rule id (plus a trailing -1 slot), the index of "<rule> <suffix>" or -1."""
    out = [CONSISTENCY_RULES.index(f"{r} {suffix}") if f"{r} {suffix}" in CONSISTENCY_RULES else -1
           for r in rule_names]
    return np.array(out + [-1], np.int64)


def _equals_objects(enc: Encoded, c1: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Vocabulary code of ``program(c1)[10:-1]`` where ``mask`` (MISSING elsewhere / if unseen)."""
    rows = c1[mask]
    programs = enc.h.nodes["program"].take(pa.array(rows))
    if programs.null_count:
        i = int(np.flatnonzero(np.asarray(pc.is_null(programs).to_numpy(zero_copy_only=False)))[0])
        r = int(rows[i])
        raise TensorQAError(f"{enc.h.where(enc.hier[r])}: Equals child {enc.h.nodes['text'][r].as_py()!r} has no "
                            f"'program'; the Equals consistency check reads its object from it")
    s = EQUALS_PROGRAM_SLICE
    names = pc.utf8_slice_codeunits(programs, s.start, s.stop)
    codes = enc.vocab.encode(names)
    out = np.full(len(c1), MISSING, np.int64)
    # an object string that no answer / prediction spells can match no prediction
    out[mask] = np.where(codes >= 0, codes, MISSING - 1)
    return out


def _choose_object_hits(enc: Encoded, mask: np.ndarray, q, c1, c2):
    """For Choose compositions in ``mask``: does the first Equals child of c1 (of c2) contain
    "<parent prediction> exist"? Both need an "Equals" rule with exactly two children."""
    I = len(enc.i_parent)
    N = len(enc.ans)
    eq_rule = [i for i, r in enumerate(enc.rule_names) if r == "Equals"]
    eq_of_row = np.full(N, -1, np.int64)
    if eq_rule:
        eqi = np.flatnonzero(enc.i_rule == eq_rule[0])
        eq_of_row[enc.i_parent[eqi]] = eqi
    e1, e2 = eq_of_row[c1], eq_of_row[c2]
    usable = mask & (e1 >= 0) & (e2 >= 0)
    usable &= (enc.i_arity[np.maximum(e1, 0)] == 2) & (enc.i_arity[np.maximum(e2, 0)] == 2)
    in1 = np.zeros(I, bool)
    in2 = np.zeros(I, bool)
    idx = np.flatnonzero(usable & (q != MISSING))
    if len(idx) == 0:
        return in1, in2
    words = np.array([*(str(w) for w in enc.vocab.values.to_pylist()), "None"], dtype=np.dtypes.StringDType())
    word = np.where(q[idx] == NONE, len(words) - 1, q[idx])
    S = int(enc.same_text.max()) + 1
    for e, hits in ((e1, in1), (e2, in2)):
        # "<word> exist" in <text>: evaluated once per distinct (word, video, text)
        rows = enc.e_child[enc.i_first[e[idx]]]
        uniq, first, inv = np.unique(word * S + enc.same_text[rows], return_index=True, return_inverse=True)
        hay = _np_strings(enc.h.nodes["text"].take(pa.array(rows[first])))
        needle = np.strings.add(words[uniq // S], " exist")
        hits[idx] = (np.strings.find(hay, needle) >= 0)[inv]
    return in1, in2


def _np_strings(arr) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=object).astype(np.dtypes.StringDType())


def internal_consistency(enc: Encoded) -> dict:
    """IC per rule, per composition and per parent type (``compute_ic.py``)."""
    parents = first_rows(enc.is_parent & ~enc.banned, enc.same_text, enc.text_order)
    chosen = np.zeros(len(enc.ans), bool)
    chosen[parents] = True
    inst_mask = chosen[enc.i_parent] if len(enc.i_parent) else np.zeros(0, bool)
    inst, rule, wrong = _consistency_checks(enc, inst_mask, "both")
    R = len(CONSISTENCY_RULES)
    total = sum_by(rule, R)
    n_wrong = sum_by(rule, R, wrong)
    by_rule = {r: score(total[i] - n_wrong[i], total[i]) for i, r in enumerate(CONSISTENCY_RULES)}

    by_comp = {comp: _mean([by_rule[r] for r in rules_of(comp)]) for comp in COMPOSITION_RULES}

    # per parent type: checks under parents of that type; a type is present once a parent of it was visited
    T = len(enc.ctype_names)
    ptype = enc.ctype[enc.i_parent[inst]]
    pt_total = sum_by(ptype * R + rule, T * R).reshape(T, R)
    pt_wrong = sum_by(ptype * R + rule, T * R, wrong).reshape(T, R)
    present = set(enc.ctype[parents].tolist())
    by_parent = {}
    for name in ordered(QUESTION_TYPES, [enc.ctype_names[t] for t in sorted(present)]):
        t = enc.ctype_names.index(name) if name in enc.ctype_names else -1
        if t not in present or name not in PARENT_TO_RULES:
            by_parent[name] = None
            continue
        by_parent[name] = _mean([score(pt_total[t, j] - pt_wrong[t, j], pt_total[t, j]) for comp in PARENT_TO_RULES[name]
                                 for j, r in enumerate(CONSISTENCY_RULES) if comp in r])
    return {"by_rule": by_rule, "by_composition": by_comp, "by_parent": by_parent,
            "totals": {r: int(total[i]) for i, r in enumerate(CONSISTENCY_RULES)},
            "wrong": {r: int(n_wrong[i]) for i, r in enumerate(CONSISTENCY_RULES)}}


def _mean(scores: list) -> float | None:
    """The mean of rule scores; None without any, or if one has no data."""
    return None if not scores or any(s is None for s in scores) else float(np.mean(scores))


def ic_accuracy_correlation(enc: Encoded) -> tuple[float | None, int]:
    """Pearson r between per-hierarchy accuracy and per-hierarchy IC (``ic_acc_correlation.py``)."""
    H = enc.h.num_hierarchies
    valid = ~enc.banned & (enc.ans != NONE)
    acc_total = sum_by(enc.hier[valid], H)
    acc_ok = sum_by(enc.hier[valid], H, enc.correct[valid])
    inst_mask = ~enc.banned[enc.i_parent] if len(enc.i_parent) else np.zeros(0, bool)
    inst, _, wrong = _consistency_checks(enc, inst_mask, "single")
    ih = enc.hier[enc.i_parent[inst]]
    ic_total = sum_by(ih, H)
    ic_wrong = sum_by(ih, H, wrong)
    both = (acc_total > 0) & (ic_total > 0)
    n = int(both.sum())
    if n < 2:
        return None, n
    acc = acc_ok[both] / acc_total[both]
    ic = (ic_total[both] - ic_wrong[both]) / ic_total[both]
    a, b = acc - acc.mean(), ic - ic.mean()
    den = np.sqrt((a * a).sum() * (b * b).sum())
    if den == 0:
        return None, n  # scipy.stats.pearsonr gives nan for a constant input
    return float(np.clip((a * b).sum() / den, -1.0, 1.0)), n
