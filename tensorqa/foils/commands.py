"""The CLI functions of ``tensorqa foils`` and ``tensorqa score-foils`` (registered in tensorqa/cli.py)."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from tensorqa.errors import TensorQAError
from tensorqa.outputs import check_output_file


def load_json(path: str, what: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise TensorQAError(f"{what} {path}: no such file") from None
    except (OSError, ValueError) as err:  # UnicodeDecodeError is a ValueError
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise TensorQAError(f"{what} {path}: {first}") from None


def write_json_atomically(path: str | os.PathLike, obj) -> None:
    """Write next to the target, then rename: a failure leaves the earlier file whole."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    print(f"wrote {a.out}: {len(ids):,} pairs; valse acc_r {v['acc_r']} (N {v['counts']['counted']:,}); "
          f"vilma acc_r {m['acc_r']}, AUROC {m['auroc']}")
    return 0


def foils_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("store", help="a scene store (.h5) from tensorqa pack")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder: valse/<instrument>.json and pairs.parquet")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (same seed, same pairs, whatever the batch size)")
    p.add_argument("--max-videos", type=int, help="only the first N videos")
    p.add_argument("--batch-videos", type=int, default=1024, help="videos per tensor batch")


def run_foils(a: argparse.Namespace) -> int:
    raise TensorQAError("tensorqa foils: not built yet")
