"""AGQA-Decomp metric reports: a summary as ``summary.json`` and CSV tables, or as plain-text tables
and coverage lines for the terminal.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from tensorqa.errors import TensorQAError
from tensorqa.outputs import atomic_file, output_folder, write_atomic


def _cell(x) -> str:
    return "N/A" if x is None else f"{x:.2f}"


def write_report(summary: dict, out: str | os.PathLike) -> list[Path]:
    """Write ``summary.json`` and the CSV tables (accuracy, per_gt_acc, ca, rwr, rwr_n, delta, ic: one
    row per type, composition or rule) into folder ``out``; returns the paths written."""
    out = Path(out)
    try:
        output_folder(out)  # not a planted link
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
    for name, (header, rows) in tables.items():  # each file whole or not at all, a full disk named
        with atomic_file(out / name, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
        written.append(out / name)
    write_atomic(out / "summary.json", json.dumps(summary, indent=1) + "\n")
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
