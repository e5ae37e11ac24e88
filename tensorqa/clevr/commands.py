"""The CLEVR side of the CLI: ``pack --clevr N | --clevr-scenes FILE`` and ``generate`` on a
static-scene store (``tensorqa/cli.py`` delegates here), plus their extra arguments."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from tensorqa.errors import TensorQAError
from tensorqa.outputs import output_folder, write_atomic


def add_pack_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("CLEVR (static scenes)")
    g.add_argument("--clevr", type=int, metavar="N", help="pack N sampled CLEVR-like scenes (seeded by --seed)")
    g.add_argument("--clevr-scenes", nargs="+", metavar="FILE", help="pack CLEVR scene files (CLEVR_*_scenes.json)")
    g.add_argument("--clevr-split", choices=("train", "val", "test"), default="train",
                   help="the CLEVR split of the --clevr scenes (default train; image names CLEVR_<split>_<index>.png)")


def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("CLEVR stores (picked from the store)")
    g.add_argument("--templates-dir", metavar="DIR", help="folder of CLEVR template JSON (default: CLEVR 1.0's)")
    g.add_argument("--synonyms", metavar="FILE", help="synonyms.json (default: CLEVR's, with the default templates)")
    g.add_argument("--instances-per-template", type=int, default=1, help="questions per template per image (default 1)")
    g.add_argument("--templates-per-image", type=int, default=10, help="templates that must succeed per image (default 10)")
    g.add_argument("--reset-counts-every", type=int, default=250, help="scenes between resets of the counts (default 250)")
    g.add_argument("--draws", type=int, default=16,
                   help="the most grid draws per scene and template, in rounds of 4, 4, 8, 16 (default 16)")
    g.add_argument("--valid-draws", type=int, default=2,
                   help="a scene gets another round of draws while it has fewer valid ones (default 2; "
                        "--draws 32 --valid-draws 4 comes closer to CLEVR's DFS at about 1.5x the time)")
    g.add_argument("--engine", choices=("auto", "compiled", "torch"), default="auto",
                   help="compiled: numba on the CPU; torch: the tensor grid (any --device); auto (default): compiled "
                        "on the CPU, torch elsewhere. The same questions either way")


def run_pack(a: argparse.Namespace) -> int:
    from tensorqa.scenes.clevr_sampler import sample_scenes
    from tensorqa.limits import MAX_CLEVR_SCENES
    from tensorqa.scenes.loaders.clevr import check_unique_filenames, load_clevr_scenes
    from tensorqa.scenes.static_store import StaticStore, write_static_store

    t0 = time.perf_counter()  # the options were checked against the source (cli.scenes.PACK_OPTIONS)
    if a.clevr_scenes:
        scenes, info = [], {}
        for f in a.clevr_scenes:
            s, i = load_clevr_scenes(f)
            scenes += s
            info = info or i
        check_unique_filenames(scenes, "--clevr-scenes")
        src = "clevr-scenes:" + ",".join(Path(f).name for f in a.clevr_scenes)
    else:
        if not 1 <= a.clevr <= MAX_CLEVR_SCENES:
            raise TensorQAError(f"--clevr: needs 1 to {MAX_CLEVR_SCENES:,} scenes, not {a.clevr:,}")
        scenes = sample_scenes(a.clevr, seed=a.seed, split=a.clevr_split)
        info, src = {"split": a.clevr_split, "version": "tensorqa-sampler"}, f"clevr-sampler:seed={a.seed}"
    out = write_static_store(a.out, scenes, source=src, info=info)
    with StaticStore(out) as s:
        print(f"wrote {out}: {len(s):,} CLEVR scenes, {int(s.num_objects.sum()):,} objects, "
              f"{out.stat().st_size / 2**20:.1f} MiB in {time.perf_counter() - t0:.1f} s")
    return 0


def run_generate(a: argparse.Namespace) -> int:
    from tensorqa.clevr.generate import Options, generate_store
    from tensorqa.clevr.semantics import semantics_named

    fmt = {"agqa-json": None}.get(a.fmt, a.fmt)
    if fmt is None:
        raise TensorQAError(f"{a.store}: a CLEVR store: --format is clevr-json or parquet, not agqa-json")
    num_shards = a.num_shards if a.num_shards is not None else int(os.environ.get("WORLD_SIZE", 1))
    shard = a.shard_index if a.shard_index is not None else int(os.environ.get("RANK", 0))
    from tensorqa.threads import usable_cores

    jobs = usable_cores() if a.jobs == "auto" else int(a.jobs)
    from tensorqa.agqa.options import checked_run_options

    checked_run_options(a.device, a.batch_videos or 1000, a.max_videos)
    opt = Options(instances_per_template=a.instances_per_template, templates_per_image=a.templates_per_image,
                  reset_counts_every=a.reset_counts_every, draws=a.draws, valid_draws=a.valid_draws,
                  batch_scenes=a.batch_videos or 1000,
                  seed=a.seed, semantics=semantics_named("clevr" if a.semantics == "agqa" else a.semantics),
                  device=a.device, engine=a.engine, threads=a.threads)
    out = Path(a.out)
    if fmt == "clevr-json" and out.suffix != ".json":
        out = output_folder(out) / "CLEVR_questions.json"
    stats = generate_store(a.store, out, a.templates_dir, a.synonyms, fmt, num_shards, shard, a.max_videos, opt, jobs)
    q, secs = stats["questions"], stats["seconds"]
    print(f"wrote {q:,} CLEVR questions for {stats['scenes']:,} scenes to {out} in {secs:.1f} s "
          f"({q / max(secs, 1e-9):,.0f} questions/s, {stats['engine']} engine)")
    return 0


CLEVR_ABLATIONS = ("effective-size", "absolute-relate")


def add_ablate_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("CLEVR pools (STORE is then a questions JSON or Parquet pool)")
    g.add_argument("--scenes", metavar="STORE", help="the CLEVR scene store the pool was generated from; with "
                                                     "--ablate effective-size or --ablate absolute-relate")


def is_clevr_input(path: str) -> bool:
    from tensorqa.clevr.analyses import is_clevr_pool

    return is_clevr_pool(path)


def run_stats(a: argparse.Namespace) -> int:
    import json

    from tensorqa.clevr.analyses import format_stats, pool_stats

    s = pool_stats(a.pool)
    print(json.dumps(s, indent=1) if a.json else format_stats(s))
    return 0


def run_ablate(a: argparse.Namespace) -> int:
    import json

    from tensorqa.clevr.analyses import absolute_spatial, effective_size

    if not a.scenes:
        raise TensorQAError(f"{a.store}: a CLEVR pool: --scenes STORE (its scene store) is needed")
    report = {}
    for name in a.ablate:
        if name not in CLEVR_ABLATIONS:
            raise TensorQAError(f"--ablate {name!r}: CLEVR pools take {' or '.join(CLEVR_ABLATIONS)}")
        report[name] = effective_size(a.store, a.scenes) if name == "effective-size" else absolute_spatial(a.store, a.scenes)
    if a.json:
        print(json.dumps(report, indent=1))
    else:
        for name, r in report.items():
            if name == "effective-size":
                print(f"effective size: {r['questions']:,} questions (same-attribute excluded), program size "
                      f"{r['mean_program_size']} -> effective {r['mean_effective_size']} functions on average")
            else:
                print("absolute spatial reasoning (relate -> image half), chain families:")
                for k, v in r.items():
                    print(f"  {k} relations: {v['still_right']:,} / {v['questions']:,} answers still right ({100 * v['share']:.1f} %)")
    if a.out:
        write_atomic(a.out, json.dumps(report, indent=1))
    return 0
