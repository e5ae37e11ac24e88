"""Hierarchies and predictions as integer columns for the AGQA-Decomp metrics: one shared string
vocabulary (answers, predictions, the rules' fixed words), the per-node / per-edge / per-composition
code arrays (:class:`Encoded`), prediction coverage, and the numpy group-by helpers every metric uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.decomp.constants import BANNED_TYPES, EQUALS_PARENT_TYPE, QUESTION_TYPES, YES_NO_TYPES, collapse
from tensorqa.decomp.hierarchies import Hierarchies
from tensorqa.decomp.predictions import MISSING, NONE, Predictions


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


def dictionary_codes(array) -> tuple[np.ndarray, pa.Array]:
    """Factorize a string column: (int64 codes, pa.Array of the distinct values)."""
    if len(array) == 0:
        return np.zeros(0, np.int64), pa.array([], pa.string())
    uniq = pc.unique(array)
    return np.asarray(pc.index_in(array, value_set=uniq).to_numpy(), np.int64), uniq


@dataclass
class Encoded:
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


def encode_hierarchies(h: Hierarchies, preds: Predictions, examples: int = 5) -> Encoded:
    nodes, edges, iso = h.nodes, h.edges, h.isolated
    vocab = _Vocab([nodes["answer"], iso["answer"], preds.values])

    # raw types -> banned / yes-no / collapsed id, decided once per distinct type
    all_types = pa.chunked_array([*nodes["type"].chunks, *iso["type"].chunks], type=pa.string())
    type_code, type_names = dictionary_codes(all_types)
    type_names = type_names.to_pylist()
    ctype_names = list(dict.fromkeys([t for t in QUESTION_TYPES if t != "Overall"] + [collapse(t) for t in type_names]))
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
    e_parent, e_child, position = (edges[c].to_numpy() for c in ("parent_row", "child_row", "position"))
    rule_code, rule_names = dictionary_codes(edges["rule"])
    rule_names = rule_names.to_pylist()
    i_first = np.flatnonzero(position == 0)
    e_inst = np.cumsum(position == 0) - 1

    enc = Encoded(
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


def _coverage(enc: Encoded, preds: Predictions, pred_row: np.ndarray, iso_pred_row: np.ndarray,
              examples: int) -> dict:
    """Unknown prediction keys (no question has them) and scored (non-banned) questions without a
    prediction, counts and examples; pred_row / iso_pred_row: int64 [N] / [M], -1 for none."""
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


# -- small group-by helpers -------------------------------------------------------------------------
def first_rows(mask: np.ndarray, group: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
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


def sum_by(group: np.ndarray, n: int, weights=None) -> np.ndarray:
    """int64 [n]: per group, the count (or the sum of bool / int ``weights``)."""
    if weights is None:
        return np.bincount(group, minlength=n).astype(np.int64)
    weights = np.asarray(weights)
    if weights.dtype == bool:
        return np.bincount(group[weights], minlength=n).astype(np.int64)
    return np.bincount(group, weights=weights.astype(np.float64), minlength=n).round().astype(np.int64)


def score(correct, total):
    return None if not total else correct / total


def percent(x):
    """A fraction as a percentage with 2 decimals, formatted like the official CSVs (``%.2f``)."""
    return None if x is None else float("%.2f" % (x * 100)) + 0.0


def ordered(ordering, present) -> list:
    """The official rows, then any other name found in the data (before "Overall")."""
    extra = [n for n in present if n not in ordering]
    base = [n for n in ordering if n != "Overall"]
    return base + extra + (["Overall"] if "Overall" in ordering else [])
