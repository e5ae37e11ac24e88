"""Decompose a balanced pool's test split and check its ground truth with the official metrics.

    python benchmarks/bench_decompose.py                      # 1,000 default videos under /tmp/decomp_work/bench
    python benchmarks/bench_decompose.py --videos 9601        # the whole default dataset (~6 min to generate, ~5 GB)

Steps (each skipped when its output exists in ``--work``): ``tensorqa pack --videos N`` ->
``generate`` -> ``balance`` -> ``split`` -> ``decompose --split test`` (timed) -> ``evaluate`` with
every question's own answer as its prediction. Prints the number of DAGs, sub-questions per DAG
(AGQA-Decomp: 11.49), the composition-rule distribution, the compositions left out, the
decomposition time, and accuracy / IC of the ground truth (every fired rule must score 100%).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def tensorqa(*args) -> float:
    t0 = time.perf_counter()
    print("$ tensorqa " + " ".join(map(str, args)), flush=True)
    r = subprocess.run([sys.executable, "-m", "tensorqa.cli", *map(str, args)], check=False, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"tensorqa {args[0]} failed:\n{r.stderr}")
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--videos", type=int, default=1000, help="default-dataset videos to pack (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default="/tmp/decomp_work/bench", help="scratch folder (reused between runs)")
    p.add_argument("--split", default="test", choices=("train", "test", "all"))
    a = p.parse_args()
    work = Path(a.work) / f"v{a.videos}-s{a.seed}"
    work.mkdir(parents=True, exist_ok=True)
    store, pool, bal, split, dags = (work / n for n in ("store.h5", "pool", "balanced", "split", f"dags-{a.split}"))
    if not store.exists():
        tensorqa("pack", "--videos", a.videos, "--seed", a.seed, "--out", store, "--quiet")
    if not (pool / "README.md").exists():
        print(f"  generate: {tensorqa('generate', store, '--out', pool, '--quiet'):.1f} s")
    if not (bal / "README.md").exists():
        tensorqa("balance", pool, "--out", bal, "--quiet")
    if not (split / "README.md").exists():
        tensorqa("split", bal, "--out", split, "--quiet")
    if not dags.exists():
        wall = tensorqa("decompose", split, "--out", dags, "--store", store, "--split", a.split, "--quiet")
        print(f"  decompose wall time (process start included): {wall:.1f} s")
    report = json.loads((dags / "decompose/report.json").read_text())

    from tensorqa.decomp import evaluate_predictions, ground_truth_predictions, load_hierarchies

    t0 = time.perf_counter()
    h = load_hierarchies(dags)
    s = evaluate_predictions(h, ground_truth_predictions(h))
    t_eval = time.perf_counter() - t0

    print(f"\n{a.split} split of the balanced pool of {a.videos:,} default videos (seed {a.seed}): "
          f"{report['videos']:,} videos, {report['questions']:,} questions")
    print(f"DAGs: {report['dags']:,}; isolated questions: {report['isolated']:,}")
    print(f"sub-questions per DAG: {report['nodes_per_dag']:.2f} counting the question itself, "
          f"{report['subquestions_per_dag']:.2f} without (AGQA-Decomp: 11.49 per graph)")
    print(f"distinct sub-questions (per video): {report['distinct_subquestions']:,}")
    print(f"decomposition: {report['seconds']:.1f} s wall, {report['cpu_seconds']:.1f} s CPU in the command "
          f"({report['questions'] / max(report['cpu_seconds'], 1e-9):,.0f} questions per CPU second, one process)")
    print("composition rules (compositions summed over DAGs):")
    for rule, v in report["rules"].items():
        print(f"  {rule:15s} {v['count']:>10,}  {100 * v['share']:5.1f}%")
    print("fallback children:", report["fallbacks"] or "none")
    print("left out (distinct compositions, per video):", report["left_out"] or "none")
    fired, wrong = s["counts"]["ic"]["fired"], s["counts"]["ic"]["wrong"]
    print(f"\nground truth as predictions (evaluate, {t_eval:.1f} s): accuracy Overall {s['accuracy']['Overall']}")
    print("  IC per rule: " + ", ".join(f"{r} {v} ({fired[r]:,})" for r, v in s["ic"]["by_rule"].items()))
    print(f"  IC Overall {s['ic']['by_composition']['Overall']}; wrong checks: {sum(wrong.values())}")
    bad = [r for r, v in s["ic"]["by_rule"].items() if v not in (100.0, None)]
    if bad or s["accuracy"]["Overall"] != 100.0:
        sys.exit(f"ground truth is not consistent: {bad}")


if __name__ == "__main__":
    main()
