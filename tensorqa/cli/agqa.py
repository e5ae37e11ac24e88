"""AGQA pool commands: ``generate``, ``stats``, ``ablate``, ``balance``, ``split``."""

from __future__ import annotations

import argparse
import json
import sys
import time

from tensorqa.cli.commands import command
from tensorqa.clevr import commands as clevr_commands
from tensorqa.errors import TensorQAError
from tensorqa.outputs import check_output_file, check_output_folder


def _balance_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pool", help="an unbalanced pool (Parquet shards in the Hugging Face layout)")
    p.add_argument("--out", required=True, help="output folder for the balanced pool (same layout and schema)")
    p.add_argument("--preset", choices=["agqa", "agqa2"], default="agqa",
                   help="agqa: AGQA's smoothing (default); agqa2: uniform answers, yes/no 50/50, at most 8 steps")
    p.add_argument("--seed", type=int, default=0, help="seed of the random choices (default 0)")
    p.add_argument("--all-passes", action="store_true",
                   help="apply every smoothing pass (AGQA applies only the last pass's removals)")
    p.add_argument("--ratio-bound", type=float, help="starting ratio bound b of open smoothing (default 3)")
    p.add_argument("--max-steps", type=int, help="drop questions with more steps first (agqa2: 8)")
    p.add_argument("--shares", nargs="+", metavar="STRUCTURE=SHARE",
                   help="structural targets, e.g. query=0.5 verify=0.15 compare=0.15 choose=0.15 logic=0.05")
    p.add_argument("--no-temporal-labels", action="store_true", help="remove at random, ignoring temporal-change labels")
    p.add_argument("--no-structural", action="store_true", help="skip structural rejection sampling")
    p.add_argument("--shard-rows", type=int, default=2_000_000, help="rows per split per output shard (default 2,000,000)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


@command("balance", "balance a pool's answers and question structures as AGQA does", _balance_arguments)
def run_balance(a: argparse.Namespace) -> int:
    from tensorqa.agqa.balancing.balance import balance_config, balance_pool, format_report
    from tensorqa.agqa.semantics import PRESETS
    from tensorqa.writers import pool_fact

    from tensorqa.agqa.options import check_seed

    overrides = {"seed": check_seed(a.seed), "temporal_labels": not a.no_temporal_labels, "structural": not a.no_structural,
                 "shard_rows": a.shard_rows}
    # §f10: smoothing applies every pass's removals with --all-passes, or when the pool was generated
    # under a semantics that says so (strict), as the pool's done markers record it
    semantics = pool_fact(a.pool, "semantics")
    if a.all_passes or (semantics in PRESETS and PRESETS[semantics].smoothing_applies_all_passes):
        overrides["last_pass_only"] = False
    if a.ratio_bound is not None:
        overrides["ratio_bound"] = a.ratio_bound
    if a.max_steps is not None:
        overrides["max_steps"] = a.max_steps
    if a.shares:
        shares = {}
        for item in a.shares:
            name, _, value = item.partition("=")
            try:
                shares[name] = float(value)
            except ValueError:
                raise TensorQAError(f"--shares {item!r}: expected STRUCTURE=SHARE, e.g. query=0.5") from None
        overrides["structure_shares"] = shares
    check_output_folder(a.out, what="the balanced pool is a folder")
    t0 = time.perf_counter()
    report = balance_pool(a.pool, a.out, balance_config(a.preset, **overrides), preset=a.preset, progress=not a.quiet)
    print(json.dumps(report, indent=1) if a.json else format_report(report))
    print(f"done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


def _split_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pool", help="a pool (Parquet shards in the Hugging Face layout), balanced or not")
    p.add_argument("--out", required=True, help="output folder (the pool plus AGQA's split fields)")
    p.add_argument("--train-videos", metavar="FILE",
                   help="video ids of train (one per line, or a JSON list); all others become test "
                        "(default: keep the pool's split)")
    p.add_argument("--max-steps", type=int, default=None,
                   help="more_steps = steps > M for every template (default 5)")
    p.add_argument("--steps-table", metavar="JSON", help="per-template thresholds {template: M} (others: 5)")
    p.add_argument("--novel", metavar="JSON",
                   help="held-out compositions: {sequencing_actions, superlative_relations, duration_actions, "
                        "object_relation_pairs} as vocabulary words (default: AGQA's lists)")
    p.add_argument("--keep-novel-in-train", action="store_true", help="flag novel compositions in train without removing them")
    p.add_argument("--shard-rows", type=int, default=2_000_000, help="rows per split per output shard (default 2,000,000)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


@command("split", "add AGQA's split fields: train/test, novel compositions, direct equivalents, more steps", _split_arguments)
def run_split(a: argparse.Namespace) -> int:
    from tensorqa.agqa.splits import DEFAULT_MAX_STEPS, NovelCompositions, SplitConfig, format_split_report, read_video_list, split_pool

    def load_json(path: str, what: str):
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError) as err:  # UnicodeDecodeError is a ValueError
            raise TensorQAError(f"{what} {path}: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None

    check_output_folder(a.out, what="the pool is a folder")
    if a.max_steps is not None and a.max_steps < 1:  # as balance refuses it
        raise TensorQAError(f"--max-steps must be at least 1, got {a.max_steps}")
    threshold = DEFAULT_MAX_STEPS if a.max_steps is None else a.max_steps
    if a.steps_table:
        table = load_json(a.steps_table, "--steps-table")
        if not isinstance(table, dict):
            raise TensorQAError(f"--steps-table {a.steps_table}: expected a JSON object {{template: steps}}, "
                                f"found a {type(table).__name__}")
        for k, v in table.items():
            if isinstance(v, bool) or not isinstance(v, int):
                raise TensorQAError(f"--steps-table {a.steps_table}: {k}: expected an integer number of steps, got {v!r}")
        threshold = {str(k): v for k, v in table.items()}
    novel = NovelCompositions.agqa()
    if a.novel:
        spec = load_json(a.novel, "--novel")
        if not isinstance(spec, dict):
            raise TensorQAError(f"--novel {a.novel}: expected a JSON object, found a {type(spec).__name__}")
        for key, value in spec.items():
            pairs = key == "object_relation_pairs"
            ok = isinstance(value, list) and all(
                (isinstance(w, list) and len(w) == 2 and all(isinstance(x, str) for x in w)) if pairs else isinstance(w, str)
                for w in value)
            if not ok:
                want = "a list of [object, relation] word pairs" if pairs else "a list of words"
                raise TensorQAError(f"--novel {a.novel}: {key}: expected {want}, got {json.dumps(value)[:60]}")
        default = NovelCompositions.agqa()
        novel = NovelCompositions.from_words(
            spec.get("sequencing_actions", default.sequencing_actions),
            spec.get("superlative_relations", default.superlative_relations),
            spec.get("duration_actions", default.duration_actions),
            spec.get("object_relation_pairs", default.object_relation_pairs),
            spec.get("duration_templates", default.duration_templates))
    config = SplitConfig(novel=novel, steps_threshold=threshold,
                         train_videos=read_video_list(a.train_videos) if a.train_videos else None,
                         keep_novel_in_train=a.keep_novel_in_train, shard_rows=a.shard_rows)
    t0 = time.perf_counter()
    report = split_pool(a.pool, a.out, config, progress=not a.quiet)
    print(json.dumps(report, indent=1) if a.json else format_split_report(report))
    print(f"done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


def _generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a scene store written by tensorqa pack")
    p.add_argument("--out", required=True, help="output folder (Hugging Face layout: data/<split>-*.parquet)")
    p.add_argument("--templates", nargs="+", metavar="NAME", help="templates to generate (default: all active AGQA templates)")
    p.add_argument("--include-retired", action="store_true", help="also generate actExists (retired in AGQA 2.0)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    p.add_argument("--batch-videos", type=int, default=None,
                   help="videos evaluated together (default 16 on the CPU, 64 on CUDA; the output does not depend on it)")
    p.add_argument("--num-shards", type=int, default=None, help="shards (default: torchrun's WORLD_SIZE or 1)")
    p.add_argument("--shard-index", type=int, default=None, help="this shard (default: torchrun's RANK or 0)")
    p.add_argument("--format", dest="fmt", choices=("parquet", "agqa-json", "clevr-json"), default=None,
                   help="parquet (default), agqa-json (AGQA stores) or clevr-json (CLEVR stores: the default there)")
    p.add_argument("--seed", type=int, default=0, help="seed of question-frame choice")
    p.add_argument("--semantics", choices=("agqa", "clevr", "strict"), default="agqa",
                   help="the generator's quirks (default: AGQA's, or CLEVR's on a CLEVR store) or the clean reading")
    p.add_argument("--max-videos", type=int, default=None, metavar="N",
                   help="only N videos, keeping the store's split proportions (each split's share, drawn from its "
                        "videos with --seed: the same N and seed give the same videos); CLEVR stores: the first N scenes")
    p.add_argument("--jobs", type=_jobs, default=1,
                   help="shard processes to run side by side on this machine (default 1; 'auto': one per core, "
                        "as many as the memory holds; rendering and writing use one core per process, GPU or not); "
                        "same records as one process")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads per process (default: OMP_NUM_THREADS if set, else the cores this "
                        "process may use that other processes leave idle, shared among --jobs)")
    p.add_argument("--grounding", action=argparse.BooleanOptionalAction, default=None,
                   help="fill sg_grounding (question spans -> scene-graph vertex ids; default: on for agqa-json, off for parquet)")
    p.add_argument("--kernels", choices=("auto", "on", "off"), default="auto",
                   help="Triton kernels for the hot primitives: auto = on CUDA, where they beat torch (default); "
                        "on = every kernel; off forces the torch path")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    clevr_commands.add_generate_arguments(p)


def _jobs(text: str) -> int | str:
    """--jobs: a count, or "auto"."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or 'auto', not {text!r}") from None


@command("generate", "generate AGQA's unbalanced question pool from a scene store", _generate_arguments)
def run_generate(a: argparse.Namespace) -> int:
    from tensorqa.scenes.static_store import is_static_store
    from tensorqa.threads import set_torch_threads

    if a.threads is not None and a.threads < 1:
        raise TensorQAError(f"--threads must be at least 1, got {a.threads}")

    agqa_only = {"--templates": a.templates, "--include-retired": a.include_retired,
                 "--grounding": a.grounding is not None, "--kernels": a.kernels != "auto"}
    clevr_only = {"--templates-dir": a.templates_dir, "--synonyms": a.synonyms, "--engine": a.engine != "auto",
                  "--instances-per-template": a.instances_per_template != 1, "--templates-per-image": a.templates_per_image != 10,
                  "--reset-counts-every": a.reset_counts_every != 250, "--draws": a.draws != 16, "--valid-draws": a.valid_draws != 2}
    if is_static_store(a.store):
        given = [flag for flag, on in agqa_only.items() if on]
        if given:  # not silently ignored
            raise TensorQAError(f"{a.store}: a CLEVR store: {given[0]} applies to AGQA stores only")
        a.fmt = a.fmt or "clevr-json"
        return clevr_commands.run_generate(a)  # torch's threads set where its torch backend runs
    set_torch_threads(threads=a.threads)
    given = [flag for flag, on in clevr_only.items() if on]
    if given:
        raise TensorQAError(f"{a.store}: not a CLEVR store: {given[0]} applies to CLEVR stores only")
    if a.fmt == "clevr-json" or a.semantics == "clevr":
        raise TensorQAError(f"{a.store}: not a CLEVR store: --format clevr-json and --semantics clevr need one")
    a.fmt = a.fmt or "parquet"
    from tensorqa.startup import arrow_without_pandas

    arrow_without_pandas()  # before the pipeline loads pyarrow
    from tensorqa.agqa import generate

    stats = generate(a.store, a.out, templates=a.templates, device=a.device, batch_videos=a.batch_videos,
                     num_shards=a.num_shards, shard_index=a.shard_index, fmt=a.fmt, seed=a.seed,
                     semantics=a.semantics, include_retired=a.include_retired, progress=not a.quiet,
                     max_videos=a.max_videos, kernels=a.kernels, grounding=a.grounding, jobs=a.jobs,
                     threads=a.threads)
    if stats.get("skipped"):
        which = f"all {stats['num_shards']} shards" if "jobs" in stats else f"shard {stats['shard'] + 1}/{stats['num_shards']}"
        print(f"{which} of {a.out} already complete: skipped")
        return 0
    q, secs = stats["questions"], stats["seconds"]
    print(f"wrote {q:,} questions for {stats['videos']:,} videos to {a.out} in {secs:.1f} s "
          f"({q / max(secs, 1e-9):,.0f} questions/s)")
    return 0


def _ablate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a scene store written by tensorqa pack")
    p.add_argument("--ablate", action="append", required=True, metavar="NAME=REPLACEMENT",
                   help="make a temporal word or a primitive mean another: before=while, after=before, "
                        "first_episode=last_episode, ... (repeat to ablate several together)")
    p.add_argument("--templates", nargs="+", metavar="NAME", help="templates to compare (default: all active AGQA templates)")
    p.add_argument("--include-retired", action="store_true", help="also actExists (retired in AGQA 2.0)")
    p.add_argument("--max-videos", type=int, default=None, help="only the first N videos of the store")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    p.add_argument("--batch-videos", type=int, default=None, help="videos evaluated together (the counts do not depend on it)")
    p.add_argument("--semantics", choices=("agqa", "strict"), default="agqa", help="AGQA's quirks (default) or the clean reading")
    p.add_argument("--kernels", choices=("auto", "on", "off"), default="auto", help="Triton kernels, as for generate")
    p.add_argument("--out", metavar="FILE.json", help="also write the report as JSON")
    p.add_argument("--questions", metavar="FILE.parquet",
                   help="also write the questions that take the step: the pool's ingredient columns, the answer, the "
                        "answer under the ablation and whether it changed (join with a pool's direct rows)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    clevr_commands.add_ablate_arguments(p)


@command("ablate", "how many answers change when a reasoning step (temporal word or primitive) is ablated",
         _ablate_arguments)
def run_ablate(a: argparse.Namespace) -> int:
    if clevr_commands.is_clevr_input(a.store):
        return clevr_commands.run_ablate(a)
    from tensorqa.ablation import ablate_store, format_ablation, write_report
    from tensorqa.threads import set_torch_threads

    set_torch_threads()

    for flag, path in (("--out", a.out), ("--questions", a.questions)):  # before minutes of work
        if path:
            check_output_file(path, flag)
    report = ablate_store(a.store, a.ablate, templates=a.templates, device=a.device, batch_videos=a.batch_videos,
                          max_videos=a.max_videos, semantics=a.semantics, kernels=a.kernels,
                          include_retired=a.include_retired, progress=not a.quiet, questions=a.questions)
    print(json.dumps(report, indent=1) if a.json else format_ablation(report))
    if a.out:
        print(f"wrote {write_report(report, a.out)}", file=sys.stderr if a.json else sys.stdout)
    if a.questions:
        print(f"wrote {a.questions}: {report['total']['with_step']:,} questions", file=sys.stderr if a.json else sys.stdout)
    return 0


def _stats_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pool", help="a pool folder written by tensorqa generate")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


@command("stats", "questions per template (beside AGQA's Table 14), answer distributions, steps", _stats_arguments)
def run_stats(a: argparse.Namespace) -> int:
    if clevr_commands.is_clevr_input(a.pool):
        return clevr_commands.run_stats(a)
    from tensorqa.agqa.stats import format_stats, pool_stats
    from tensorqa.foils.commands import foil_stats, format_foil_stats, is_foil_set

    if is_foil_set(a.pool):  # a caption/foil set from tensorqa foils
        s = foil_stats(a.pool)
        print(json.dumps(s, indent=1) if a.json else format_foil_stats(s))
        return 0
    s = pool_stats(a.pool)
    print(json.dumps(s, indent=1) if a.json else format_stats(s))
    return 0
