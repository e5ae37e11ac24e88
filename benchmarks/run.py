"""End-to-end throughput: pack -> generate, per stage, with peak memory and the reference ratio.

    python benchmarks/run.py --videos 9601                 # pack the default data, then generate
    python benchmarks/run.py --store default.h5            # an existing store
    python benchmarks/run.py --scaling 1000 4000 9601 40000  # how cost grows with the videos

Prints videos/s and questions/s for each stage (grid evaluation, validity masks, record
building, text rendering, writing) and end to end, peak RSS, and the ratio of grid evaluation to
the scalar reference executor measured in the same run (programs answered per second).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

from tensorqa.generate import generate
from tensorqa.pack import pack_default
from tensorqa.reference import run_program
from tensorqa.store import open_store
from tensorqa.writers import read_pool

AGQA_QUESTIONS_PER_CORE_SECOND = 6000  # AGQA's own generator: ~192M questions in ~9 CPU-hours


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def reference_rate(store: Path, pool: Path, n: int = 2000, seed: int = 0) -> tuple[float, int]:
    """Programs answered per second by the scalar executor on a sample of the pool's records."""
    rows = read_pool(pool, columns=["video_id", "program", "answer"]).to_pylist()
    sample = random.Random(seed).sample(rows, min(n, len(rows)))
    with open_store(store) as s:
        scenes = {v: s.scene(v) for v in {r["video_id"] for r in sample}}
    t0 = time.perf_counter()
    wrong = sum(run_program(r["program"], scenes[r["video_id"]]) != r["answer"] for r in sample)
    return len(sample) / (time.perf_counter() - t0), wrong


def run_once(store: Path, out: Path, batch_videos: int, device: str, reference_sample: int) -> dict:
    t0 = time.perf_counter()
    stats = generate(store, out, batch_videos=batch_videos, device=device, progress=False)
    wall = time.perf_counter() - t0
    q, v = stats["questions"], stats["videos"]
    stages = {k: stats[k] for k in ("grid", "masks", "records", "render", "write")}
    result = {"videos": v, "questions": q, "seconds": round(wall, 2), "questions_per_s": round(q / wall),
              "videos_per_s": round(v / wall, 1), "stages": {k: {"seconds": s, "questions_per_s": round(q / max(s, 1e-9))}
                                                             for k, s in stages.items()},
              "peak_rss_gib": round(peak_rss_gib(), 2), "per_template": stats["per_template"]}
    if reference_sample:
        ref_rate, wrong = reference_rate(store, out, reference_sample)
        grid_rate = q / max(stages["grid"] + stages["masks"], 1e-9)
        result.update(reference_programs_per_s=round(ref_rate, 1), reference_disagreements=wrong,
                      grid_vs_reference=round(grid_rate / ref_rate))
    result["vs_agqa_generator_per_core"] = round(result["questions_per_s"] / AGQA_QUESTIONS_PER_CORE_SECOND, 1)
    return result


def print_result(r: dict) -> None:
    print(f"videos {r['videos']:,}  questions {r['questions']:,}  wall {r['seconds']:.1f} s  "
          f"{r['questions_per_s']:,} questions/s  {r['videos_per_s']} videos/s  peak RSS {r['peak_rss_gib']} GiB")
    for k, s in r["stages"].items():
        print(f"  {k:8s} {s['seconds']:8.2f} s  {s['questions_per_s']:>12,} questions/s")
    if "grid_vs_reference" in r:
        print(f"  scalar reference executor: {r['reference_programs_per_s']:,} programs/s "
              f"({r['reference_disagreements']} disagreements); grid evaluation + masks is {r['grid_vs_reference']:,}x faster")
    print(f"  vs AGQA's generator (~{AGQA_QUESTIONS_PER_CORE_SECOND:,} questions/s per core): {r['vs_agqa_generator_per_core']}x")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", type=Path)
    p.add_argument("--videos", type=int, default=1000, help="pack this many default videos when no --store")
    p.add_argument("--scaling", type=int, nargs="+", help="run over default stores of these sizes")
    p.add_argument("--batch-videos", type=int, default=256)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--reference-sample", type=int, default=1000, help="records re-run by the scalar executor (0: skip)")
    p.add_argument("--json", type=Path, help="also write the results here")
    a = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="tensorqa-bench-"))
    results = {"machine": f"{platform.node()} {platform.machine()} {torch.get_num_threads()} threads",
               "device": a.device, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}
    try:
        sizes = a.scaling or [None]
        runs = []
        for n in sizes:
            store = a.store
            if store is None or n is not None:
                store = tmp / f"default-{n or a.videos}.h5"
                t0 = time.perf_counter()
                pack_default(store, videos=n or a.videos, progress=False)
                print(f"pack {n or a.videos:,} videos: {time.perf_counter() - t0:.1f} s")
            out = tmp / f"pool-{store.stem}"
            r = run_once(store, out, a.batch_videos, a.device, a.reference_sample if n in (None, sizes[0]) else 0)
            print_result(r)
            runs.append(r)
            shutil.rmtree(out, ignore_errors=True)
        results["runs"] = runs
        if a.json:
            a.json.write_text(json.dumps(results, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
