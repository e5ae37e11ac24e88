"""Programs answered per second: grid evaluation (tensorqa.agqa.grid) vs the scalar reference executor.

    python benchmarks/grid_vs_reference.py --store FILE [--synthesize N] [--videos N] [--batch B]
           [--device cpu|cuda] [--semantics agqa|strict] [--reference-programs N] [--templates a,b,...]

A "program answered" is one grid cell: one program (template + slot values + window) on one video,
with its answer or the knowledge that it has none (undefined). The grid side evaluates every
AGQA skeleton over its whole slot grid for every video of each block read from the store; the
scalar side runs ``reference.run_program`` on programs drawn from those grids (spread evenly
over the templates, decoded to text beforehand, so only execution is timed). ``--synthesize N``
first writes N synthetic videos (``tensorqa.scenes.synthetic.synthesize``, augmented) to the store path
when it does not exist.

Allocation: the grids allocate tens of large tensors per block; glibc's default malloc returns
big blocks to the kernel on free, so every new tensor page-faults fresh zeroed pages, which can
double the grid time on a small VM. Unless ``--plain-malloc`` is given, the script keeps freed
memory as ``tensorqa generate`` does (:func:`tensorqa.memory.keep_freed_memory`, the one allocator
set-up of the project).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

from tensorqa.agqa.grid import GridContext, evaluate
from tensorqa.memory import keep_freed_memory
from tensorqa.agqa.shapes import PROGRAM_SHAPES
from tensorqa.agqa.executor import run_program
from tensorqa.agqa.semantics import get_semantics
from tensorqa.scenes.store import open_store, write_store


def make_store(path: Path, n: int, seed: int) -> None:
    from tensorqa.scenes.augment import augment_scene
    from tensorqa.scenes.synthetic import synthesize
    write_store(path, (augment_scene(s) for s in synthesize(n, seed)), source=f"synthetic n={n} seed={seed}")


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def grid_rate(store, templates, args, sem):
    """(programs, defined, seconds, peak answer-grid bytes, first block's grids) over the store."""
    programs = defined = 0
    seconds = 0.0
    peak = 0
    first = None
    stop = min(len(store), args.videos)
    for start in range(0, stop, args.batch):
        batch = store.batch(start, min(start + args.batch, stop), device=args.device)
        sync(args.device)
        t0 = time.perf_counter()
        ctx = GridContext(batch, sem)
        grids = {}
        for name in templates:
            g = evaluate(name, batch, sem, context=ctx)
            grids[name] = g
            programs += int(g.real.count_nonzero())
            defined += int(g.defined.count_nonzero())
            peak = max(peak, g.answer.numel() * g.answer.element_size())
        sync(args.device)
        seconds += time.perf_counter() - t0
        if first is None:
            first = (batch.to("cpu"), {k: g.to("cpu") for k, g in grids.items()})
        del grids, ctx
    return programs, defined, seconds, peak, first


def reference_rate(first, templates, n_programs, sem, seed):
    """(programs, seconds, mismatches) of run_program on programs drawn from the first block."""
    batch, grids = first
    scenes = {s.video_id: s for s in batch.scenes()}
    rng = np.random.default_rng(seed)
    jobs = []
    per = max(1, n_programs // len(templates))
    for name in templates:
        g = grids[name]
        cells = g.real.nonzero()
        if len(cells) == 0:
            continue
        pick = cells[torch.from_numpy(rng.choice(len(cells), size=min(per, len(cells)), replace=False))]
        for c in pick.tolist():
            program, answer = g.decode(c)
            jobs.append((program, scenes[g.video_id(c)], answer))
    t0 = time.perf_counter()
    results = [run_program(p, s, semantics=sem) for p, s, _ in jobs]
    seconds = time.perf_counter() - t0
    mismatches = sum((r if r else None) != a for r, (_, _, a) in zip(results, jobs))
    return len(jobs), seconds, mismatches


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, type=Path, help="HDF5 scene store (tensorqa.scenes.store)")
    ap.add_argument("--synthesize", type=int, default=0, metavar="N",
                    help="write N synthetic videos to --store first if it does not exist")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--videos", type=int, default=1 << 30, help="use at most this many videos")
    ap.add_argument("--batch", type=int, default=256, help="videos per grid block")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--semantics", default="agqa")
    ap.add_argument("--reference-programs", type=int, default=4000)
    ap.add_argument("--templates", default="", help="comma-separated template names (default: all 28)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--plain-malloc", action="store_true", help="keep glibc's default allocation settings")
    args = ap.parse_args(argv)
    if not args.plain_malloc:  # the allocator set-up generate uses (tensorqa.memory), not one of our own
        keep_freed_memory()
    if args.threads:
        torch.set_num_threads(args.threads)
    if not args.store.exists():
        if not args.synthesize:
            print(f"grid_vs_reference: no store {args.store} (use --synthesize N to make one)", file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        make_store(args.store, args.synthesize, args.seed)
        print(f"wrote {args.synthesize} synthetic videos to {args.store} in {time.perf_counter() - t0:.1f} s")
    templates = [t for t in args.templates.split(",") if t] or list(PROGRAM_SHAPES)
    sem = get_semantics(args.semantics)
    store = open_store(args.store)

    # warm up (first-call library initialisation is not throughput)
    warm = store.batch(0, min(8, len(store)), device=args.device)
    for name in templates:
        evaluate(name, warm, sem)

    programs, defined, g_sec, peak, first = grid_rate(store, templates, args, sem)
    n_ref, r_sec, mismatches = reference_rate(first, templates, args.reference_programs, sem, args.seed)
    g_rate = programs / g_sec
    r_rate = n_ref / r_sec
    videos = min(len(store), args.videos)
    tuned = not args.plain_malloc
    print(f"store: {args.store} ({videos} videos, blocks of {args.batch}, device {args.device}, "
          f"{torch.get_num_threads()} CPU threads, semantics {sem.name}, {len(templates)} templates, "
          f"{'retaining' if tuned else 'default'} malloc)")
    print(f"grid:      {programs:,} programs ({defined:,} defined) in {g_sec:.2f} s = {g_rate:,.0f} programs/s "
          f"(largest answer tensor {peak / 2**20:.0f} MiB)")
    print(f"reference: {n_ref:,} programs in {r_sec:.2f} s = {r_rate:,.0f} programs/s "
          f"({mismatches} answers differ from the grid)")
    print(f"ratio:     {g_rate / r_rate:,.0f}x")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
