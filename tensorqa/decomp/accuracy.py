"""AGQA-Decomp answer accuracy and CA / RWR / RWR-n (``compute_acc_ca_rwr.py``, quirks included:
docs/reference/agqa.md §2.7) as numpy group-bys over :mod:`.encoding`'s columns. Details the
reference leaves open: deduplication keeps the first occurrence in file order; ``isolated.json``
questions are neither deduplicated nor None-filtered (a None ground truth is its own answer class,
matched only by a null prediction); a child listed twice in one rule counts twice."""

from __future__ import annotations

import numpy as np

from tensorqa.decomp.constants import COMPOSITION_RULES, QUESTION_TYPES
from tensorqa.decomp.encoding import Encoded, first_rows, ordered, sum_by
from tensorqa.decomp.predictions import NONE


def accuracy_by_type(enc: Encoded) -> dict:
    """Answer-normalized accuracy: {"types": {type: (score, answers, questions)}, "per_answer": rows}."""
    rows = first_rows(~enc.banned & (enc.ans != NONE), enc.same_text, enc.text_order)
    iso = np.flatnonzero(~enc.iso_banned)  # isolated: no dedup, no None filter
    ctype = np.concatenate([enc.ctype[rows], enc.iso_ctype[iso]])
    ans = np.concatenate([enc.ans[rows], enc.iso_ans[iso]])
    ok = np.concatenate([enc.correct[rows], enc.iso_ans[iso] == enc.iso_pred[iso]])
    A = len(enc.vocab) + 1
    out, per_answer = {}, []

    def by_answer(group_of_row, name_of_group):
        pair = group_of_row * A + (ans + 1)
        uniq, inv = np.unique(pair, return_inverse=True)
        total = sum_by(inv, len(uniq))
        corr = sum_by(inv, len(uniq), ok)
        g = uniq // A
        acc = corr / np.maximum(total, 1)
        mean = np.bincount(g, weights=acc, minlength=(int(g.max()) + 1) if len(g) else 0)
        answers = np.bincount(g)
        questions = np.bincount(g, weights=total)
        for gi in np.flatnonzero(answers):
            out[name_of_group(gi)] = (mean[gi] / answers[gi], int(answers[gi]), int(questions[gi]))
        for u, t, c in zip(uniq.tolist(), total.tolist(), corr.tolist()):
            per_answer.append((name_of_group(u // A), enc.vocab.word(u % A - 1), t, c))

    by_answer(ctype, lambda g: enc.ctype_names[g])
    by_answer(np.zeros(len(ans), np.int64), lambda g: "Overall")
    return {"types": out, "per_answer": per_answer}


# -- CA / RWR / RWR-n -------------------------------------------------------------------------------
def ca_rwr(enc: Encoded) -> dict:
    """{"by_composition"|"by_parent": {"ca"|"rwr": {name: (correct, total)}, "rwr_n": {name: {n: (c, t)}}}}."""
    N = len(enc.ans)
    parents = first_rows(enc.is_parent & ~enc.banned & (enc.ans != NONE), enc.same_text, enc.text_order)
    chosen = np.zeros(N, bool)
    chosen[parents] = True
    node_ok = enc.correct
    child_valid = ~enc.banned & (enc.ans != NONE)
    e = np.flatnonzero(chosen[enc.e_parent]) if len(enc.e_parent) else np.zeros(0, np.int64)
    ec = enc.e_child[e]
    valid, ok = child_valid[ec], child_valid[ec] & node_ok[ec]

    # per (parent, rule): the children as listed
    I = len(enc.i_parent)
    inst_total = sum_by(enc.e_inst[e], I, valid)
    inst_ok = sum_by(enc.e_inst[e], I, ok)
    inst = np.flatnonzero(inst_total > 0)
    by_comp = _buckets(inst_total[inst], inst_ok[inst], node_ok[enc.i_parent[inst]],
                       enc.i_rule[inst], enc.rule_names, COMPOSITION_RULES)

    # per parent: children unioned by text over all rules
    pair = enc.e_parent[e] * max(N, 1) + ec
    _, first = np.unique(pair, return_index=True)
    pp = enc.e_parent[e][first]
    par_total = sum_by(pp, N, valid[first])
    par_ok = sum_by(pp, N, ok[first])
    par = np.flatnonzero(par_total > 0)
    by_parent = _buckets(par_total[par], par_ok[par], node_ok[par], enc.ctype[par], enc.ctype_names, QUESTION_TYPES)
    return {"by_composition": by_comp, "by_parent": by_parent}


def _buckets(total, n_ok, parent_ok, group, names, ordering) -> dict:
    """Parent accuracy in the ca / rwr / rwr-n buckets, per group name and "Overall"."""
    all_ok = n_ok == total
    wrong = total - n_ok
    G = len(names)

    def tally(mask, g):
        t = sum_by(g[mask], G + 1)
        c = sum_by(g[mask], G + 1, parent_ok[mask])
        return {(names[i] if i < G else "Overall"): (int(c[i]), int(t[i])) for i in np.flatnonzero(t)}

    def both(mask):
        d = tally(mask, group)
        allg = np.full(len(group), G)
        d.update(tally(mask, allg))
        return d

    out = {"ca": both(all_ok), "rwr": both(~all_ok), "rwr_n": {}}
    for n in np.unique(wrong[~all_ok]).tolist():
        out["rwr_n"][int(n)] = both(wrong == n)
    out["names"] = ordered(ordering, list({**out["ca"], **out["rwr"]}))
    return out
