"""AGQA-Decomp metrics: answer-normalized accuracy, CA / RWR / RWR-n / Delta, IC and its
correlation with accuracy, with the meaning of the official evaluation code.

The official scripts (madeleinegrunde/AGQA_baselines_code ``agqa_decomp_evaluation/``:
``compute_acc_ca_rwr.py``, ``compute_ic.py``, ``ic_acc_correlation.py``; reference ``agqa.md``
§2.7) walk every question in Python. Here every metric is a handful of numpy group-bys over the
flat tables of :mod:`tensorqa.decomp.hierarchies`: strings become integer codes once (one shared
vocabulary for answers and predictions; each file's distinct question keys are looked up in the
predictions once), "first occurrence per video and text" is a pass over one shared stable sort,
counts per group are ``np.bincount``, and each consistency rule is a boolean formula over
per-composition columns.

What the official code does, and so what this module does (the quirks included on purpose):

* Accuracy. Banned types and ``answer is None`` are skipped, then questions are deduplicated by
  text within each video file (first occurrence in file order). ``isolated.json`` questions are
  added without deduplication and without the ``None`` filter (a ``None`` ground truth is its
  own answer class there, matched only by a ``null`` prediction). Per collapsed type the score is
  the unweighted mean over ground-truth answers of the per-answer accuracy; "Overall" is the same
  mean over every distinct answer pooled across all types.
* CA / RWR / RWR-n. Parents: hierarchy keys of a non-banned type with an answer, deduplicated by
  text per video (children come from the first occurrence). Children count when non-banned and
  answered. Per (parent, rule) and per parent (children unioned by text over its rules): when
  there is at least one valid child, the parent's correctness goes into the "ca" bucket if every
  child is right, else into "rwr" and "rwr-<number wrong>". Duplicated children in one rule's list
  count twice there (the official loop walks the list).
* IC (``compute_ic.py``, the later revision that checks both directions of every implication).
  Parents: hierarchy keys of a non-banned type (no answer filter), deduplicated by text per video.
  Only predictions are compared. Rules per composition (q = parent prediction, c1 / c2 = the
  first / second child's prediction; "valid" children are non-banned yes/no types):
  - Interaction / After / Before / While. Yes: q = yes and some valid child -> wrong unless all
    valid children say yes. No: some valid child says no -> wrong unless q = no.
  - And / Between. Yes: (q = yes or all valid children yes) -> wrong unless both. No: (q = no or
    some valid child no) -> wrong unless both. Nothing fires without a valid child.
  - Xor (c1 but not c2; skipped when a child is banned). Yes: (q = yes or (c1 = yes and c2 = no))
    -> wrong unless both. No: (q = no or not (c1 = yes and c2 = no)) -> wrong unless q = no and
    not (c1 = yes and c2 = no).
  - Equals, only under "Object Equals" parents. If c1 has children of its own: Yes: (q = yes or
    c1 = c2) -> wrong unless both; No: (q = no or c1 != c2) -> wrong unless both. Leaf case, with
    obj = program(c1)[10:-1]: Yes fires on (q = yes or c2 = obj) and is wrong unless q = yes, c2 =
    obj and c1 = yes; No fires on (q = no or c2 != obj or c1 != yes) and is wrong when (q = no and
    c2 = obj) or (q != no). The two directions are not mirror images: the backward Yes check
    ignores c1, and the forward No check never blames c1 (q = no, c1 = no, c2 = obj is wrong).
  - Choose. q = before: wrong unless c1 = yes, c2 = no; q = after: wrong unless c1 = no, c2 = yes
    ("Choose Temporal"). Otherwise, when both children have an "Equals" rule of exactly two
    children, the one whose first Equals child's text contains "<q> exist" must be yes and the
    other no ("Choose Object"; c1 is tried first).
  - First, Last, Longer Choose, Shorter Choose: never checked (the official dispatcher has no
    branch for them; First/Last children are banned types anyway), so their IC cells are N/A.
  Score per rule = 1 - wrong / fired. Per composition: the unweighted mean of the scores of the
  rules whose name contains the composition name ("Overall": all 18, so Overall is N/A unless
  every rule fired at least once), N/A if any of them never fired. Per parent type: the same over
  ``PARENT_TO_RULES``, from checks under parents of that type; N/A for types absent from that
  table (Object Exists, First/Last, "Overall", ...).
* IC-accuracy correlation (``ic_acc_correlation.py``): per hierarchy (main question), accuracy
  over all its non-banned answered sub-questions (no deduplication) and IC = (fired - wrong) /
  fired over every non-banned parent (no deduplication, no answer filter), with the *older*
  one-check-per-composition variants of the rules that this script keeps so that one failure is
  not counted twice; Pearson's r over hierarchies with both defined.

Where this module differs from the official scripts, it is to report rather than crash:

* A missing prediction (a scored key absent from the predictions) is counted, reported, and
  scored as a prediction that matches nothing, not even another missing one (the official code
  raises KeyError). Question keys and prediction ids meet as strings (the official map went
  through JSON, so an integer ``key`` in a hierarchy file would raise KeyError there).
* Hierarchies are keyed by (video, main key) in the correlation (the official dict keyed by the
  main key alone would let one video overwrite another's).
* A type outside ``COLLAPSED_TYPES`` is its own collapsed type everywhere (the official code does
  this for isolated questions and raises KeyError in hierarchies). Such types and rule names are
  reported after the official rows instead of being left out of the tables (they always counted
  in "Overall").
* A Xor / Choose / Object-Equals composition whose child list does not have two children, or a
  leaf Equals child without a ``program``, is a TensorQAError naming the file (the official code
  raises ValueError / TypeError); an empty child list checks nothing.
* A non-string answer or prediction is compared through its JSON text; a ``null`` prediction
  reads "None" in the Choose object test, as Python's f-string does.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.errors import TensorQAError
from tensorqa.decomp.constants import (BANNED_TYPES, COMPOSITION_RULES, CONSISTENCY_RULES, EQUALS_PARENT_TYPE,
                        EQUALS_PROGRAM_SLICE, IC_CHECKER, PARENT_TO_RULES, QUESTION_TYPES, YES_NO_TYPES,
                        collapse, rules_of)
from tensorqa.decomp.hierarchies import Hierarchies, _answer_column, _key_column, as_hierarchies, read_json

NONE = -1      # code of a JSON null answer / prediction
MISSING = -2   # code of "no prediction for this key"; equal to nothing, itself included

# ============================================================================================
# predictions


@dataclass(frozen=True)
class Predictions:
    """Predictions keyed by question id.

    keys: pa.string [P], distinct (for a repeated key the last entry wins, as in the official
    ``preprocess.py`` dict); values: pa.string [P], null = a JSON null prediction;
    entries: entries read before deduplication; source: file name or "<object>".
    """

    keys: pa.Array
    values: pa.Array
    entries: int
    source: str

    @property
    def duplicates(self) -> int:
        return self.entries - len(self.keys)


def load_predictions(source) -> Predictions:
    """Predictions from a file or an in-memory object.

    Accepted: the official list ``[{"csv_q_id": id, "prediction": answer, ...}, ...]`` (what
    HCRN's ``validate.py`` writes) or a plain ``{key: prediction}`` map (what the official
    ``preprocess.py`` derives from it). Ids are compared as strings. A non-string prediction is
    compared through its JSON text.
    """
    if isinstance(source, Predictions):
        return source
    if isinstance(source, (str, os.PathLike)):
        name = str(source)
        data = read_json(Path(source))
    else:
        name, data = "<predictions>", source
    if isinstance(data, dict):
        keys, values = list(data.keys()), list(data.values())
    elif isinstance(data, list):
        try:
            keys = list(map(itemgetter("csv_q_id"), data))
            values = list(map(itemgetter("prediction"), data))
        except (KeyError, TypeError):
            i, bad = next((i, d) for i, d in enumerate(data)
                          if not isinstance(d, dict) or "csv_q_id" not in d or "prediction" not in d)
            raise TensorQAError(f"{name}: entry {i} is not an object with 'csv_q_id' and 'prediction' "
                                f"({str(bad)[:60]})") from None
    else:
        raise TensorQAError(f"{name}: expected a list of {{csv_q_id, prediction}} or a {{key: prediction}} "
                            f"object, got {type(data).__name__}")
    k, v = _key_column(keys), _answer_column(values)
    entries = len(k)
    if entries and pc.count_distinct(k, mode="all").as_py() < entries:
        # a repeated key: the last entry wins (keep the first occurrence in the reversed order)
        rk, rv = k[::-1], v[::-1]
        codes = np.asarray(pc.index_in(rk, value_set=pc.unique(rk)).to_numpy(zero_copy_only=False))
        _, first = np.unique(codes, return_index=True)
        keep = pa.array(np.sort(first))
        k, v = rk.take(keep), rv.take(keep)
    if pc.any(pc.is_null(k)).as_py():
        raise TensorQAError(f"{name}: a prediction has a null question id")
    return Predictions(keys=k, values=v, entries=entries, source=name)


# ============================================================================================
# encoding: strings -> integer codes


class _Vocab:
    """One string vocabulary shared by answers, predictions and the fixed words the rules use."""

    def __init__(self, arrays: list):
        chunks = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
        chunks = [c for c in chunks if len(c)]
        fixed = pa.array(["yes", "no", "before", "after"], pa.string())
        self.values = pc.unique(pa.chunked_array([fixed, *chunks], type=pa.string())).drop_null() \
            if chunks else fixed
        self.yes, self.no, self.before, self.after = (self.code(w) for w in ("yes", "no", "before", "after"))

    def __len__(self) -> int:
        return len(self.values)

    def code(self, word: str) -> int:
        return int(pc.index(self.values, word).as_py())

    def encode(self, array) -> np.ndarray:
        """int64 codes; null -> NONE."""
        if len(array) == 0:
            return np.zeros(0, np.int64)
        return np.asarray(pc.fill_null(pc.index_in(array, value_set=self.values), NONE).to_numpy(), np.int64)

    def word(self, code: int):
        return None if code < 0 else self.values[int(code)].as_py()


def _codes(array) -> tuple[np.ndarray, pa.Array]:
    """Factorize a string column: (int64 codes, pa.Array of the distinct values)."""
    if len(array) == 0:
        return np.zeros(0, np.int64), pa.array([], pa.string())
    uniq = pc.unique(array)
    return np.asarray(pc.index_in(array, value_set=uniq).to_numpy(), np.int64), uniq


@dataclass
class _Encoded:
    """Hierarchies and predictions as integer columns (N nodes, E edges, I compositions, M isolated)."""

    h: Hierarchies
    vocab: _Vocab
    ctype_names: list               # collapsed type id -> name
    rule_names: list                # rule id -> composition rule name
    # nodes [N]
    hier: np.ndarray                # int32 hierarchy
    same_text: np.ndarray           # int64, equal for equal (video, text)
    text_order: np.ndarray          # int64, stable argsort of same_text
    banned: np.ndarray              # bool
    yesno: np.ndarray               # bool, raw type is a yes/no type
    obj_equals: np.ndarray          # bool, raw type is "Object Equals"
    ctype: np.ndarray               # int64 collapsed type id
    ans: np.ndarray                 # int64 answer code (NONE = None)
    pred: np.ndarray                # int64 prediction code (NONE = null, MISSING = absent)
    is_parent: np.ndarray           # bool
    # edges [E]
    e_parent: np.ndarray
    e_child: np.ndarray
    e_inst: np.ndarray              # composition (parent, rule) id of each edge
    # compositions [I]
    i_parent: np.ndarray
    i_rule: np.ndarray
    i_arity: np.ndarray
    i_first: np.ndarray             # edge index of the first child
    # isolated [M]
    iso_banned: np.ndarray
    iso_ctype: np.ndarray
    iso_ans: np.ndarray
    iso_pred: np.ndarray
    # prediction coverage
    coverage: dict

    @property
    def correct(self) -> np.ndarray:
        return self.ans == self.pred


def _predictions_for(keys, preds: Predictions, pred_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(prediction code of each question key, MISSING where the key has none; row of the key in
    ``preds`` or -1). Null keys have no prediction."""
    if len(keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    idx = np.asarray(pc.fill_null(pc.index_in(keys, value_set=preds.keys), -1).to_numpy(), np.int64)
    out = pred_codes[np.maximum(idx, 0)] if len(pred_codes) else np.zeros(len(idx), np.int64)
    return np.where(idx >= 0, out, MISSING), idx


def _encode(h: Hierarchies, preds: Predictions, examples: int = 5) -> _Encoded:
    nodes, edges, iso = h.nodes, h.edges, h.isolated
    vocab = _Vocab([nodes["answer"], iso["answer"], preds.values])

    # raw types -> banned / yes-no / collapsed id, decided once per distinct type
    all_types = pa.chunked_array([*nodes["type"].chunks, *iso["type"].chunks], type=pa.string())
    type_code, type_names = _codes(all_types)
    type_names = type_names.to_pylist()
    ctype_names = [t for t in QUESTION_TYPES if t != "Overall"]
    for t in type_names:
        if collapse(t) not in ctype_names:
            ctype_names.append(collapse(t))
    t_banned = np.array([t in BANNED_TYPES for t in type_names], bool)
    t_yesno = np.array([t in YES_NO_TYPES for t in type_names], bool)
    t_objeq = np.array([t == EQUALS_PARENT_TYPE for t in type_names], bool)
    t_ctype = np.array([ctype_names.index(collapse(t)) for t in type_names], np.int64)
    N = nodes.num_rows
    nt, it = type_code[:N], type_code[N:]

    video = np.asarray(h.hierarchy_video, np.int64)[nodes["hierarchy"].to_numpy()] if N else np.zeros(0, np.int64)
    text_id = nodes["text_id"].to_numpy() if N else np.zeros(0, np.int32)
    same_text = video * h.texts_per_video + text_id

    # predictions: each file's distinct keys are looked up once, nodes follow their key's row
    pred_codes = vocab.encode(preds.values)
    key_pred, key_row = _predictions_for(h.key_values, preds, pred_codes)
    pred = key_pred[h.node_key_row] if N else np.zeros(0, np.int64)
    pred_row = key_row[h.node_key_row] if N else np.zeros(0, np.int64)
    iso_pred, iso_pred_row = _predictions_for(iso["key"], preds, pred_codes)

    # edges -> compositions: a composition starts at each child in position 0
    e_parent = edges["parent_row"].to_numpy() if edges.num_rows else np.zeros(0, np.int64)
    e_child = edges["child_row"].to_numpy() if edges.num_rows else np.zeros(0, np.int64)
    position = edges["position"].to_numpy() if edges.num_rows else np.zeros(0, np.int32)
    rule_code, rule_names = _codes(edges["rule"])
    rule_names = rule_names.to_pylist()
    i_first = np.flatnonzero(position == 0)
    e_inst = np.cumsum(position == 0) - 1

    enc = _Encoded(
        h=h, vocab=vocab, ctype_names=ctype_names, rule_names=rule_names,
        hier=nodes["hierarchy"].to_numpy() if N else np.zeros(0, np.int32), same_text=same_text,
        text_order=np.argsort(same_text, kind="stable"),
        banned=t_banned[nt], yesno=t_yesno[nt], obj_equals=t_objeq[nt], ctype=t_ctype[nt],
        ans=vocab.encode(nodes["answer"]), pred=pred,
        is_parent=nodes["is_parent"].to_numpy(zero_copy_only=False) if N else np.zeros(0, bool),
        e_parent=e_parent, e_child=e_child, e_inst=e_inst,
        i_parent=e_parent[i_first], i_rule=rule_code[i_first],
        i_arity=(edges["arity"].to_numpy()[i_first] if edges.num_rows else np.zeros(0, np.int32)), i_first=i_first,
        iso_banned=t_banned[it], iso_ctype=t_ctype[it], iso_ans=vocab.encode(iso["answer"]), iso_pred=iso_pred,
        coverage={},
    )
    enc.coverage = _coverage(enc, preds, pred_row, iso_pred_row, examples)
    return enc


def _coverage(enc: _Encoded, preds: Predictions, pred_row: np.ndarray, iso_pred_row: np.ndarray,
              examples: int) -> dict:
    """Unknown prediction keys and scored questions without a prediction (counts + examples).

    pred_row / iso_pred_row: int64 [N] / [M], the predictions row of each question's key or -1.
    A prediction key is unknown when no question (banned or not, isolated or not) has it; a
    question is scored when it is not banned (some metric looks its prediction up).
    """
    h = enc.h
    P = len(preds.keys)
    hit = np.zeros(P + 1, bool)
    hit[pred_row] = True       # -1 lands in the spare last slot
    hit[iso_pred_row] = True
    unknown = np.flatnonzero(~hit[:P])
    rows = np.concatenate([pred_row[~enc.banned], iso_pred_row[~enc.iso_banned]])
    scored_found = np.zeros(P + 1, bool)
    scored_found[rows] = True
    missing_keys = pa.chunked_array([
        h.nodes["key"].filter(pa.array(~enc.banned & (pred_row < 0))),
        h.isolated["key"].filter(pa.array(~enc.iso_banned & (iso_pred_row < 0)))], type=pa.string())
    null_key = missing_keys.null_count
    missing_distinct = pc.unique(missing_keys.drop_null()) if len(missing_keys) else pa.array([], pa.string())
    missing = len(missing_distinct) + null_key
    return {
        "predictions": preds.entries,
        "distinct_prediction_keys": P,
        "duplicate_prediction_keys": preds.duplicates,
        "scored_questions": int(scored_found[:P].sum()) + missing,
        "unknown_keys": len(unknown),
        "unknown_examples": preds.keys.take(pa.array(unknown[:examples])).to_pylist(),
        "missing": missing,
        "missing_examples": missing_distinct[:examples].to_pylist(),
    }


# ============================================================================================
# small group-by helpers


def _first_rows(mask: np.ndarray, group: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Rows where ``mask`` holds and that are the first such row of their ``group`` (sorted).

    order: optional ``np.argsort(group, kind="stable")``, shared by several calls on one group.
    """
    if order is None:
        idx = np.flatnonzero(mask)
        if len(idx) == 0:
            return idx
        _, first = np.unique(group[idx], return_index=True)
        return np.sort(idx[first])
    rows = order[mask[order]]          # masked rows, grouped, each group in row order
    g = group[rows]
    start = np.ones(len(rows), bool)
    start[1:] = g[1:] != g[:-1]
    return np.sort(rows[start])


def _sum_by(group: np.ndarray, n: int, weights=None) -> np.ndarray:
    """int64 [n]: per group, the count (or the sum of bool / int ``weights``)."""
    if weights is None:
        return np.bincount(group, minlength=n).astype(np.int64)
    weights = np.asarray(weights)
    if weights.dtype == bool:
        return np.bincount(group[weights], minlength=n).astype(np.int64)
    return np.bincount(group, weights=weights.astype(np.float64), minlength=n).round().astype(np.int64)


def _score(correct, total):
    return None if not total else correct / total


def _pct(x):
    """A fraction as a percentage with 2 decimals, formatted like the official CSVs (``%.2f``)."""
    return None if x is None else float("%.2f" % (x * 100)) + 0.0


# ============================================================================================
# accuracy


def _accuracy(enc: _Encoded) -> dict:
    """Answer-normalized accuracy: {"types": {type: (score, answers, questions)}, "per_answer": rows}."""
    rows = _first_rows(~enc.banned & (enc.ans != NONE), enc.same_text, enc.text_order)
    iso = np.flatnonzero(~enc.iso_banned)  # isolated: no dedup, no None filter
    ctype = np.concatenate([enc.ctype[rows], enc.iso_ctype[iso]])
    ans = np.concatenate([enc.ans[rows], enc.iso_ans[iso]])
    ok = np.concatenate([enc.correct[rows], enc.iso_ans[iso] == enc.iso_pred[iso]])
    A = len(enc.vocab) + 1
    out, per_answer = {}, []

    def by_answer(group_of_row, name_of_group):
        pair = group_of_row * A + (ans + 1)
        uniq, inv = np.unique(pair, return_inverse=True)
        total = _sum_by(inv, len(uniq))
        corr = _sum_by(inv, len(uniq), ok)
        g = uniq // A
        acc = corr / np.maximum(total, 1)
        mean = _sum_by_float(g, acc)
        answers = np.bincount(g)
        questions = np.bincount(g, weights=total)
        for gi in np.flatnonzero(answers):
            out[name_of_group(gi)] = (mean[gi] / answers[gi], int(answers[gi]), int(questions[gi]))
        for u, t, c in zip(uniq.tolist(), total.tolist(), corr.tolist()):
            per_answer.append((name_of_group(u // A), enc.vocab.word(u % A - 1), t, c))

    by_answer(ctype, lambda g: enc.ctype_names[g])
    by_answer(np.zeros(len(ans), np.int64), lambda g: "Overall")
    return {"types": out, "per_answer": per_answer}


def _sum_by_float(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.bincount(group, weights=values, minlength=(int(group.max()) + 1) if len(group) else 0)


# ============================================================================================
# CA / RWR / RWR-n


def _ca_rwr(enc: _Encoded) -> dict:
    """{"by_composition"|"by_parent": {"ca"|"rwr": {name: (correct, total)}, "rwr_n": {name: {n: (c, t)}}}}."""
    N = len(enc.ans)
    parents = _first_rows(enc.is_parent & ~enc.banned & (enc.ans != NONE), enc.same_text, enc.text_order)
    chosen = np.zeros(N, bool)
    chosen[parents] = True
    node_ok = enc.correct
    child_valid = ~enc.banned & (enc.ans != NONE)
    e = np.flatnonzero(chosen[enc.e_parent]) if len(enc.e_parent) else np.zeros(0, np.int64)
    ec = enc.e_child[e]
    valid, ok = child_valid[ec], child_valid[ec] & node_ok[ec]

    # per (parent, rule): the children as listed
    I = len(enc.i_parent)
    inst_total = _sum_by(enc.e_inst[e], I, valid)
    inst_ok = _sum_by(enc.e_inst[e], I, ok)
    inst = np.flatnonzero(inst_total > 0)
    by_comp = _buckets(inst_total[inst], inst_ok[inst], node_ok[enc.i_parent[inst]],
                       enc.i_rule[inst], enc.rule_names, COMPOSITION_RULES)

    # per parent: children unioned by text over all rules
    pair = enc.e_parent[e] * max(N, 1) + ec
    _, first = np.unique(pair, return_index=True)
    pp = enc.e_parent[e][first]
    par_total = _sum_by(pp, N, valid[first])
    par_ok = _sum_by(pp, N, ok[first])
    par = np.flatnonzero(par_total > 0)
    by_parent = _buckets(par_total[par], par_ok[par], node_ok[par], enc.ctype[par], enc.ctype_names, QUESTION_TYPES)
    return {"by_composition": by_comp, "by_parent": by_parent}


def _buckets(total, n_ok, parent_ok, group, names, ordering) -> dict:
    """Parent accuracy in the ca / rwr / rwr-n buckets, per group name and "Overall"."""
    all_ok = n_ok == total
    wrong = total - n_ok
    G = len(names)

    def tally(mask, g):
        t = _sum_by(g[mask], G + 1)
        c = _sum_by(g[mask], G + 1, parent_ok[mask])
        return {(names[i] if i < G else "Overall"): (int(c[i]), int(t[i])) for i in np.flatnonzero(t)}

    def both(mask):
        d = tally(mask, group)
        allg = np.full(len(group), G)
        d.update(tally(mask, allg))
        return d

    out = {"ca": both(all_ok), "rwr": both(~all_ok), "rwr_n": {}}
    for n in np.unique(wrong[~all_ok]).tolist():
        out["rwr_n"][int(n)] = both(wrong == n)
    out["names"] = _ordered(ordering, list({**out["ca"], **out["rwr"]}))
    return out


def _ordered(ordering, present) -> list:
    """The official rows, then any other name found in the data (before "Overall")."""
    extra = [n for n in present if n not in ordering]
    base = [n for n in ordering if n != "Overall"]
    return base + extra + (["Overall"] if "Overall" in ordering else [])


# ============================================================================================
# internal consistency


def _consistency_checks(enc: _Encoded, inst_mask: np.ndarray, variant: str):
    """Fired consistency checks of the compositions in ``inst_mask``.

    variant "both": ``compute_ic.py`` (each rule checked in both directions);
    variant "single": ``ic_acc_correlation.py`` (one check per composition, an if / elif chain).
    Returns (composition index int64 [K], rule index into CONSISTENCY_RULES int64 [K], wrong bool [K]).
    """
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
    n_valid = _sum_by(enc.e_inst, I, valid)
    all_yes = _sum_by(enc.e_inst, I, valid & (cp != v.yes)) == 0
    one_no = _sum_by(enc.e_inst, I, valid & (cp == v.no)) > 0
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

    # Interaction / After / Before / While
    m = kind == IMPLIES
    emit(m & qy & has_valid, rule_yes, ~all_yes)
    if variant == "both":
        emit(m & one_no, rule_no, ~qn)
    else:
        emit(m & ~qy & one_no, rule_no, ~qn)

    # And / Between
    m = (kind == CONJUNCTION) & has_valid
    if variant == "both":
        emit(m & (qy | all_yes), rule_yes, ~(qy & all_yes))
        emit(m & (qn | one_no), rule_no, ~(qn & one_no))
    else:
        emit(m & qy, rule_yes, ~all_yes)
        emit(m & qn, rule_no, ~one_no)
        other = m & ~qy & ~qn
        emit(other & all_yes, rule_yes, True)
        emit(other & one_no, rule_no, True)

    # Xor: c1 but not c2
    m = (kind == XOR) & pair_ok
    pattern = (p1 == v.yes) & (p2 == v.no)
    _two_way(emit, m, qy, qn, pattern, rule_yes, rule_no, variant)

    # Equals under Object Equals parents
    m = (kind == EQUALS) & pair_ok
    inner = m & enc.is_parent[c1]
    same = (p1 == p2) & (p1 != MISSING)
    _two_way(emit, inner, qy, qn, same, rule_yes, rule_no, variant)
    leaf = m & ~enc.is_parent[c1]
    if (leaf & inst_mask).any():
        obj = _equals_objects(enc, c1, leaf & inst_mask)
        hit = p2 == obj                     # c2 names the object of c1's program
        y1 = p1 == v.yes
        if variant == "both":
            emit(leaf & (qy | hit), rule_yes, ~(qy & hit & y1))
            emit(leaf & (qn | ~hit | ~y1), rule_no, ~qn | hit)
        else:
            emit(leaf & qy, rule_yes, ~hit | ~y1)
            emit(leaf & qn, rule_no, hit)
            other = leaf & ~qy & ~qn
            emit(other & (~hit | ~y1), rule_no, True)
            emit(other & hit & y1, rule_yes, True)

    # Choose
    m = (kind == CHOOSE) & pair_ok
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

    if not segments:
        return empty
    idx = np.concatenate([s[0] for s in segments])
    rule = np.concatenate([s[1] for s in segments]).astype(np.int64)
    wrong = np.concatenate([s[2] for s in segments]).astype(bool)
    return idx, rule, wrong


def _two_way(emit, m, qy, qn, holds, rule_yes, rule_no, variant):
    """Parent = yes  <=>  ``holds`` (Xor pattern, non-leaf Equals), in the chosen variant."""
    if variant == "both":
        emit(m & (qy | holds), rule_yes, ~(qy & holds))
        emit(m & (qn | ~holds), rule_no, ~(qn & ~holds))
    else:
        emit(m & qy, rule_yes, ~holds)
        emit(m & qn, rule_no, holds)
        other = m & ~qy & ~qn
        emit(other & holds, rule_yes, True)
        emit(other & ~holds, rule_no, True)


def _rule_ids(rule_names: list, suffix: str) -> np.ndarray:
    """Per composition rule id (plus a trailing -1 slot), the index of "<rule> <suffix>" or -1."""
    out = [CONSISTENCY_RULES.index(f"{r} {suffix}") if f"{r} {suffix}" in CONSISTENCY_RULES else -1
           for r in rule_names]
    return np.array(out + [-1], np.int64)


def _equals_objects(enc: _Encoded, c1: np.ndarray, mask: np.ndarray) -> np.ndarray:
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


def _choose_object_hits(enc: _Encoded, mask: np.ndarray, q, c1, c2):
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


def _ic(enc: _Encoded) -> dict:
    """IC per rule, per composition and per parent type (``compute_ic.py``)."""
    parents = _first_rows(enc.is_parent & ~enc.banned, enc.same_text, enc.text_order)
    chosen = np.zeros(len(enc.ans), bool)
    chosen[parents] = True
    inst_mask = chosen[enc.i_parent] if len(enc.i_parent) else np.zeros(0, bool)
    inst, rule, wrong = _consistency_checks(enc, inst_mask, "both")
    R = len(CONSISTENCY_RULES)
    total = _sum_by(rule, R)
    n_wrong = _sum_by(rule, R, wrong)
    by_rule = {r: _score(total[i] - n_wrong[i], total[i]) for i, r in enumerate(CONSISTENCY_RULES)}

    by_comp = {}
    for comp in COMPOSITION_RULES:
        scores = [by_rule[r] for r in rules_of(comp)]
        by_comp[comp] = None if not scores or any(s is None for s in scores) else float(np.mean(scores))

    # per parent type: checks under parents of that type; a type is present once a parent of it was visited
    T = len(enc.ctype_names)
    ptype = enc.ctype[enc.i_parent[inst]]
    pt_total = _sum_by(ptype * R + rule, T * R).reshape(T, R)
    pt_wrong = _sum_by(ptype * R + rule, T * R, wrong).reshape(T, R)
    present = set(enc.ctype[parents].tolist())
    by_parent = {}
    for name in _ordered(QUESTION_TYPES, [enc.ctype_names[t] for t in sorted(present)]):
        t = enc.ctype_names.index(name) if name in enc.ctype_names else -1
        if t not in present or name not in PARENT_TO_RULES:
            by_parent[name] = None
            continue
        scores = [_score(pt_total[t, j] - pt_wrong[t, j], pt_total[t, j])
                  for comp in PARENT_TO_RULES[name] for j, r in enumerate(CONSISTENCY_RULES) if comp in r]
        by_parent[name] = None if not scores or any(s is None for s in scores) else float(np.mean(scores))
    return {"by_rule": by_rule, "by_composition": by_comp, "by_parent": by_parent,
            "totals": {r: int(total[i]) for i, r in enumerate(CONSISTENCY_RULES)},
            "wrong": {r: int(n_wrong[i]) for i, r in enumerate(CONSISTENCY_RULES)}}


def _ic_accuracy_correlation(enc: _Encoded) -> tuple[float | None, int]:
    """Pearson r between per-hierarchy accuracy and per-hierarchy IC (``ic_acc_correlation.py``)."""
    H = enc.h.num_hierarchies
    valid = ~enc.banned & (enc.ans != NONE)
    acc_total = _sum_by(enc.hier[valid], H)
    acc_ok = _sum_by(enc.hier[valid], H, enc.correct[valid])
    inst_mask = ~enc.banned[enc.i_parent] if len(enc.i_parent) else np.zeros(0, bool)
    inst, _, wrong = _consistency_checks(enc, inst_mask, "single")
    ih = enc.hier[enc.i_parent[inst]]
    ic_total = _sum_by(ih, H)
    ic_wrong = _sum_by(ih, H, wrong)
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


# ============================================================================================
# the whole evaluation


def evaluate_predictions(hierarchies, predictions, examples: int = 5) -> dict:
    """Every AGQA-Decomp metric of ``predictions`` on ``hierarchies``.

    hierarchies: a folder path or a :class:`Hierarchies`; predictions: a file path, a list in
    the official format, a ``{key: prediction}`` dict, or :class:`Predictions`.

    Returns the ``summary.json`` object: ``accuracy`` {type: pct}, ``ca`` / ``rwr`` / ``delta``
    {"by_composition": {rule: pct}, "by_parent": {type: pct}}, ``rwr_n`` {"by_composition": {rule:
    {"1": pct, ...}}, "by_parent": ...}, ``ic`` {"by_rule", "by_composition", "by_parent"},
    ``ic_acc_pearson_r``; plus ``counts`` (sample sizes behind each cell) and ``coverage``
    (predictions read, unknown keys, scored questions without a prediction, with examples).
    Percentages have 2 decimals; a cell without data is None.
    """
    h = as_hierarchies(hierarchies)
    preds = load_predictions(predictions)
    enc = _encode(h, preds, examples)
    acc = _accuracy(enc)
    carwr = _ca_rwr(enc)
    ic = _ic(enc)
    r, n_corr = _ic_accuracy_correlation(enc)

    acc_names = _ordered(QUESTION_TYPES, list(acc["types"]))
    summary: dict = {"accuracy": {t: _pct(acc["types"][t][0]) if t in acc["types"] else None for t in acc_names}}
    counts: dict = {"accuracy": {t: acc["types"].get(t, (None, 0, 0))[2] for t in acc_names},
                    "accuracy_answers": {t: acc["types"].get(t, (None, 0, 0))[1] for t in acc_names}}
    for metric in ("ca", "rwr", "delta", "rwr_n"):
        summary[metric] = {}
    for metric in ("ca", "rwr"):
        counts[metric] = {}
    for group in ("by_composition", "by_parent"):
        g = carwr[group]
        names = g["names"]
        ca = {n: _score(*g["ca"][n]) if n in g["ca"] else None for n in names}
        rwr = {n: _score(*g["rwr"][n]) if n in g["rwr"] else None for n in names}
        summary["ca"][group] = {n: _pct(ca[n]) for n in names}
        summary["rwr"][group] = {n: _pct(rwr[n]) for n in names}
        summary["delta"][group] = {n: None if ca[n] is None or rwr[n] is None else _pct(rwr[n] - ca[n]) for n in names}
        summary["rwr_n"][group] = {
            n: {str(k): _pct(_score(*g["rwr_n"][k][n])) if n in g["rwr_n"][k] else None for k in sorted(g["rwr_n"])}
            for n in names}
        counts["ca"][group] = {n: g["ca"].get(n, (0, 0))[1] for n in names}
        counts["rwr"][group] = {n: g["rwr"].get(n, (0, 0))[1] for n in names}
        counts.setdefault("rwr_n", {})[group] = {
            n: {str(k): g["rwr_n"][k].get(n, (0, 0))[1] for k in sorted(g["rwr_n"])} for n in names}
    summary["ic"] = {k: {n: _pct(s) for n, s in ic[k].items()} for k in ("by_rule", "by_composition", "by_parent")}
    summary["ic_acc_pearson_r"] = None if r is None else round(r, 4)
    counts["ic"] = {"fired": ic["totals"], "wrong": ic["wrong"]}
    counts["ic_acc_hierarchies"] = n_corr
    counts["accuracy_per_answer"] = [{"type": t, "answer": a, "total": n, "correct": k}
                                     for t, a, n, k in acc["per_answer"]]
    summary["counts"] = counts
    summary["coverage"] = enc.coverage
    return summary


# ============================================================================================
# reports


def _cell(x) -> str:
    return "N/A" if x is None else f"{x:.2f}"


def write_report(summary: dict, out: str | os.PathLike) -> list[Path]:
    """Write ``summary.json`` and the CSV tables into folder ``out``; returns the paths written.

    accuracy.csv    Question Type, Accuracy, Answers, Questions
    per_gt_acc.csv  Question Type, Answer, Total, Correct, Accuracy (raw counts per ground truth)
    ca.csv / rwr.csv  Grouping, Name, CA|RWR, Total
    rwr_n.csv       Grouping, Name, n, RWR-n, Total
    delta.csv       Grouping, Name, Delta
    ic.csv          Grouping, Name, IC, Fired, Wrong (Fired / Wrong for the per-rule rows)
    """
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TensorQAError(f"{out}: cannot create output folder ({e.strerror or e})") from None
    s, c = summary, summary["counts"]
    tables = {
        "accuracy.csv": (["Question Type", "Accuracy", "Answers", "Questions"],
                         [[t, _cell(v), c["accuracy_answers"][t], c["accuracy"][t]] for t, v in s["accuracy"].items()]),
        "per_gt_acc.csv": (["Question Type", "Answer", "Total", "Correct", "Accuracy"],
                           [[r["type"], "None" if r["answer"] is None else r["answer"], r["total"], r["correct"],
                             f"{100 * r['correct'] / r['total']:.2f}"] for r in c["accuracy_per_answer"]]),
    }
    for metric, col in (("ca", "CA"), ("rwr", "RWR")):
        tables[f"{metric}.csv"] = (["Grouping", "Name", col, "Total"],
                                   [[g, n, _cell(v), c[metric][g][n]] for g in ("by_composition", "by_parent")
                                    for n, v in s[metric][g].items()])
    tables["rwr_n.csv"] = (["Grouping", "Name", "n", "RWR-n", "Total"],
                           [[g, n, k, _cell(v), c["rwr_n"][g][n][k]] for g in ("by_composition", "by_parent")
                            for n, d in s["rwr_n"][g].items() for k, v in d.items()])
    tables["delta.csv"] = (["Grouping", "Name", "Delta"],
                           [[g, n, _cell(v)] for g in ("by_composition", "by_parent") for n, v in s["delta"][g].items()])
    ic_rows = [["by_rule", r, _cell(v), c["ic"]["fired"][r], c["ic"]["wrong"][r]] for r, v in s["ic"]["by_rule"].items()]
    ic_rows += [[g, n, _cell(v), "", ""] for g in ("by_composition", "by_parent") for n, v in s["ic"][g].items()]
    tables["ic.csv"] = (["Grouping", "Name", "IC", "Fired", "Wrong"], ic_rows)
    written = []
    try:
        for name, (header, rows) in tables.items():
            with open(out / name, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(header)
                w.writerows(rows)
            written.append(out / name)
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    except OSError as e:
        raise TensorQAError(f"{out}: cannot write the report ({e.strerror or e})") from None
    written.append(out / "summary.json")
    return written


def format_report(summary: dict) -> str:
    """Plain-text tables of a summary, for the terminal."""
    s, c = summary, summary["counts"]
    lines = []

    def table(title, header, rows):
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
        lines.append(title)
        lines.append(("  " + "  ".join(str(h).ljust(w) for h, w in zip(header, widths))).rstrip())
        for row in rows:
            lines.append(("  " + "  ".join(str(x).ljust(w) for x, w in zip(row, widths))).rstrip())
        lines.append("")

    table("Accuracy (mean over ground-truth answers, %)", ["Question type", "Acc", "Answers", "Questions"],
          [[t, _cell(v), c["accuracy_answers"][t], c["accuracy"][t]] for t, v in s["accuracy"].items()])
    for g, label in (("by_composition", "Composition rule"), ("by_parent", "Parent type")):
        table(f"CA / RWR / Delta {g.replace('_', ' ')} (%)", [label, "CA", "n", "RWR", "n", "Delta", "RWR-n"],
              [[n, _cell(s["ca"][g][n]), c["ca"][g][n], _cell(s["rwr"][g][n]), c["rwr"][g][n], _cell(s["delta"][g][n]),
                " ".join(f"{k}:{_cell(v)}" for k, v in s["rwr_n"][g][n].items() if v is not None)]
               for n in s["ca"][g]])
    table("IC per consistency rule (%)", ["Rule", "IC", "Fired", "Wrong"],
          [[r, _cell(v), c["ic"]["fired"][r], c["ic"]["wrong"][r]] for r, v in s["ic"]["by_rule"].items()])
    table("IC per composition rule (%)", ["Composition rule", "IC"], [[n, _cell(v)] for n, v in s["ic"]["by_composition"].items()])
    table("IC per parent type (%)", ["Parent type", "IC"], [[n, _cell(v)] for n, v in s["ic"]["by_parent"].items()])
    r = s["ic_acc_pearson_r"]
    lines.append(f"IC-accuracy Pearson r over {c['ic_acc_hierarchies']:,} hierarchies: {'N/A' if r is None else f'{r:.3f}'}")
    return "\n".join(lines)


def format_coverage(summary: dict) -> str:
    """One or a few lines on prediction coverage (unknown keys, missing predictions)."""
    v = summary["coverage"]
    lines = [f"predictions: {v['predictions']:,} read, {v['distinct_prediction_keys']:,} distinct keys; "
             f"{v['scored_questions']:,} scored questions"]
    if v["duplicate_prediction_keys"]:
        lines.append(f"  {v['duplicate_prediction_keys']:,} repeated keys (the last prediction of a key counts)")
    if v["unknown_keys"]:
        lines.append(f"  {v['unknown_keys']:,} prediction keys are not questions of these hierarchies, e.g. "
                     + ", ".join(map(repr, v["unknown_examples"])))
    if v["missing"]:
        lines.append(f"  {v['missing']:,} scored questions have no prediction (scored as wrong), e.g. "
                     + ", ".join(map(repr, v["missing_examples"])))
    return "\n".join(lines)
