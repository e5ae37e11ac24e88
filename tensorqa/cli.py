"""The ``tensorqa`` command line. One small function per subcommand; user errors print one line.

    tensorqa pack [--videos N] [--seed S] --out FILE            embedded default dataset
    tensorqa pack --charades CSV [CSV ...] --out FILE           real Charades videos and actions
    tensorqa pack --action-genome DIR --charades CSV --out FILE  Action Genome + Charades
    tensorqa pack --agqa-stsgs PKL [PKL ...] --out FILE         AGQA's augmented graphs
    tensorqa info FILE
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Callable

from .errors import TensorQAError

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
    src.add_argument("--action-genome", metavar="DIR", help="folder with object_bbox_and_relationship.pkl and person_bbox.pkl")
    src.add_argument("--fps", type=float, default=None, help="Action Genome frame rate (default 24)")
    src.add_argument("--agqa-stsgs", nargs="+", metavar="PKL", help="AGQA_{train,test}_stsgs.pkl files")
    aug = p.add_argument_group("augmentation rules (AGQA §3.1), all on by default")
    for rule in ("merge-synonyms", "adjust-boundaries", "verb-relations", "entailments", "prune-single-object"):
        aug.add_argument(f"--no-{rule}", action="store_true", help=f"switch off {rule.replace('-', ' ')}")
    aug.add_argument("--overlap-margin", type=float, default=1.0, help="seconds an action may run into the next and be cut (default 1)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


@command("pack", "build a scene-graph store (HDF5) from the default data or real annotations", _pack_arguments)
def run_pack(a: argparse.Namespace) -> int:
    from .augment import AugmentConfig
    from .pack import pack_action_genome, pack_agqa_stsgs, pack_charades, pack_default

    config = AugmentConfig(
        merge_synonyms=not a.no_merge_synonyms, adjust_boundaries=not a.no_adjust_boundaries,
        overlap_margin=a.overlap_margin, verb_relations=not a.no_verb_relations,
        entailments=not a.no_entailments, prune_single_object=not a.no_prune_single_object,
    )
    kw = dict(config=config, progress=not a.quiet)
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
    from .store import open_store

    with open_store(out) as s:
        print(f"wrote {out}: {len(s):,} videos, {int(s.num_frames.sum()):,} keyframes, "
              f"{out.stat().st_size / 2**20:.1f} MiB in {time.perf_counter() - t0:.1f} s")
    return 0



def _info_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a store written by tensorqa pack")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


@command("info", "summarize a store: videos, keyframes, densities per object / relation / action", _info_arguments)
def run_info(a: argparse.Namespace) -> int:
    from .info import format_info, store_info
    from .store import open_store

    with open_store(a.store) as s:
        info = store_info(s)
    print(json.dumps(info, indent=1) if a.json else format_info(info))
    return 0



def _generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a scene store written by tensorqa pack")
    p.add_argument("--out", required=True, help="output folder (Hugging Face layout: data/<split>-*.parquet)")
    p.add_argument("--templates", nargs="+", metavar="NAME", help="templates to generate (default: all active AGQA templates)")
    p.add_argument("--include-retired", action="store_true", help="also generate actExists (retired in AGQA 2.0)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    p.add_argument("--batch-videos", type=int, default=256, help="videos evaluated together (default 256)")
    p.add_argument("--num-shards", type=int, default=None, help="shards (default: torchrun's WORLD_SIZE or 1)")
    p.add_argument("--shard-index", type=int, default=None, help="this shard (default: torchrun's RANK or 0)")
    p.add_argument("--format", dest="fmt", choices=("parquet", "agqa-json"), default="parquet")
    p.add_argument("--seed", type=int, default=0, help="seed of question-frame choice")
    p.add_argument("--semantics", choices=("agqa", "strict"), default="agqa", help="AGQA's quirks (default) or the clean reading")
    p.add_argument("--max-videos", type=int, default=None, help="only the first N videos of the store")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


@command("generate", "generate AGQA's unbalanced question pool from a scene store", _generate_arguments)
def run_generate(a: argparse.Namespace) -> int:
    from .generate import generate

    stats = generate(a.store, a.out, templates=a.templates, device=a.device, batch_videos=a.batch_videos,
                     num_shards=a.num_shards, shard_index=a.shard_index, fmt=a.fmt, seed=a.seed,
                     semantics=a.semantics, include_retired=a.include_retired, progress=not a.quiet,
                     max_videos=a.max_videos)
    if stats.get("skipped"):
        print(f"shard {stats['shard'] + 1}/{stats['num_shards']} of {a.out} is already complete: skipped")
        return 0
    q, secs = stats["questions"], stats["seconds"]
    print(f"wrote {q:,} questions for {stats['videos']:,} videos to {a.out} in {secs:.1f} s "
          f"({q / max(secs, 1e-9):,.0f} questions/s)")
    return 0


def _stats_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pool", help="a pool folder written by tensorqa generate")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


@command("stats", "questions per template (beside AGQA's Table 14), answer distributions, steps", _stats_arguments)
def run_stats(a: argparse.Namespace) -> int:
    from .generate.stats import format_stats, pool_stats

    s = pool_stats(a.pool)
    print(json.dumps(s, indent=1) if a.json else format_stats(s))
    return 0


def _evaluate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hierarchies", required=True, metavar="DIR", help="AGQA-Decomp folder: <video_id>.json files (+ isolated.json)")
    p.add_argument("--predictions", required=True, metavar="FILE",
                   help="JSON: the official [{csv_q_id, prediction}, ...] list or a {key: prediction} map")
    p.add_argument("--out", metavar="DIR", help="write summary.json and the CSV tables here")
    p.add_argument("--json", action="store_true", help="print summary.json instead of tables")


@command("evaluate", "score predictions on AGQA-Decomp hierarchies: accuracy, CA, RWR, Delta, IC", _evaluate_arguments)
def run_evaluate(a: argparse.Namespace) -> int:
    from .decomp.hierarchies import load_hierarchies
    from .decomp.metrics import evaluate_predictions, format_coverage, format_report, load_predictions, write_report

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
    from .decomp.baseline import baseline_predictions, pool_baseline_predictions, write_predictions

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
    return 0


def _export_agqa_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a store written by tensorqa pack")
    p.add_argument("--out", required=True, metavar="FILE.pkl", help="output pickle in AGQA's stsgs layout; written atomically")
    p.add_argument("--videos", nargs="+", metavar="ID", help="export only these videos (default: all)")


@command("export-agqa", "write scene graphs as an AGQA stsgs pickle, for AGQA program executors", _export_agqa_arguments)
def run_export_agqa(a: argparse.Namespace) -> int:
    from .export_agqa import export_agqa
    from .store import open_store

    t0 = time.perf_counter()
    with open_store(a.store) as s:
        out = export_agqa(s, a.out, video_ids=a.videos)
        count = len(s) if a.videos is None else len(set(a.videos))
    print(f"wrote {out}: {count:,} video{'' if count == 1 else 's'}, {out.stat().st_size / 2**20:.1f} MiB in {time.perf_counter() - t0:.1f} s")
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


if __name__ == "__main__":
    sys.exit(main())
