"""CLEVR questions/s on the embedded sampler's scenes (CPU, one thread by default).

    OMP_NUM_THREADS=1 python benchmarks/clevr_throughput.py --scenes 1000 10000 [--format parquet] \
        [--device cuda] [--json OUT.json]

Packs N seeded scenes, then times ``tensorqa.clevr.generate`` (CLEVR 1.0's 90 templates, CLEVR's
defaults: 1 instance per template, 10 templates per image) end to end: store read, grid
evaluation, bookkeeping, text, records and the write. Prints one JSON line per size.

``startup_seconds``: a first run on 10 scenes in the same process, which pays the one-time costs
(the compiled engine's machine code loaded from numba's cache, template loading); ``seconds``: the
median of ``--repeat`` runs on N scenes after it (steady state; each run writes a new file, and
``best_seconds`` is the fastest); ``cold_seconds`` = startup + the first run. ``--engine torch``
times the tensor grid instead.

``python_seconds``: a fixed pure-Python workload (dict and list operations and calls, the kind of
code CLEVR's own generator runs), best of 3, timed before each size and after its runs (``_after``):
the machine's speed at the time, so that runs from different hours, and the comparison with CLEVR's
~25 questions/s, can be read against the speed they ran at (a shared VM has slow spells).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from tensorqa.clevr.generate import Options, generate_store
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_store import write_static_store


def python_seconds() -> float:
    """Best of 3 timings of a fixed pure-Python workload (see the module's docstring)."""
    def work() -> int:
        counts: dict = {}
        seen = []
        for i in range(100_000):
            k = (i * 7919) % 1009
            counts[k] = counts.get(k, 0) + 1
            if counts[k] == 50:
                seen.append((k, i))
        return len(sorted(seen))

    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return round(min(times), 4)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--format", default="clevr-json", choices=("clevr-json", "parquet"))
    ap.add_argument("--batch-scenes", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=16)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--engine", default="auto", choices=("auto", "compiled", "torch"))
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per size (the median is reported)")
    ap.add_argument("--json", help="also write the lines as a JSON list to this file")
    a = ap.parse_args()
    rows = []
    for n in a.scenes:
        with tempfile.TemporaryDirectory() as d:
            store = write_static_store(Path(d) / "s.h5", sample_scenes(n, seed=0))
            out = Path(d) / ("q.json" if a.format == "clevr-json" else "pool")
            opt = Options(batch_scenes=a.batch_scenes, draws=a.draws, device=a.device, engine=a.engine)
            calibration = python_seconds()
            t0 = time.perf_counter()
            if not rows:  # the one-time costs, once per process
                generate_store(store, Path(d) / ("w.json" if a.format == "clevr-json" else "warm"), fmt=a.format,
                               opt=opt, max_scenes=10)
            startup = time.perf_counter() - t0
            times = []
            for r in range(max(1, a.repeat)):
                t0, c0 = time.perf_counter(), time.process_time()
                st = generate_store(store, out.with_name(f"{out.name}{r}"), fmt=a.format, opt=opt)
                times.append((time.perf_counter() - t0, time.process_time() - c0))
            first, calibration_after = times[0][0], python_seconds()
            secs, cpu = statistics.median(t for t, _ in times), statistics.median(c for _, c in times)
        rows.append({"scenes": n, "questions": st["questions"], "seconds": round(secs, 3), "cpu_seconds": round(cpu, 3),
                     "best_seconds": round(min(t for t, _ in times), 3), "repeat": len(times),
                     "all_seconds": [round(t, 3) for t, _ in times],
                     "startup_seconds": round(startup, 2), "cold_seconds": round(first + startup, 2),
                     "engine": st["engine"], "python_seconds": calibration, "python_seconds_after": calibration_after,
                     "questions_per_s": round(st["questions"] / secs, 1), "threads": torch.get_num_threads(),
                     "format": a.format, "draws": a.draws, "device": a.device, "batch_scenes": a.batch_scenes})
        print(json.dumps(rows[-1]), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
