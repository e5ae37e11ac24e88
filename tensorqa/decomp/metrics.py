"""AGQA-Decomp metrics: every metric of a set of predictions on a set of hierarchies, in one summary
(answer-normalized accuracy, CA / RWR / RWR-n / Delta, IC and its correlation with accuracy), with
the meaning of the official evaluation code (madeleinegrunde/AGQA_baselines_code
``agqa_decomp_evaluation/``; ``docs/reference/agqa.md`` §2.7).

The official scripts walk every question in Python; here every metric is a handful of numpy
group-bys over the flat tables of :mod:`tensorqa.decomp.hierarchies`, by family:
:mod:`~tensorqa.decomp.predictions` (reading predictions), :mod:`~tensorqa.decomp.encoding`
(strings -> integer codes once, group-by helpers), :mod:`~tensorqa.decomp.accuracy` (accuracy,
CA / RWR / RWR-n), :mod:`~tensorqa.decomp.consistency` (IC, IC-accuracy correlation) and
:mod:`~tensorqa.decomp.reports` (summary files and tables).

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

from tensorqa.decomp.accuracy import accuracy_by_type, ca_rwr
from tensorqa.decomp.consistency import internal_consistency, ic_accuracy_correlation
from tensorqa.decomp.constants import QUESTION_TYPES
from tensorqa.decomp.encoding import dictionary_codes, encode_hierarchies, first_rows, ordered, percent, score  # noqa: F401 (dictionary_codes, first_rows: re-exported)
from tensorqa.decomp.hierarchies import as_hierarchies
from tensorqa.decomp.predictions import MISSING, NONE, Predictions, load_predictions
from tensorqa.decomp.reports import format_coverage, format_report, write_report

__all__ = ["Predictions", "load_predictions", "evaluate_predictions", "write_report", "format_report",
           "format_coverage", "NONE", "MISSING"]


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
    enc = encode_hierarchies(h, preds, examples)
    acc = accuracy_by_type(enc)
    carwr = ca_rwr(enc)
    ic = internal_consistency(enc)
    r, n_corr = ic_accuracy_correlation(enc)

    acc_names = ordered(QUESTION_TYPES, list(acc["types"]))
    summary: dict = {"accuracy": {t: percent(acc["types"][t][0]) if t in acc["types"] else None for t in acc_names}}
    counts: dict = {"accuracy": {t: acc["types"].get(t, (None, 0, 0))[2] for t in acc_names},
                    "accuracy_answers": {t: acc["types"].get(t, (None, 0, 0))[1] for t in acc_names}}
    for metric in ("ca", "rwr", "delta", "rwr_n"):
        summary[metric] = {}
    for metric in ("ca", "rwr"):
        counts[metric] = {}
    for group in ("by_composition", "by_parent"):
        g = carwr[group]
        names = g["names"]
        ca = {n: score(*g["ca"][n]) if n in g["ca"] else None for n in names}
        rwr = {n: score(*g["rwr"][n]) if n in g["rwr"] else None for n in names}
        summary["ca"][group] = {n: percent(ca[n]) for n in names}
        summary["rwr"][group] = {n: percent(rwr[n]) for n in names}
        summary["delta"][group] = {n: None if ca[n] is None or rwr[n] is None else percent(rwr[n] - ca[n]) for n in names}
        summary["rwr_n"][group] = {
            n: {str(k): percent(score(*g["rwr_n"][k][n])) if n in g["rwr_n"][k] else None for k in sorted(g["rwr_n"])}
            for n in names}
        counts["ca"][group] = {n: g["ca"].get(n, (0, 0))[1] for n in names}
        counts["rwr"][group] = {n: g["rwr"].get(n, (0, 0))[1] for n in names}
        counts.setdefault("rwr_n", {})[group] = {
            n: {str(k): g["rwr_n"][k].get(n, (0, 0))[1] for k in sorted(g["rwr_n"])} for n in names}
    summary["ic"] = {k: {n: percent(s) for n, s in ic[k].items()} for k in ("by_rule", "by_composition", "by_parent")}
    summary["ic_acc_pearson_r"] = None if r is None else round(r, 4)
    counts["ic"] = {"fired": ic["totals"], "wrong": ic["wrong"]}
    counts["ic_acc_hierarchies"] = n_corr
    counts["accuracy_per_answer"] = [{"type": t, "answer": a, "total": n, "correct": k}
                                     for t, a, n, k in acc["per_answer"]]
    summary["counts"] = counts
    summary["coverage"] = enc.coverage
    return summary
