"""End-to-end throughput of ``tensorqa generate`` on one store: per stage and end to end, with peak
memory and the ratio of grid evaluation to the scalar reference executor measured in the same run.

    python benchmarks/run.py                                   # ./default.h5, README's store
    python benchmarks/run.py --store S.h5 --videos 1000 --device cuda --json run.json
    python benchmarks/run.py --stages-only                     # in-memory stages only, nothing written
    python benchmarks/scaling.py --sizes 1000 4000 9601 40000  # how cost grows with the number of videos

Prints videos/s and questions/s for each stage (grid evaluation, validity masks, record building,
text rendering, writing: ``StageTimes`` of the pipeline) and end to end, peak RSS (and peak CUDA
memory on a GPU), both taken right after generation; then, in the same process:

* grid vs reference: ``grid_vs_reference.py``'s two measurements (every skeleton over its whole
  slot grid for the first ``--ratio-videos`` videos; the scalar executor on ``--ratio-programs``
  cells drawn from them): programs answered per second on each side and their ratio;
* re-derivation: ``--reference-sample`` records of the written pool re-answered by the scalar
  executor from their program strings (disagreements must be 0), read from a few row groups only.

When ``--store`` does not exist and is the default path, the embedded default dataset (``--videos``
videos, all 9,601 if not given) is packed into a temporary store first, and removed afterwards.
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
from types import SimpleNamespace

from tensorqa.startup import configure_process

configure_process()  # before pyarrow loads: Arrow's allocator options, as the CLI sets them
import pyarrow.parquet as pq  # noqa: E402
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sibling benchmark scripts

import grid_vs_reference

from tensorqa import kernels as kernels_mod
from tensorqa.errors import TensorQAError
from tensorqa.agqa import generate
from tensorqa.agqa.blocks import generate_block
from tensorqa.agqa.options import StageTimes, default_batch_videos, resolve_templates
from tensorqa.memory import keep_freed_memory
from tensorqa.scenes.pack import pack_default
from tensorqa.agqa.shapes import PROGRAM_SHAPES
from tensorqa.agqa.executor import run_program
from tensorqa.agqa.semantics import get_semantics
from tensorqa.scenes.store import open_store
from tensorqa.scenes.synthetic import DEFAULT_VIDEOS

DEFAULT_STORE = Path("default.h5")  # README: tensorqa pack --out default.h5
STAGES = ("grid", "masks", "records", "render", "write")
AGQA_QUESTIONS_PER_CORE_SECOND = 6000  # AGQA's own generator: ~192M questions in ~9 CPU-hours


def peak_rss_gib() -> float:
    """Peak resident memory of this process so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def generate_in_memory(store: Path, device: str, batch_videos: int, max_videos: int | None, kernels: str,
                       seed: int = 0, semantics: str = "agqa") -> dict:
    """Every stage of ``generate`` but the writer: ``generate_block`` over the store's blocks, tables dropped.

    Returns the StageTimes fields and the wall seconds, like ``generate``'s statistics."""
    names, sem = resolve_templates(None), get_semantics(semantics)
    times = StageTimes()
    keep_freed_memory()  # as generate() does
    t0 = time.perf_counter()
    with open_store(store) as src, torch.inference_mode(), kernels_mod.configure(kernels, device):
        counts = src.meta.get("rel_obj_keyframes")
        if counts is None:
            raise TensorQAError(f"{store}: store has no relation-object counts (meta 'rel_obj_keyframes'); repack it")
        rel_obj_counts = torch.tensor(counts, dtype=torch.int64, device=device)
        stop = len(src) if max_videos is None else min(len(src), max_videos)
        for batch in src.blocks(batch_videos, 0, stop, device=device):
            generate_block(batch, names, rel_obj_counts, sem, seed, times)
    return {**times.as_dict(), "seconds": time.perf_counter() - t0}


def sample_records(pool: Path, n: int, seed: int = 0) -> list[dict]:
    """About ``n`` records of a written pool: an equal share from each of up to 8 random row groups
    (never the whole pool, which can hold tens of millions of program strings)."""
    groups = [(f, g) for f in sorted(Path(pool, "data").glob("*.parquet")) for g in range(pq.ParquetFile(f).num_row_groups)]
    rng = random.Random(seed)
    rng.shuffle(groups)
    groups = groups[:8]
    rows: list[dict] = []
    for f, g in groups:
        t = pq.ParquetFile(f).read_row_group(g, columns=["video_id", "program", "answer"])
        pick = sorted(rng.sample(range(t.num_rows), min(t.num_rows, -(-n // len(groups)))))
        rows += t.take(pick).to_pylist()
    return rows[:n]


def rederive(store: Path, pool: Path, n: int, seed: int = 0) -> dict:
    """Re-answer ``n`` sampled records with the scalar executor, from their program strings."""
    sample = sample_records(pool, n, seed)
    with open_store(store) as s:
        scenes = {v: s.scene(v) for v in {r["video_id"] for r in sample}}
    t0 = time.perf_counter()
    wrong = sum(run_program(r["program"], scenes[r["video_id"]]) != r["answer"] for r in sample)
    secs = time.perf_counter() - t0
    return {"records": len(sample), "records_per_s": round(len(sample) / max(secs, 1e-9), 1), "disagreements": wrong}


def grid_vs_scalar(store: Path, device: str, batch_videos: int, videos: int, programs: int, kernels: str,
                   seed: int = 0, semantics: str = "agqa") -> dict:
    """``grid_vs_reference.py``'s grid and reference measurements on the first ``videos`` videos
    (the grid with the primitives ``--kernels`` selects, as in the generation)."""
    sem = get_semantics(semantics)
    templates = list(PROGRAM_SHAPES)
    args = SimpleNamespace(videos=videos, batch=batch_videos, device=device)
    with open_store(store) as src, torch.inference_mode(), kernels_mod.configure(kernels, device):
        videos = min(videos, len(src))
        n_grid, defined, g_sec, _, first = grid_vs_reference.grid_rate(src, templates, args, sem)
        n_ref, r_sec, mismatches = grid_vs_reference.reference_rate(first, templates, programs, sem, seed)
    g_rate, r_rate = n_grid / max(g_sec, 1e-9), n_ref / max(r_sec, 1e-9)
    return {"videos": videos, "grid_programs": n_grid,
            "grid_defined": defined, "grid_seconds": round(g_sec, 3), "grid_programs_per_s": round(g_rate),
            "reference_programs": n_ref, "reference_seconds": round(r_sec, 3),
            "reference_programs_per_s": round(r_rate, 1), "mismatches": mismatches, "ratio": round(g_rate / r_rate, 1)}


def run(store: Path, *, device: str, batch_videos: int, max_videos: int | None, kernels: str, stages_only: bool,
        reference_sample: int, ratio_videos: int, ratio_programs: int, workdir: Path) -> dict:
    """One measured generation of ``store`` (plus the reference measurements), as a dict."""
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats(device)
    out = workdir / "pool"
    c0 = time.process_time()  # CPU seconds of every thread: robust to other jobs on a shared machine
    if stages_only:
        stats = generate_in_memory(store, device, batch_videos, max_videos, kernels)
        wall = stats["seconds"]
    else:
        t0 = time.perf_counter()
        stats = generate(store, out, device=device, batch_videos=batch_videos, max_videos=max_videos,
                         num_shards=1, shard_index=0, progress=False, kernels=kernels)
        wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    q, v = stats["questions"], stats["videos"]
    with open_store(store) as src:
        store_videos = len(src)
    r = {"store": str(store), "store_videos": store_videos, "backend": kernels_mod.backend_for(kernels, device),
         "videos": v, "questions": q, "written": not stages_only, "seconds": round(wall, 2),
         "cpu_seconds": round(cpu, 2),
         "videos_per_s": round(v / wall, 1), "questions_per_s": round(q / wall),
         "stages": {k: _rates(stats[k], v, q) for k in STAGES if not (stages_only and k == "write")},
         "peak_rss_gib": round(peak_rss_gib(), 2), "per_template": stats["per_template"]}
    if device.startswith("cuda"):
        r["peak_cuda_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
        r["peak_cuda_reserved_gib"] = round(torch.cuda.max_memory_reserved(device) / 2**30, 2)
    r["vs_agqa_generator_per_core"] = round(r["questions_per_s"] / AGQA_QUESTIONS_PER_CORE_SECOND, 1)
    if ratio_programs and ratio_videos:
        r["grid_vs_reference"] = grid_vs_scalar(store, device, batch_videos, min(ratio_videos, v), ratio_programs, kernels)
    if reference_sample and not stages_only and q:
        rd = rederive(store, out, reference_sample)
        grid_masks = stats["grid"] + stats["masks"]
        # questions kept per second of grid + masks, against records re-derived per second
        rd["kept_questions_vs_reference"] = round(q / max(grid_masks, 1e-9) / max(rd["records_per_s"], 1e-9), 1)
        r["rederive"] = rd
    shutil.rmtree(out, ignore_errors=True)
    return r


def _rates(seconds: float, videos: int, questions: int) -> dict:
    """A stage's seconds and throughputs (rates are None for a stage that took no measurable time)."""
    ok = seconds > 0
    return {"seconds": round(seconds, 3), "videos_per_s": round(videos / seconds, 1) if ok else None,
            "questions_per_s": round(questions / seconds) if ok else None}


def print_result(r: dict) -> None:
    what = ("in memory (nothing written)" if not r["written"] else "written") + f", {r['backend']} primitives"
    line = (f"videos {r['videos']:,}  questions {r['questions']:,} {what}  wall {r['seconds']:.1f} s  "
            f"(CPU {r['cpu_seconds']:.1f} s)  {r['videos_per_s']:,} videos/s  {r['questions_per_s']:,} questions/s  "
            f"peak RSS {r['peak_rss_gib']} GiB")
    if "peak_cuda_gib" in r:
        line += f"  peak CUDA {r['peak_cuda_gib']} GiB allocated ({r['peak_cuda_reserved_gib']} GiB reserved)"
    print(line)
    for k, s in r["stages"].items():
        if s["videos_per_s"] is None:
            print(f"  {k:8s} {s['seconds']:8.2f} s")
        else:
            print(f"  {k:8s} {s['seconds']:8.2f} s  {s['videos_per_s']:>10,.1f} videos/s  {s['questions_per_s']:>12,} questions/s")
    if "grid_vs_reference" in r:
        g = r["grid_vs_reference"]
        print(f"  grid vs reference ({g['videos']:,} videos; grid_vs_reference.py): grid {g['grid_programs_per_s']:,} "
              f"programs/s, scalar executor {g['reference_programs_per_s']:,} programs/s on {g['reference_programs']:,} "
              f"cells ({g['mismatches']} mismatches): {g['ratio']:,}x")
    if "rederive" in r:
        d = r["rederive"]
        print(f"  re-derivation: {d['records']:,} pool records re-answered by the scalar executor at "
              f"{d['records_per_s']:,} records/s, {d['disagreements']} disagreements; questions kept per second "
              f"of grid + masks: {d['kept_questions_vs_reference']:,}x that")
    print(f"  vs AGQA's generator (~{AGQA_QUESTIONS_PER_CORE_SECOND:,} questions/s per core): {r['vs_agqa_generator_per_core']}x")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", type=Path, default=DEFAULT_STORE, help=f"scene store (default {DEFAULT_STORE})")
    p.add_argument("--videos", type=int, help="only the first N videos of the store (or pack N when packing)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cpu or cuda[:i]")
    p.add_argument("--batch-videos", type=int, default=None, help="default: generate's (16 on the CPU, 64 on CUDA)")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--kernels", choices=kernels_mod.MODES, default="auto",
                   help="Triton kernels: auto = on CUDA only (default), as tensorqa generate --kernels")
    p.add_argument("--stages-only", action="store_true", help="run every stage but the writer; write nothing")
    p.add_argument("--reference-sample", type=int, default=1000, help="pool records re-derived (0: skip)")
    p.add_argument("--ratio-videos", type=int, default=256, help="videos of the grid vs reference measurement")
    p.add_argument("--ratio-programs", type=int, default=2000, help="cells run by the scalar executor (0: skip)")
    p.add_argument("--json", type=Path, help="also write the results here (JSON)")
    return p


def main(argv=None) -> int:
    a = build_parser().parse_args(argv)
    if not (a.device == "cpu" or a.device.startswith("cuda")):
        print(f"run.py: --device must be cpu or cuda[:i], not {a.device!r}", file=sys.stderr)
        return 2
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"run.py: --device {a.device}: CUDA is not available on this machine", file=sys.stderr)
        return 2
    if a.threads:
        torch.set_num_threads(a.threads)
    tmp = Path(tempfile.mkdtemp(prefix="tensorqa-bench-"))
    try:
        store, max_videos, packed = a.store, a.videos, None
        if not store.exists():
            if store != DEFAULT_STORE:
                print(f"run.py: no store {store}", file=sys.stderr)
                return 2
            n = a.videos or DEFAULT_VIDEOS
            store, max_videos = tmp / f"default-{n}.h5", None
            t0 = time.perf_counter()
            pack_default(store, videos=n, progress=False)
            packed = round(time.perf_counter() - t0, 2)
            print(f"no {DEFAULT_STORE}: packed the default dataset ({n:,} videos) into a temporary store in {packed:.1f} s")
        a.batch_videos = default_batch_videos(a.device) if a.batch_videos is None else a.batch_videos
        r = run(store, device=a.device, batch_videos=a.batch_videos, max_videos=max_videos, kernels=a.kernels,
                stages_only=a.stages_only, reference_sample=a.reference_sample, ratio_videos=a.ratio_videos,
                ratio_programs=a.ratio_programs, workdir=tmp)
        print_result(r)
        gpu = torch.cuda.get_device_name(a.device) if a.device.startswith("cuda") else None
        results = {"machine": f"{platform.node()} {platform.machine()} {torch.get_num_threads()} threads",
                   "gpu": gpu, "device": a.device, "torch": torch.__version__, "python": platform.python_version(),
                   "date": time.strftime("%Y-%m-%d %H:%M"), "batch_videos": a.batch_videos,
                   "kernels": a.kernels,
                   "pack_seconds": packed, **r}
        if a.json:
            a.json.write_text(json.dumps(results, indent=1))
    except TensorQAError as e:
        print(f"run.py: error: {e}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
