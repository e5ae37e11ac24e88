"""Charades annotation CSVs (``Charades_v1_{train,test}.csv``: one row per video, RFC 4180 quoting):
``id,...,objects,...,actions,length``; ``objects`` ``;``-separated, ``actions`` ``;``-separated
``cNNN start end`` (seconds), ``length`` in seconds. The train file has 7 intervals that end before
they start; ``reversed_intervals`` says "swap" (default), "drop" or "error".
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Union

from tensorqa.errors import TensorQAError
from tensorqa.limits import MAX_INSTANCES, MAX_SECONDS, check_name
from tensorqa.scenes.vocab import vocab

PathLike = Union[str, os.PathLike]

REQUIRED_COLUMNS = ("id", "actions", "length")
REVERSED_POLICIES = ("swap", "drop", "error")
SPLITS = ("train", "test")
_ACTION_ID = re.compile(r"c\d{3}")


@dataclass(frozen=True)
class CharadesVideo:
    """One row of a Charades CSV; actions: ``(class index, start s, end s)`` by (start, end, class)."""

    video_id: str
    split: str
    length_secs: float
    objects: tuple[str, ...]
    scene: str
    actions: tuple[tuple[int, float, float], ...]


def split_from_name(path: PathLike, split: str | None) -> str:
    """``"train"`` / ``"test"`` from the file name, else the given ``split``; error when neither tells."""
    name = Path(path).name.lower()
    if "train" in name:
        return "train"
    if "test" in name:
        return "test"
    if split is None:
        raise TensorQAError(f"{path}: cannot tell the split from the file name: it must contain 'train' or 'test' "
                            "(as Charades_v1_train.csv and Charades_v1_test.csv do); rename or copy the file")
    if split not in SPLITS:
        raise TensorQAError(f"{path}: split must be 'train' or 'test', not {split!r}")
    return split


def read_charades_csv(
    paths: PathLike | Iterable[PathLike],
    split: str | None = None,
    reversed_intervals: str = "swap",
) -> list[CharadesVideo]:
    """Read one or several Charades CSVs into :class:`CharadesVideo` rows, in file order.

    split: for files named neither train nor test; reversed_intervals: "swap" | "drop" | "error".
    A bad file, column, entry, class or repeated id is a TensorQAError naming file and line."""
    if reversed_intervals not in REVERSED_POLICIES:
        raise TensorQAError(f"reversed_intervals must be one of {REVERSED_POLICIES}, not {reversed_intervals!r}")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    videos: list[CharadesVideo] = []
    seen: dict[str, str] = {}  # video id -> "file:line" where it was first read
    for path in paths:
        for video, where in _read_one(Path(path), split, reversed_intervals):
            if video.video_id in seen:
                raise TensorQAError(f"{where}: video {video.video_id!r} already read at {seen[video.video_id]}")
            seen[video.video_id] = where
            videos.append(video)
    return videos


def _read_one(path: Path, split: str | None, reversed_intervals: str):
    file_split = split_from_name(path, split)
    action_index = vocab().action_index
    try:
        data = path.read_bytes()  # a few MiB: decoded at once, so a bad byte is found with its line
    except OSError as e:
        raise TensorQAError(f"{path}: cannot open Charades CSV ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TensorQAError(f"{path}:{line}: not UTF-8 text (byte {data[e.start]:#04x}); Charades CSVs are UTF-8") from None
    with io.StringIO(text, newline="") as handle:
        reader = csv.reader(handle)
        header = next(_csv_rows(reader, path), None)
        if header is None:
            raise TensorQAError(f"{path}: empty file, expected a Charades CSV header")
        header = [h.strip() for h in header]
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise TensorQAError(f"{path}:1: missing column(s) {', '.join(missing)} in header {','.join(header)}")
        col = {name: header.index(name) for name in header}
        next_line = reader.line_num + 1
        for row in _csv_rows(reader, path):
            line, next_line = next_line, reader.line_num + 1  # a quoted field may span lines
            where = f"{path}:{line}"
            if not row:
                continue
            if len(row) != len(header):
                raise TensorQAError(f"{where}: {len(row)} fields, header has {len(header)}")
            get = lambda name: row[col[name]] if name in col else ""  # noqa: E731
            video_id = get("id").strip()
            if not video_id:
                raise TensorQAError(f"{where}: empty id")
            check_name(video_id, where, "id")
            try:
                length = float(get("length"))
            except ValueError:
                raise TensorQAError(f"{where}: length {get('length')!r:.40} is not a number") from None
            if not (math.isfinite(length) and 0 <= length <= MAX_SECONDS):
                raise TensorQAError(f"{where}: length {get('length')!r:.40} is not a number of seconds in 0..{MAX_SECONDS:,}")
            actions = []
            entries = [entry for entry in get("actions").split(";") if entry.strip()]
            if len(entries) > MAX_INSTANCES:
                raise TensorQAError(f"{where}: {len(entries):,} actions; a video holds at most {MAX_INSTANCES:,}")
            for entry in entries:
                parts = entry.split()
                if len(parts) != 3 or not _ACTION_ID.fullmatch(parts[0]):
                    raise TensorQAError(f"{where}: action entry {entry!r} is not 'cNNN start end'")
                try:
                    cls = action_index(parts[0])
                except TensorQAError:
                    raise TensorQAError(f"{where}: unknown action class {parts[0]!r}") from None
                try:
                    start, end = float(parts[1]), float(parts[2])
                except ValueError:
                    raise TensorQAError(f"{where}: action entry {entry!r} has a non-numeric time") from None
                if not (math.isfinite(start) and math.isfinite(end)):
                    raise TensorQAError(f"{where}: action entry {entry!r} has a time that is not a finite number")
                if start < 0 or end < 0:
                    raise TensorQAError(f"{where}: action entry {entry!r} has a negative time")
                if start > MAX_SECONDS or end > MAX_SECONDS:
                    raise TensorQAError(f"{where}: action entry {entry!r} has a time past {MAX_SECONDS:,} s")
                if end < start:
                    if reversed_intervals == "error":
                        raise TensorQAError(f"{where}: action entry {entry!r} ends before it starts")
                    if reversed_intervals == "drop":
                        continue
                    start, end = end, start
                actions.append((cls, start, end))
            actions.sort(key=lambda a: (a[1], a[2], a[0]))
            objects = tuple(o for o in get("objects").split(";") if o)
            yield CharadesVideo(video_id, file_split, length, objects, get("scene"), tuple(actions)), where


def _csv_rows(reader, path: Path):
    """The reader's rows; csv's own errors (a field past its size limit, 131,072 characters) as
    one line naming the file and line."""
    try:
        yield from reader
    except csv.Error as e:
        raise TensorQAError(f"{path}:{reader.line_num}: not a readable CSV row ({e})") from None
