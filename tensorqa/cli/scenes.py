"""Commands on scene stores: ``pack``, ``info``, ``export-agqa``."""

from __future__ import annotations

import argparse
import json
import time

from tensorqa.cli.commands import command
from tensorqa.clevr import commands as clevr_commands
from tensorqa.errors import TensorQAError
from tensorqa.outputs import check_output_file


def _pack_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="output store (.h5); written atomically")
    src = p.add_argument_group("source (default: the embedded synthetic dataset)")
    src.add_argument("--videos", type=int, default=None, help="number of default videos (default 9601, AGQA's count)")
    src.add_argument("--seed", type=int, default=None, help="seed of the default / Charades-grounded synthesis and of "
                     "the --clevr sampler (default 0)")
    src.add_argument("--charades", nargs="+", metavar="CSV", help="Charades_v1_{train,test}.csv files")
    src.add_argument("--action-genome", metavar="DIR", help="folder with object_bbox_and_relationship.pkl and person_bbox.pkl "
                     "(pickles are not trusted: read with a restricted unpickler, plain data and numpy arrays only)")
    src.add_argument("--fps", type=float, default=None, help="Action Genome frame rate (default 24)")
    src.add_argument("--agqa-stsgs", nargs="+", metavar="PKL", help="AGQA_{train,test}_stsgs.pkl files (not trusted: "
                     "read with a restricted unpickler that loads plain data only and runs nothing in the file)")
    aug = p.add_argument_group("augmentation rules (AGQA §3.1), all on by default")
    for rule in ("merge-synonyms", "adjust-boundaries", "verb-relations", "entailments", "prune-single-object"):
        aug.add_argument(f"--no-{rule}", action="store_true", help=f"switch off {rule.replace('-', ' ')}")
    aug.add_argument("--overlap-margin", type=float, default=None, help="seconds an action may run into the next and be cut (default 1)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    clevr_commands.add_pack_arguments(p)
    p.set_defaults(clevr_split=None)  # given or not: see PACK_OPTIONS (resolved to its default, train, there)


AUGMENT_OPTIONS = ("--no-merge-synonyms", "--no-adjust-boundaries", "--no-verb-relations", "--no-entailments",
                   "--no-prune-single-object", "--overlap-margin")
# pack source -> the options that mean something for it; any other option given is refused, not ignored.
# AGQA's stsgs graphs are augmented already (pack applies no rule to them); Action Genome's relations are
# read, not drawn (no seed); a scene file holds its own split and scenes
PACK_OPTIONS = {
    "the default data": ("--videos", "--seed", *AUGMENT_OPTIONS),
    "--charades": ("--seed", *AUGMENT_OPTIONS),
    "--action-genome": ("--charades", "--fps", *AUGMENT_OPTIONS),
    "--agqa-stsgs": (),
    "--clevr": ("--seed", "--clevr-split"),
    "--clevr-scenes": (),
}


def _given_pack_options(a: argparse.Namespace) -> list[str]:
    """The source-dependent options given on the command line, in PACK_OPTIONS' terms."""
    given = {"--videos": a.videos is not None, "--seed": a.seed is not None, "--fps": a.fps is not None,
             "--charades": bool(a.charades), "--action-genome": bool(a.action_genome),
             "--agqa-stsgs": bool(a.agqa_stsgs), "--clevr-split": a.clevr_split is not None,
             "--overlap-margin": a.overlap_margin is not None}
    for flag in AUGMENT_OPTIONS[:-1]:
        given[flag] = getattr(a, flag[2:].replace("-", "_"))
    return [flag for flag, on in given.items() if on]


def _pack_source(a: argparse.Namespace) -> str:
    """The source a pack reads; an option that does not apply to it is refused (PACK_OPTIONS)."""
    if a.clevr is not None and a.clevr_scenes:
        raise TensorQAError("--clevr and --clevr-scenes: give one source")
    source = ("--clevr" if a.clevr is not None else "--clevr-scenes" if a.clevr_scenes else "--agqa-stsgs" if a.agqa_stsgs
              else "--action-genome" if a.action_genome else "--charades" if a.charades else "the default data")
    for flag in _given_pack_options(a):
        if flag != source and flag not in PACK_OPTIONS[source]:
            if source == "the default data":  # (only --fps, --clevr-split can reach here)
                raise TensorQAError(f"{flag} does not apply to the default data: it needs "
                                    f"{'--action-genome' if flag == '--fps' else '--clevr'}")
            hint = {"--agqa-stsgs": " (its graphs hold their own actions and are augmented already)",
                    "--clevr-scenes": " (the scene files hold their own scenes and split)"}.get(source, "")
            raise TensorQAError(f"{flag} does not apply with {source}{hint}: give only the options of one source "
                                "(tensorqa pack --help)")
    return source


@command("pack", "build a scene-graph store (HDF5) from the default data or real annotations", _pack_arguments)
def run_pack(a: argparse.Namespace) -> int:
    from tensorqa.agqa.options import check_seed
    from tensorqa.scenes.augment import AugmentConfig
    from tensorqa.scenes.pack import pack_action_genome, pack_agqa_stsgs, pack_charades, pack_default
    from tensorqa.threads import set_torch_threads

    set_torch_threads()

    source = _pack_source(a)
    a.seed = check_seed(0 if a.seed is None else a.seed)
    a.videos = 9601 if a.videos is None else a.videos
    a.clevr_split = a.clevr_split or "train"
    config = AugmentConfig(
        merge_synonyms=not a.no_merge_synonyms, adjust_boundaries=not a.no_adjust_boundaries,
        overlap_margin=1.0 if a.overlap_margin is None else a.overlap_margin, verb_relations=not a.no_verb_relations,
        entailments=not a.no_entailments, prune_single_object=not a.no_prune_single_object,
    )
    kw = dict(config=config, progress=not a.quiet)
    check_output_file(a.out, what="the store is a file (.h5)")  # before the inputs are read
    if source in ("--clevr", "--clevr-scenes"):
        return clevr_commands.run_pack(a)
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
    from tensorqa.threads import set_torch_threads

    set_torch_threads()

    with open_store(a.store) as s:
        info = store_info(s)
    print(json.dumps(info, indent=1) if a.json else format_info(info))
    return 0


def _export_agqa_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a store written by tensorqa pack")
    p.add_argument("--out", required=True, metavar="FILE.pkl", help="output pickle in AGQA's stsgs layout; written atomically")
    p.add_argument("--videos", nargs="+", metavar="ID", help="export only these videos (default: all)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


@command("export-agqa", "write scene graphs as an AGQA stsgs pickle, for AGQA program executors", _export_agqa_arguments)
def run_export_agqa(a: argparse.Namespace) -> int:
    from tensorqa.scenes.export_agqa import export_agqa
    from tensorqa.scenes.store import open_store
    from tensorqa.threads import set_torch_threads

    set_torch_threads()

    check_output_file(a.out, what="the output is a pickle file")  # before the graphs are built
    t0 = time.perf_counter()
    with open_store(a.store) as s:
        out = export_agqa(s, a.out, video_ids=a.videos, progress=not a.quiet)
        count = len(s) if a.videos is None else len(set(a.videos))
    print(f"wrote {out}: {count:,} video{'' if count == 1 else 's'}, {out.stat().st_size / 2**20:.1f} MiB in {time.perf_counter() - t0:.1f} s")
    return 0
