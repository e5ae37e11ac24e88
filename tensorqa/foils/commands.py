"""The CLI functions of ``tensorqa foils`` and ``tensorqa score-foils`` (registered in tensorqa/cli/__init__.py)."""

from __future__ import annotations

import argparse
import json
import os

from tensorqa.errors import TensorQAError
from tensorqa.outputs import atomic_file
from tensorqa.outputs import check_output_file


def load_json(path: str, what: str):
    from tensorqa.limits import parse_json

    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise TensorQAError(f"{what} {path}: no such file") from None
    except OSError as err:
        raise TensorQAError(f"{what} {path}: {err.strerror or err}") from None
    return parse_json(data, f"{what} {path}", "the file")


def write_json_atomically(path: str | os.PathLike, obj) -> None:
    """Write next to the target, then rename: a failure leaves the earlier file whole."""
    with atomic_file(path, "w", encoding="utf-8") as f:  # a failure names ``path``
        json.dump(obj, f, indent=1)


def score_foils_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scores", metavar="SCORES.json",
                   help='a JSON list of {"id", "caption_score", "foil_score"} (probabilities in [0, 1])')
    p.add_argument("--foils", metavar="DIR", help="the foil set (tensorqa foils --out DIR): metrics per phenomenon too")
    p.add_argument("--logits", action="store_true", help="the scores are raw match logits, not probabilities")
    p.add_argument("--out", required=True, metavar="METRICS.json", help="output file (written atomically)")


def run_score_foils(a: argparse.Namespace) -> int:
    from tensorqa.foils.metrics import read_scores, score

    check_output_file(a.out)
    ids, caption, foil = read_scores(load_json(a.scores, "scores"), f"scores {a.scores}", logits=a.logits)
    groups = None
    if a.foils:
        from tensorqa.foils.records import read_instruments

        groups = read_instruments(a.foils)
        unknown = [i for i in ids if i not in groups]
        if unknown:
            raise TensorQAError(f"scores {a.scores}: {len(unknown)} ids not in the foil set {a.foils}, "
                                f"e.g. {unknown[0]!r}")
    result = score(ids, caption, foil, logits=a.logits, groups=groups)
    write_json_atomically(a.out, result)
    v, m = result["valse"], result["vilma"]
    r2 = lambda x: "n/a" if x is None else f"{x:.2f}"  # the JSON keeps full precision
    print(f"wrote {a.out}: {len(ids):,} pairs; valse acc_r {r2(v['acc_r'])} (N {v['counts']['counted']:,}); "
          f"vilma acc_r {r2(m['acc_r'])}, AUROC {r2(m['auroc'])}")
    return 0


def foils_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a scene store (.h5) from tensorqa pack: videos, or CLEVR scenes (pack --clevr N)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder: valse/<instrument>.json and pairs.parquet")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (same seed, same pairs, whatever the batch size)")
    p.add_argument("--max-videos", type=int, help="only the first N videos (or scenes)")
    p.add_argument("--batch-videos", "--batch", type=int, default=1024, help="videos (or scenes) per tensor batch")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def open_scene_store(path: str):
    """A video store or a static-scene (CLEVR) store, whichever the file is (as ``tensorqa generate``)."""
    from tensorqa.scenes.static_store import StaticStore, is_static_store
    from tensorqa.scenes.store import open_store

    return StaticStore(path) if is_static_store(path) else open_store(path)


def run_foils(a: argparse.Namespace) -> int:
    import time

    from tensorqa.foils.baseline import baseline_summary
    from tensorqa.foils.generate import generate_pairs, is_static
    from tensorqa.foils.records import write_foil_set
    from tensorqa.outputs import check_output_folder
    from tensorqa.threads import set_torch_threads

    from tensorqa.agqa.options import check_seed

    check_output_folder(a.out)
    check_seed(a.seed)
    if a.max_videos is not None and a.max_videos < 1:
        raise TensorQAError(f"--max-videos must be at least 1, got {a.max_videos}")
    if a.batch_videos < 1:
        raise TensorQAError(f"--batch-videos must be at least 1, got {a.batch_videos}")
    set_torch_threads()
    t0 = time.perf_counter()
    with open_scene_store(a.store) as store:
        kind = "static" if is_static(store) else "video"
        pairs = generate_pairs(store, seed=a.seed, max_videos=a.max_videos, batch_videos=a.batch_videos,
                               progress=not a.quiet)
        scenes = len(store) if a.max_videos is None else min(a.max_videos, len(store))
    seconds = time.perf_counter() - t0
    summary = baseline_summary([p.instrument for p in pairs], [p.phenomenon for p in pairs], [p.id for p in pairs],
                               [p.caption for p in pairs], [p.foil for p in pairs])
    meta = {"store": os.path.basename(a.store), "scene_kind": kind, "scenes": scenes, "videos": scenes,
            "seed": a.seed, "generation_s": round(seconds, 2), **summary}
    write_foil_set(pairs, a.out, meta, progress=not a.quiet)
    what = "CLEVR scenes" if kind == "static" else "videos"
    print(f"wrote {a.out}: {len(pairs):,} caption/foil pairs from {scenes:,} {what} in {seconds:.1f} s")
    return 0


def is_foil_set(path: str) -> bool:
    from tensorqa.foils.records import PARQUET

    return os.path.isfile(os.path.join(path, PARQUET)) and os.path.isdir(os.path.join(path, "valse"))


def foil_stats(folder: str) -> dict:
    """Pairs per instrument and per phenomenon, the text-only unigram baseline per instrument and per
    phenomenon (fitted and cross-fitted), and the notes on instruments that are not near 50 % by design."""
    from tensorqa.foils.baseline import baseline_summary
    from tensorqa.foils.records import read_pairs_table

    t = read_pairs_table(folder)
    col = t.column
    return baseline_summary(col("instrument").to_pylist(), col("phenomenon").to_pylist(), col("id").to_pylist(),
                            col("caption").to_pylist(), col("foil").to_pylist())


def format_foil_stats(s: dict) -> str:
    lines = [f"{s['pairs']:,} caption/foil pairs; text-only unigram acc_r % (fitted on the set / cross-fitted)"]
    for by, suffix in (("instrument", ""), ("phenomenon", "_per_phenomenon")):
        base, cross = s[f"text_only_unigram_acc_r{suffix}"], s[f"text_only_unigram_acc_r{suffix}_crossfit"]
        lines.append(f"{by:<24}{'pairs':>8}{'unigram':>10}{'crossfit':>10}")
        lines += [f"{name:<24}{n:>8,}{base[name]:>10}{cross[name]:>10}" for name, n in s[f"pairs_per_{by}"].items()]
        if by == "instrument":
            lines.append(f"{'overall':<24}{s['pairs']:>8,}{base['overall']:>10}{cross['overall']:>10}")
    lines += [f"note: {name}: {text}" for name, text in s.get("notes", {}).items()]
    return "\n".join(lines)
