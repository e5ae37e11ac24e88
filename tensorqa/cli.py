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
