"""How the cost of ``tensorqa generate`` grows with the number of videos (it should be linear).

    python benchmarks/scaling.py                                  # 1,000 / 4,000 / 9,601 / 40,000 videos
    python benchmarks/scaling.py --sizes 1000 4000 --threads 1 --json scaling.json
    python benchmarks/scaling.py --stages-only --device cuda      # every stage but the writer

For each size N: pack the embedded default dataset with N videos (``tensorqa.scenes.pack.pack_default``,
seed ``--seed``; video i depends only on the seed and i, so the sizes share their first videos)
into a temporary store, then measure one generation of it end to end with ``benchmarks/run.py``
in a fresh process, so that each size gets its own peak RSS and starts from the same allocator
state. Prints a table (videos, questions, wall and CPU seconds, questions/s, seconds per 1,000
videos, questions per video, peak RSS, pack seconds) and least-squares lines seconds = slope *
videos + intercept, for wall and CPU seconds, with their R^2. CPU seconds (all threads of the
measuring process) barely move when other jobs share the machine; wall seconds do.
Stores and pools are written under a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tensorqa.scenes.pack import pack_default

HERE = Path(__file__).resolve().parent
DEFAULT_SIZES = (1000, 4000, 9601, 40000)


def linear_fit(x, y) -> dict:
    """Least-squares ``y = slope * x + intercept`` and its coefficient of determination."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    total = ((y - y.mean()) ** 2).sum()
    r2 = 1.0 - (resid**2).sum() / total if total > 0 else 1.0
    return {"slope": float(slope), "intercept": float(intercept), "r2": float(r2), "points": len(x)}


def measure(store: Path, json_out: Path, args) -> dict:
    """One ``run.py`` measurement of ``store`` in a child process; returns its JSON results."""
    cmd = [sys.executable, str(HERE / "run.py"), "--store", str(store), "--json", str(json_out),
           "--device", args.device, "--kernels", args.kernels, "--reference-sample", "0", "--ratio-programs", "0"]
    if args.batch_videos:
        cmd += ["--batch-videos", str(args.batch_videos)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if args.stages_only:
        cmd.append("--stages-only")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(json_out.parent)}  # pools go beside the stores
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    for line in r.stdout.splitlines():
        print("    " + line)
    if r.returncode != 0:
        raise SystemExit(f"scaling.py: run.py failed on {store} (exit {r.returncode}): {r.stderr.strip()[-2000:]}")
    return json.loads(json_out.read_text())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), help="numbers of videos")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic videos")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:i]")
    p.add_argument("--batch-videos", type=int, help="videos per block (default: generate's)")
    p.add_argument("--threads", type=int, help="torch CPU threads of each measurement")
    p.add_argument("--kernels", choices=("on", "off", "auto"), default="auto")
    p.add_argument("--stages-only", action="store_true", help="run every stage but the writer; write nothing")
    p.add_argument("--json", type=Path, help="also write the table and the fit here (JSON)")
    args = p.parse_args(argv)
    if any(n < 1 for n in args.sizes):
        p.error("--sizes must be positive")
    if len(set(args.sizes)) < 2:
        p.error("--sizes needs at least two different sizes for a fit")

    tmp = Path(tempfile.mkdtemp(prefix="tensorqa-scaling-"))
    rows = []
    try:
        for n in sorted(args.sizes):
            store = tmp / f"default-{n}.h5"
            t0 = time.perf_counter()
            pack_default(store, videos=n, seed=args.seed, progress=False)
            pack_s = time.perf_counter() - t0
            print(f"{n:,} videos: packed in {pack_s:.1f} s; generating ...", flush=True)
            r = measure(store, tmp / f"run-{n}.json", args)
            store.unlink()
            rows.append({"videos": r["videos"], "questions": r["questions"], "seconds": r["seconds"],
                         "cpu_seconds": r["cpu_seconds"],
                         "questions_per_s": r["questions_per_s"], "seconds_per_1k_videos": round(1000 * r["seconds"] / n, 2),
                         "questions_per_video": round(r["questions"] / n, 1), "peak_rss_gib": r["peak_rss_gib"],
                         "peak_cuda_gib": r.get("peak_cuda_gib"), "pack_seconds": round(pack_s, 2),
                         "stages": {k: s["seconds"] for k, s in r["stages"].items()}})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    what = "every stage but the writer" if args.stages_only else "end to end, Parquet written"
    print(f"\ngenerate, {what}; device {args.device}; threads {args.threads or 'default'}")
    print(f"{'videos':>8} {'questions':>12} {'seconds':>9} {'CPU s':>9} {'questions/s':>12} {'s / 1K videos':>14} "
          f"{'q / video':>10} {'peak RSS GiB':>13} {'pack s':>8}")
    for r in rows:
        print(f"{r['videos']:>8,} {r['questions']:>12,} {r['seconds']:>9.1f} {r['cpu_seconds']:>9.1f} "
              f"{r['questions_per_s']:>12,} {r['seconds_per_1k_videos']:>14.2f} {r['questions_per_video']:>10.1f} "
              f"{r['peak_rss_gib']:>13.2f} {r['pack_seconds']:>8.1f}")
    videos = [r["videos"] for r in rows]
    fit = {"wall": linear_fit(videos, [r["seconds"] for r in rows]),
           "cpu": linear_fit(videos, [r["cpu_seconds"] for r in rows])}
    note = " (two sizes: a line through two points always fits)" if len(rows) == 2 else ""
    for what, f in fit.items():
        sign = "+" if f["intercept"] >= 0 else "-"
        print(f"fit, {what} seconds = {f['slope'] * 1000:.3f} s per 1K videos * (videos / 1000) {sign} "
              f"{abs(f['intercept']):.2f} s; R^2 = {f['r2']:.4f}{note}")
    if args.json:
        args.json.write_text(json.dumps({"device": args.device, "threads": args.threads, "stages_only": args.stages_only,
                                         "seed": args.seed, "date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows,
                                         "fit": fit}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
