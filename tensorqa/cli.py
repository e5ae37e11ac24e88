"""The ``tensorqa`` command line. One small function per subcommand; user errors print one line.

    tensorqa pack [--videos N] [--seed S] --out FILE             embedded default dataset
    tensorqa pack --charades CSV [CSV ...] --out FILE            real Charades videos and actions
    tensorqa pack --action-genome DIR --charades CSV --out FILE  Action Genome + Charades
    tensorqa pack --agqa-stsgs PKL [PKL ...] --out FILE          AGQA's augmented graphs
    tensorqa info FILE                                           what a store holds
    tensorqa export-agqa FILE --out G.pkl                        AGQA stsgs pickle layout
    tensorqa generate FILE --out DIR                             AGQA's unbalanced question pool
    tensorqa stats DIR                                           per-template counts vs Table 14
    tensorqa ablate FILE --ablate before=while                   answers that change without a step
    tensorqa balance DIR --out DIR [--preset agqa|agqa2]         AGQA's balancing
    tensorqa split DIR --out DIR                                 compositional split fields
    tensorqa decompose DIR --out DIR [--store FILE]              AGQA-Decomp question DAGs, exact answers
    tensorqa evaluate --hierarchies DIR --predictions F          AGQA-Decomp metrics
    tensorqa baseline ... --kind most-likely|random --out F      reference predictions
    tensorqa show FILE VIDEO [--pool DIR --question ID] --out F  a video's timeline, a question's grounding
    tensorqa report DIR [--compare DIR] --out DIR                HTML report with plots, summary.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Callable

from tensorqa.clevr import commands as clevr_commands
from tensorqa.errors import TensorQAError
from tensorqa.outputs import check_output_file, check_output_folder

# name -> (add_arguments, run, help)
COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]] = {}


def command(name: str, help: str, arguments: Callable[[argparse.ArgumentParser], None]):
    """Register a subcommand: a decorator on its run function, with its argument builder."""

    def wrap(run):
        COMMANDS[name] = (arguments, run, help)
        return run

    return wrap


def _pack_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="output store (.h5); written atomically")
    src = p.add_argument_group("source (default: the embedded synthetic dataset)")
    src.add_argument("--videos", type=int, default=9601, help="number of default videos (default 9601, AGQA's count)")
    src.add_argument("--seed", type=int, default=0, help="seed of the default / Charades-grounded synthesis")
    src.add_argument("--charades", nargs="+", metavar="CSV", help="Charades_v1_{train,test}.csv files")
    src.add_argument("--action-genome", metavar="DIR", help="folder with object_bbox_and_relationship.pkl and person_bbox.pkl "
                     "(pickles are not trusted: read with a restricted unpickler, plain data and numpy arrays only)")
    src.add_argument("--fps", type=float, default=None, help="Action Genome frame rate (default 24)")
    src.add_argument("--agqa-stsgs", nargs="+", metavar="PKL", help="AGQA_{train,test}_stsgs.pkl files (not trusted: "
                     "read with a restricted unpickler that loads plain data only and runs nothing in the file)")
    aug = p.add_argument_group("augmentation rules (AGQA §3.1), all on by default")
    for rule in ("merge-synonyms", "adjust-boundaries", "verb-relations", "entailments", "prune-single-object"):
        aug.add_argument(f"--no-{rule}", action="store_true", help=f"switch off {rule.replace('-', ' ')}")
    aug.add_argument("--overlap-margin", type=float, default=1.0, help="seconds an action may run into the next and be cut (default 1)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    clevr_commands.add_pack_arguments(p)


@command("pack", "build a scene-graph store (HDF5) from the default data or real annotations", _pack_arguments)
def run_pack(a: argparse.Namespace) -> int:
    from tensorqa.scenes.augment import AugmentConfig
    from tensorqa.scenes.pack import pack_action_genome, pack_agqa_stsgs, pack_charades, pack_default

    config = AugmentConfig(
        merge_synonyms=not a.no_merge_synonyms, adjust_boundaries=not a.no_adjust_boundaries,
        overlap_margin=a.overlap_margin, verb_relations=not a.no_verb_relations,
        entailments=not a.no_entailments, prune_single_object=not a.no_prune_single_object,
    )
    kw = dict(config=config, progress=not a.quiet)
    check_output_file(a.out, what="the store is a file (.h5)")  # before the inputs are read
    if clevr_commands.wants_clevr_pack(a):
        return clevr_commands.run_pack(a)
    if a.fps is not None and not a.action_genome:
        raise TensorQAError("--fps applies to --action-genome frame numbers only")
    t0 = time.perf_counter()
    if a.agqa_stsgs:
        out = pack_agqa_stsgs(a.agqa_stsgs, a.out, **kw)
    elif a.action_genome:
        if not a.charades:
            raise TensorQAError("--action-genome needs --charades CSV (the action intervals of the same videos)")
        out = pack_action_genome(a.action_genome, a.charades, a.out, fps=a.fps, **kw)
    elif a.charades:
        out = pack_charades(a.charades, a.out, seed=a.seed, **kw)
    else:
        out = pack_default(a.out, videos=a.videos, seed=a.seed, **kw)
    from tensorqa.scenes.store import open_store

    with open_store(out) as s:
        print(f"wrote {out}: {len(s):,} videos, {int(s.num_frames.sum()):,} keyframes, "
              f"{out.stat().st_size / 2**20:.1f} MiB in {time.perf_counter() - t0:.1f} s")
    return 0



def _info_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a store written by tensorqa pack")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


@command("info", "summarize a store: videos, keyframes, densities per object / relation / action", _info_arguments)
def run_info(a: argparse.Namespace) -> int:
    from tensorqa.scenes.info import format_info, store_info
    from tensorqa.scenes.store import open_store

    with open_store(a.store) as s:
        info = store_info(s)
    print(json.dumps(info, indent=1) if a.json else format_info(info))
    return 0



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
    from tensorqa.engine.semantics import PRESETS
    from tensorqa.writers import pool_fact

    overrides = {"seed": a.seed, "temporal_labels": not a.no_temporal_labels, "structural": not a.no_structural,
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
    p.add_argument("--max-videos", type=int, default=None, help="only the first N videos (scenes) of the store")
    p.add_argument("--jobs", type=_jobs, default=1,
                   help="shard processes to run side by side on this machine (default 1; 'auto': one per core, "
                        "as many as the memory holds; rendering and writing use one core per process, GPU or not); "
                        "same records as one process")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads per process (default: torch's choice, or cores / jobs with --jobs; "
                        "use 1 per process when running shards side by side)")
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

    if is_static_store(a.store):
        a.fmt = a.fmt or "clevr-json"
        return clevr_commands.run_generate(a)
    if a.fmt == "clevr-json" or a.semantics == "clevr":
        raise TensorQAError(f"{a.store}: not a CLEVR store: --format clevr-json and --semantics clevr need one")
    a.fmt = a.fmt or "parquet"
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

    s = pool_stats(a.pool)
    print(json.dumps(s, indent=1) if a.json else format_stats(s))
    return 0


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


def _export_agqa_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a store written by tensorqa pack")
    p.add_argument("--out", required=True, metavar="FILE.pkl", help="output pickle in AGQA's stsgs layout; written atomically")
    p.add_argument("--videos", nargs="+", metavar="ID", help="export only these videos (default: all)")


@command("export-agqa", "write scene graphs as an AGQA stsgs pickle, for AGQA program executors", _export_agqa_arguments)
def run_export_agqa(a: argparse.Namespace) -> int:
    from tensorqa.scenes.export_agqa import export_agqa
    from tensorqa.scenes.store import open_store

    check_output_file(a.out, what="the output is a pickle file")  # before the graphs are built
    t0 = time.perf_counter()
    with open_store(a.store) as s:
        out = export_agqa(s, a.out, video_ids=a.videos)
        count = len(s) if a.videos is None else len(set(a.videos))
    print(f"wrote {out}: {count:,} video{'' if count == 1 else 's'}, {out.stat().st_size / 2**20:.1f} MiB in {time.perf_counter() - t0:.1f} s")
    return 0



def _show_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a scene store written by tensorqa pack")
    p.add_argument("video", help="the video id")
    p.add_argument("--pool", metavar="DIR", help="the pool holding --question")
    p.add_argument("--question", metavar="ID", help="a question id of the video (<video>-<n>): its window and grounding")
    p.add_argument("--semantics", choices=("agqa", "strict"), default="agqa", help="the semantics the pool was generated with")
    p.add_argument("--out", required=True, metavar="FILE", help="FILE.png (the figure) or FILE.html (one self-contained page)")


@command("show", "draw a video's timeline (actions, keyframes, relations) with a question's window and grounding",
         _show_arguments)
def run_show(a: argparse.Namespace) -> int:
    from tensorqa.viz.plotting import pyplot

    pyplot("show")  # the extra, before any reading
    from tensorqa.viz.show import show

    data = show(a.store, a.video, a.out, pool=a.pool, question=a.question, semantics=a.semantics)
    g = data["grounding"]
    print(f"wrote {a.out}: {len(data['bars'])} action instances, {len(data['ticks'])} keyframes, "
          f"{len(data['cells'])} relation cells" + (f"; {len(g['keyframes'])} grounded keyframes" if g else ""))
    return 0


def _report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pool", help="a pool (Parquet shards) from tensorqa generate, balance or split")
    p.add_argument("--compare", metavar="POOL2", help="a second pool shown beside it (e.g. the unbalanced input of a balanced pool)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder: report.html (self-contained) and summary.json")


@command("report", "an HTML report with plots of a pool beside AGQA's Table 14 (and a second pool), plus summary.json",
         _report_arguments)
def run_report(a: argparse.Namespace) -> int:
    from tensorqa.viz.plotting import pyplot

    pyplot("report")
    from tensorqa.viz.report import report

    t0 = time.perf_counter()
    result = report(a.pool, a.out, compare=a.compare)
    print(f"wrote {a.out}/report.html and summary.json: {result['pool']['stats']['questions']:,} questions"
          + (f" beside {result['compare']['stats']['questions']:,}" if result["compare"] else "")
          + f" in {time.perf_counter() - t0:.1f} s")
    return 0



def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tensorqa", description="Compile compositional QA benchmarks from scene graphs.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (add_arguments, _, help) in COMMANDS.items():
        add_arguments(sub.add_parser(name, help=help, description=help))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command][1](args)
    except TensorQAError as e:
        print(f"tensorqa: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tensorqa: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``tensorqa stats pool | head``): stop quietly
        # the interpreter flushes stdout again at exit, which would raise once more: point it at nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a command killed by it
    except OSError as e:  # the file system said no: a path that is a file, not writable, a full disk
        said = f"{e.filename}: {e.strerror}" if e.filename is not None and e.strerror else str(e)
        print(f"tensorqa: error: {said}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
