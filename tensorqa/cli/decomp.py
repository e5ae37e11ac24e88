"""AGQA-Decomp commands: ``decompose``, ``evaluate``, ``baseline``."""

from __future__ import annotations

import argparse
import json
import sys
import time

from tensorqa.cli.commands import command
from tensorqa.errors import TensorQAError
from tensorqa.outputs import check_output_file, check_output_folder


def _decompose_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pool", help="a question pool (Parquet shards) from tensorqa generate, balance or split")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output folder: hierarchies/ (AGQA-Decomp's folder: <video_id>.json + isolated.json, "
                        "nothing else), parquet/ and decompose/ (report) beside it; built in "
                        "DIR.partial (a rerun resumes it) and renamed when complete")
    p.add_argument("--store", metavar="FILE", help="the scene store the pool was generated from "
                                                  "(default: the store the pool records, if any)")
    p.add_argument("--split", choices=("train", "test", "all"), default="all", help="questions of this split (default all)")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N videos of the pool")
    p.add_argument("--format", dest="fmt", choices=("agqa-json", "parquet", "both"), default="both",
                   help="AGQA-Decomp JSON, Parquet node / edge / DAG tables, or both (default)")
    p.add_argument("--semantics", choices=("agqa", "strict"), default="agqa",
                   help="the semantics the pool was generated with (default agqa)")
    p.add_argument("--workers", type=int, default=1, help="processes decomposing videos side by side (default 1)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


@command("decompose", "decompose a pool's questions into AGQA-Decomp DAGs of sub-questions with exact answers",
         _decompose_arguments)
def run_decompose(a: argparse.Namespace) -> int:
    from tensorqa.decomp.decompose import decompose, format_report
    from tensorqa.threads import set_torch_threads

    set_torch_threads()  # the workers: decompose sets theirs

    check_output_folder(a.out)
    report = decompose(a.pool, a.out, store=a.store, split=a.split, limit=a.limit, fmt=a.fmt,
                       semantics=a.semantics, progress=not a.quiet, workers=a.workers)
    print(json.dumps(report, indent=1) if a.json else format_report(report))
    print(f"wrote {a.out}", file=sys.stderr if a.json else sys.stdout)
    return 0


def _evaluate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hierarchies", required=True, metavar="DIR", help="AGQA-Decomp folder: <video_id>.json files "
                   "(+ isolated.json), or a tensorqa decompose output (its hierarchies/)")
    p.add_argument("--predictions", required=True, metavar="FILE",
                   help="JSON: the official [{csv_q_id, prediction}, ...] list or a {key: prediction} map")
    p.add_argument("--out", metavar="DIR", help="write summary.json and the CSV tables here")
    p.add_argument("--json", action="store_true", help="print summary.json instead of tables")


@command("evaluate", "score predictions on AGQA-Decomp hierarchies: accuracy, CA, RWR, Delta, IC", _evaluate_arguments)
def run_evaluate(a: argparse.Namespace) -> int:
    from tensorqa.decomp.hierarchies import load_hierarchies
    from tensorqa.decomp.metrics import evaluate_predictions, format_coverage, format_report, load_predictions, write_report

    if a.out:
        check_output_folder(a.out)
    t0 = time.perf_counter()
    h = load_hierarchies(a.hierarchies)
    preds = load_predictions(a.predictions)
    t1 = time.perf_counter()
    summary = evaluate_predictions(h, preds)
    t2 = time.perf_counter()
    print(json.dumps(summary, indent=1) if a.json else format_report(summary))
    print(format_coverage(summary), file=sys.stderr if a.json else sys.stdout)
    if a.out:
        write_report(summary, a.out)
        print(f"wrote {a.out}/summary.json and CSV tables", file=sys.stderr if a.json else sys.stdout)
    print(f"{h.nodes.num_rows:,} sub-questions in {h.num_hierarchies:,} hierarchies, {h.isolated.num_rows:,} isolated; "
          f"read {t1 - t0:.1f} s, scored {t2 - t1:.1f} s", file=sys.stderr if a.json else sys.stdout)
    return 0


def _baseline_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--hierarchies", metavar="DIR", help="AGQA-Decomp folder: predict each question key, by collapsed type")
    src.add_argument("--pool", metavar="DIR", help="question pool (Parquet): predict each question_id, by template")
    p.add_argument("--kind", required=True, choices=["most-likely", "random"], help="most frequent answer, or a uniform seen answer")
    p.add_argument("--out", required=True, metavar="FILE", help="predictions JSON in the official list format")
    p.add_argument("--seed", type=int, default=0, help="seed of --kind random (default 0)")
    p.add_argument("--fit", metavar="DIR", help="with --hierarchies: take answer statistics from these (train) hierarchies")
    p.add_argument("--fit-split", metavar="SPLIT", help="with --pool: take answer statistics from this split only (e.g. train)")


@command("baseline", "write most-likely / random answer predictions (a reference for evaluate)", _baseline_arguments)
def run_baseline(a: argparse.Namespace) -> int:
    from tensorqa.decomp.baseline import baseline_predictions, pool_baseline_predictions, write_predictions

    check_output_file(a.out)
    if a.seed < 0:
        raise TensorQAError(f"--seed must be at least 0, got {a.seed}")
    if a.pool:
        if a.fit:
            raise TensorQAError("--fit goes with --hierarchies; with --pool use --fit-split")
        preds = pool_baseline_predictions(a.pool, a.kind, seed=a.seed, fit_split=a.fit_split)
    else:
        if a.fit_split:
            raise TensorQAError("--fit-split goes with --pool; with --hierarchies use --fit DIR")
        preds = baseline_predictions(a.hierarchies, a.kind, seed=a.seed, fit=a.fit)
    out = write_predictions(preds, a.out)
    print(f"wrote {out}: {len(preds.keys):,} {a.kind} predictions")
    if a.kind == "most-likely" and not (a.fit or a.fit_split):
        print("note: answer statistics come from the predicted questions themselves; for a fair reference "
              "fit them on train (--fit DIR / --fit-split train)")
    return 0
