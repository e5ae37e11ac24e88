"""A small statistics profile of the Charades annotations, the seed of the synthetic dataset.

``derive_profile`` condenses the Charades v1 CSVs into a JSON-sized dict; ``data/charades_profile.json``
is the one for the public train and test CSVs, so the synthetic dataset needs no download::

    python -m tensorqa.scenes.profile Charades_v1_train.csv Charades_v1_test.csv --out data/charades_profile.json

Keys (3 decimals; ``c`` indexes the 157 classes): num_videos, num_intervals, clipped (intervals fixed
into [0, length]), actions_per_video int[k], length_levels / length_quantiles, quantile_levels (0,
0.1, ..., 1), class_frequency[c], class_videos[c], duration_quantiles[c], start_quantiles[c] (of start
/ length), cooccurrence ``[a, b, videos]`` of the most frequent class pairs and its coverage,
overlap_fraction, repeat_fraction, shared_interval_fraction (same (start, end) as another instance:
annotators often mark related actions with one interval), scene_objects (per AG class, videos listing
an object no action uses) and scene_objects_per_video int[k].
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
from collections import Counter
from importlib import resources
from itertools import combinations
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.outputs import write_atomic
from tensorqa.scenes.vocab import NO_OBJECT, vocab

PROFILE_FORMAT = "tensorqa-charades-profile/1"
NUM_CLASSES = 157
QUANTILE_LEVELS = tuple(round(k / 10, 1) for k in range(11))
LENGTH_LEVELS = tuple(round(k / 100, 2) for k in range(101))
TOP_PAIRS = 2500  # co-occurring class pairs kept; covers most of the pair mass
REQUIRED_COLUMNS = ("id", "objects", "actions", "length")

# Charades object words (the CSV ``objects`` column) -> Action Genome object class. Words not listed
# (stove, sink, wall, ...) have no AG class and are ignored. Written from the word list of the public
# CSVs: AG's slash names, their parts, plurals and everyday synonyms.
_AG_WORDS = {
    "bag": "bag backpack bags purse",
    "bed": "bed",
    "blanket": "blanket blankets",
    "book": "book books",
    "box": "box boxes",
    "broom": "broom",
    "chair": "chair chairs",
    "closetcabinet": "closet/cabinet closet cabinet cabinets wardrobe cupboard",
    "clothes": "clothes clothing jacket shirt sweater coat pants",
    "cupglassbottle": "cup/glass/bottle cup glass bottle mug cups glasses bottles",
    "dish": "dish dishes plate plates bowl",
    "door": "door doors",
    "doorknob": "doorknob",
    "doorway": "doorway",
    "floor": "floor",
    "food": "food bread chips",
    "groceries": "groceries",
    "laptop": "laptop computer",
    "light": "light lights",
    "medicine": "medicine",
    "mirror": "mirror",
    "papernotebook": "paper/notebook paper notebook homework papers",
    "phonecamera": "phone/camera phone camera",
    "picture": "picture pictures",
    "pillow": "pillow pillows",
    "refrigerator": "refrigerator fridge",
    "sandwich": "sandwich",
    "shelf": "shelf shelves",
    "shoe": "shoe shoes",
    "sofacouch": "sofa/couch sofa couch",
    "table": "table desk",
    "television": "television tv",
    "towel": "towel towels",
    "vacuum": "vacuum",
    "window": "window windows",
}
CHARADES_OBJECT_CLASS = {word: ag for ag, words in _AG_WORDS.items() for word in words.split()}


def object_classes(words: Iterable[str]) -> list[str]:
    """AG object class names (sorted, distinct) of Charades object words; unknown words are dropped."""
    return sorted({CHARADES_OBJECT_CLASS[w] for w in (w.strip().lower() for w in words) if w in CHARADES_OBJECT_CLASS})


def _r(x: float) -> float:
    return round(float(x), 3)


def _quantiles(values: Sequence[float], levels: Sequence[float]) -> list[float]:
    if len(values) == 0:
        return [0.0] * len(levels)
    return [_r(q) for q in np.quantile(np.asarray(values, dtype=np.float64), levels)]


def _read_rows(path: Path) -> list[dict[str, str]]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or ())]
            if missing:
                raise TensorQAError(f"{path}: not a Charades CSV, missing column(s) {', '.join(missing)}")
            return list(reader)
    except OSError as e:
        raise TensorQAError(f"{path}: cannot read ({e.strerror or e})") from None


def _parse_actions(text: str, path: Path, row: int) -> list[tuple[int, float, float]]:
    out = []
    for item in filter(None, (s.strip() for s in text.split(";"))):
        parts = item.split()
        try:
            cls, start, end = parts
            c = int(cls[1:]) if cls[:1] == "c" else -1
            start_s, end_s = float(start), float(end)
        except ValueError:
            raise TensorQAError(f"{path}: row {row}: actions entry {item!r} is not 'cNNN start end'") from None
        if not 0 <= c < NUM_CLASSES:
            raise TensorQAError(f"{path}: row {row}: unknown action class {cls!r}")
        out.append((c, start_s, end_s))
    return out


def _clip(raw_s: np.ndarray, raw_e: np.ndarray, length: float, clipped: dict) -> tuple[np.ndarray, np.ndarray]:
    """Intervals float64[K] clipped to [0, length] with end >= start; ``clipped`` counts each fix."""
    clipped["end_before_start"] += int((raw_e < raw_s).sum())
    clipped["end_after_length"] += int((raw_e > length).sum())
    clipped["start_after_length"] += int((raw_s > length).sum())
    s = np.clip(raw_s, 0, length)
    return s, np.maximum(np.clip(raw_e, 0, length), s)


def _overlapping(s: np.ndarray, e: np.ndarray) -> int:
    """How many intervals overlap another with positive length (max(starts) < min(ends))."""
    if len(s) < 2:
        return 0
    inter = np.minimum(e[:, None], e[None, :]) > np.maximum(s[:, None], s[None, :])
    np.fill_diagonal(inter, False)
    return int(inter.any(1).sum())


def derive_profile(csv_paths: Iterable[str | Path]) -> dict:
    """The statistics profile (a JSON-ready dict of lists, ints and floats) of Charades CSVs."""
    paths = [Path(p) for p in csv_paths]
    if not paths:
        raise TensorQAError("derive_profile needs at least one Charades CSV")
    per_video_counts: list[int] = []
    lengths: list[float] = []
    durations: list[list[float]] = [[] for _ in range(NUM_CLASSES)]
    starts: list[list[float]] = [[] for _ in range(NUM_CLASSES)]
    freq = np.zeros(NUM_CLASSES, dtype=np.int64)
    vids = np.zeros(NUM_CLASSES, dtype=np.int64)
    pairs: Counter = Counter()
    scene_objects: Counter = Counter()
    scene_objects_per_video: Counter = Counter()
    clipped = {"end_before_start": 0, "end_after_length": 0, "start_after_length": 0}
    overlapping = repeated = shared = 0
    # AG class of each action's object, to tell scene objects from action objects
    v = vocab()
    action_object = [v.objects[o] if o != NO_OBJECT else None for o in v.action_object]

    for path in paths:
        for row, rec in enumerate(_read_rows(path), start=2):  # row 1 is the header
            try:
                length = float(rec["length"])
            except ValueError:
                raise TensorQAError(f"{path}: row {row}: length {rec['length']!r} is not a number") from None
            acts = _parse_actions(rec["actions"] or "", path, row)
            lengths.append(length)
            per_video_counts.append(len(acts))
            cls = np.array([a[0] for a in acts], dtype=np.int64)
            raw_s = np.array([a[1] for a in acts], dtype=np.float64)
            raw_e = np.array([a[2] for a in acts], dtype=np.float64)
            s, e = _clip(raw_s, raw_e, length, clipped)
            for c, d, st in zip(cls.tolist(), (e - s).tolist(), (s / length if length > 0 else s * 0).tolist()):
                durations[c].append(d)
                starts[c].append(st)
            np.add.at(freq, cls, 1)
            distinct = sorted(set(cls.tolist()))
            vids[distinct] += 1
            repeated += len(acts) - len(distinct)
            pairs.update(combinations(distinct, 2))
            overlapping += _overlapping(s, e)
            spans = Counter((a[1], a[2]) for a in acts)
            shared += sum(spans[(a[1], a[2])] > 1 for a in acts)
            used = {action_object[c] for c in distinct}
            extra = [o for o in object_classes((rec["objects"] or "").split(";")) if o not in used]
            scene_objects.update(extra)
            scene_objects_per_video[len(extra)] += 1

    n_int = int(freq.sum())
    top = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_PAIRS]
    total_pairs = sum(pairs.values())
    return {
        "format": PROFILE_FORMAT,
        "source": [p.name for p in paths],
        "num_videos": len(lengths),
        "num_intervals": n_int,
        "clipped": clipped,
        "actions_per_video": np.bincount(per_video_counts).tolist(),
        "length_levels": list(LENGTH_LEVELS),
        "length_quantiles": _quantiles(lengths, LENGTH_LEVELS),
        "quantile_levels": list(QUANTILE_LEVELS),
        "class_frequency": freq.tolist(),
        "class_videos": vids.tolist(),
        "duration_quantiles": [_quantiles(d, QUANTILE_LEVELS) for d in durations],
        "start_quantiles": [_quantiles(st, QUANTILE_LEVELS) for st in starts],
        "cooccurrence": [[a, b, n] for (a, b), n in top],
        "cooccurrence_coverage": _r(sum(n for _, n in top) / total_pairs) if total_pairs else 1.0,
        "overlap_fraction": _r(overlapping / n_int) if n_int else 0.0,
        "repeat_fraction": _r(repeated / n_int) if n_int else 0.0,
        "shared_interval_fraction": _r(shared / n_int) if n_int else 0.0,
        "scene_objects": {o: scene_objects[o] for o in sorted(scene_objects)},
        "scene_objects_per_video": [scene_objects_per_video[k] for k in range(max(scene_objects_per_video) + 1)],
    }


def dump_profile(profile: dict) -> str:
    """The profile as compact JSON, one top-level key per line (diff-friendly, small)."""
    body = ",\n".join(f"{json.dumps(k)}:{json.dumps(profile[k], separators=(',', ':'))}" for k in profile)
    return "{\n" + body + "\n}\n"


@functools.cache
def _default_profile_text() -> str:
    return resources.files("tensorqa.data").joinpath("charades_profile.json").read_text()


def default_profile() -> dict:
    """The profile shipped in ``data/charades_profile.json`` (a fresh dict each call)."""
    return json.loads(_default_profile_text())


def load_profile(path: str | Path | None = None) -> dict:
    """A profile from a JSON file, or the shipped one when ``path`` is None."""
    if path is None:
        return default_profile()
    try:
        profile = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise TensorQAError(f"{path}: cannot read profile ({e})") from None
    if not isinstance(profile, dict) or profile.get("format") != PROFILE_FORMAT:
        raise TensorQAError(f"{path}: not a {PROFILE_FORMAT} file")
    return profile


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tensorqa.scenes.profile",
                                     description="Derive the Charades statistics profile from the CSVs.")
    parser.add_argument("csv", nargs="+", help="Charades_v1_train.csv, Charades_v1_test.csv")
    parser.add_argument("--out", required=True, help="output JSON path")
    args = parser.parse_args(argv)
    try:
        text = dump_profile(derive_profile(args.csv))
        write_atomic(args.out, text)
    except TensorQAError as e:
        parser.exit(2, f"tensorqa: error: {e}\n")
    print(f"wrote {args.out} ({len(text.encode()) / 1024:.1f} KiB)")


if __name__ == "__main__":
    main()
