"""AGQA-Decomp metrics: every metric of a set of predictions on a set of hierarchies in one summary, with the
meaning of the official evaluation (``agqa_decomp_evaluation/``; docs/reference/agqa.md §2.7). Where the
official scripts would raise, this reports instead (docs/benchmarks/agqa-decomp.md, "Evaluate")."""

from __future__ import annotations

from tensorqa.decomp.accuracy import accuracy_by_type, ca_rwr
from tensorqa.decomp.consistency import internal_consistency, ic_accuracy_correlation
from tensorqa.decomp.constants import QUESTION_TYPES
from tensorqa.decomp.encoding import encode_hierarchies, ordered, percent, score
from tensorqa.decomp.hierarchies import as_hierarchies
from tensorqa.decomp.predictions import MISSING, NONE, Predictions, load_predictions
from tensorqa.decomp.reports import format_coverage, format_report, write_report

__all__ = ["Predictions", "load_predictions", "evaluate_predictions", "write_report", "format_report",
           "format_coverage", "NONE", "MISSING"]


def evaluate_predictions(hierarchies, predictions, examples: int = 5) -> dict:
    """Every AGQA-Decomp metric of ``predictions`` (a file, the official list, a ``{key: prediction}``
    dict or :class:`Predictions`) on ``hierarchies`` (a folder or :class:`Hierarchies`): the
    ``summary.json`` object (``accuracy``, ``ca`` / ``rwr`` / ``delta`` / ``rwr_n`` by composition and by
    parent, ``ic``, ``ic_acc_pearson_r``, the ``counts`` behind each cell and the predictions'
    ``coverage``); percentages with 2 decimals, None for a cell without data."""
    enc = encode_hierarchies(as_hierarchies(hierarchies), load_predictions(predictions), examples)
    acc, carwr, ic, (r, n_corr) = accuracy_by_type(enc), ca_rwr(enc), internal_consistency(enc), \
        ic_accuracy_correlation(enc)
    types = acc["types"]
    names = ordered(QUESTION_TYPES, list(types))
    summary: dict = {"accuracy": {t: percent(types[t][0]) if t in types else None for t in names},
                     "ca": {}, "rwr": {}, "delta": {}, "rwr_n": {}}
    counts: dict = {"accuracy": {t: types.get(t, (None, 0, 0))[2] for t in names},
                    "accuracy_answers": {t: types.get(t, (None, 0, 0))[1] for t in names}, "ca": {}, "rwr": {},
                    "rwr_n": {}}
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
        counts["rwr_n"][group] = {
            n: {str(k): g["rwr_n"][k].get(n, (0, 0))[1] for k in sorted(g["rwr_n"])} for n in names}
    summary["ic"] = {k: {n: percent(s) for n, s in ic[k].items()} for k in ("by_rule", "by_composition", "by_parent")}
    summary["ic_acc_pearson_r"] = None if r is None else round(r, 4)
    counts.update(ic={"fired": ic["totals"], "wrong": ic["wrong"]}, ic_acc_hierarchies=n_corr,
                  accuracy_per_answer=[{"type": t, "answer": a, "total": n, "correct": k}
                                       for t, a, n, k in acc["per_answer"]])
    return {**summary, "counts": counts, "coverage": enc.coverage}
