"""What tensorqa accepts from input files: name patterns and size limits, checked where each format is
read (docs/reference/limits.md). Names from data end up in rows, datasets and file names, so they
are checked strictly here and no later layer meets a separator, a NUL or an overlong name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tensorqa.errors import TensorQAError

MAX_NAME = 128  # characters of an id or file name (ASCII, so bytes too)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,%d}" % (MAX_NAME - 1))
# a split names output files (``data/<split>-00000-of-00001.parquet``): no '-', '.' or separator
MAX_SPLIT = 32
SPLIT = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,%d}" % (MAX_SPLIT - 1))
MAX_FRAME = 2**31 - 1  # frame numbers are stored as int32
MAX_SECONDS = 10**6  # times and video lengths (about 11.5 days): float32 keeps them to a few ms
MAX_IMAGE_INDEX = 2**63 - 1  # CLEVR image indices are int64
MAX_JSON_DEPTH = 64  # nesting of a free-form JSON part that is kept (CLEVR's info nests 1)
MAX_SCENE_OBJECTS = 62  # CLEVR objects per scene: a scene's object sets are int64 words
# entries (vertices, listed objects and relations) a pickle may expand to: its size in bytes plus a
# margin. Each entry of a real file costs it bytes; one shared many times over costs 2 bytes a
# reference, so a small crafted file could otherwise make the loader walk billions
PICKLE_ENTRY_MARGIN = 1_000_000
# work and memory loading a pickle may take (the unpickler and the loader, in a child process under
# rlimits): a floor plus a rate per byte of the file. Hashing a tuple key recurses uncached, so a
# small tuple shared 2^32 times over costs minutes inside the C unpickler; the rates leave a real
# stsgs pickle a margin of 10x or more
PICKLE_CPU_FLOOR = 1  # seconds of CPU
PICKLE_CPU_PER_MB = 2  # seconds of CPU per MiB of the file
PICKLE_MEMORY_FLOOR = 2 * 2**30  # bytes of address space on top of the process's own
PICKLE_MEMORY_PER_BYTE = 32  # bytes of address space per byte of the file
MAX_CLEVR_SCENES = 10_000_000  # scenes per CLEVR store (CLEVR 1.0 has 100,000)
MAX_INSTANCES = 1_000  # action instances per video (Charades' most is 28): the store pads to the most
MAX_KEYFRAMES = 10_000  # keyframes per video (Action Genome's most is a few hundred), padded likewise


def shown(value, width: int = 60) -> str:
    """``repr`` of a value read from data, cut to ``width``, without building all of a huge one: a
    pickle can share one tuple exponentially often, and an int can have more digits than repr
    converts."""
    if isinstance(value, (str, bytes)):
        text = repr(value[:width])
    elif value is None or isinstance(value, (bool, float)):
        text = repr(value)
    elif isinstance(value, int):
        text = repr(value) if value.bit_length() <= 256 else f"<{value.bit_length()}-bit integer>"
    elif isinstance(value, (list, tuple, dict)) and len(value) <= 4 and all(
            x is None or isinstance(x, (bool, float, str)) or (isinstance(x, int) and x.bit_length() <= 64)
            for x in (list(value.keys()) + list(value.values()) if isinstance(value, dict) else value)):
        text = repr({k: (v[:width] if isinstance(v, str) else v) for k, v in value.items()} if isinstance(value, dict)
                    else type(value)(x[:width] if isinstance(x, str) else x for x in value))
    else:
        text = f"<{type(value).__name__} of {len(value)}>" if hasattr(value, "__len__") else f"<{type(value).__name__}>"
    return text if len(text) <= width else text[:width - 3] + "..."


def check_name(value, where: str, field: str, pattern: re.Pattern = NAME) -> str:
    """``value`` if it is a str matching ``pattern`` in full, else a one-line error naming
    ``where`` (the file, and the place in it) and ``field``."""
    if isinstance(value, str) and pattern.fullmatch(value):
        return value
    if pattern is SPLIT:
        rule = f"1 to {MAX_SPLIT} ASCII letters, digits or '_', starting with a letter"
    else:
        rule = f"1 to {MAX_NAME} ASCII letters, digits, '.', '_' or '-', starting with a letter or digit"
    raise TensorQAError(f"{where}: {field} {shown(value, 80)} is not a valid name ({rule})")


def check_split(value, where: str, field: str = "split") -> str:
    return check_name(value, where, field, SPLIT)


def check_depth(value, where, what: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse lists / dicts nested deeper than ``limit`` in a free-form part of an input that is
    kept (a CLEVR ``info``), iteratively: writing it back out recurses per level."""
    level = [value]
    for _ in range(limit + 1):
        level = [x for v in level for x in (v.values() if isinstance(v, dict) else v if isinstance(v, list) else ())]
        if not level:
            return
    raise TensorQAError(f"{where}: {what} nests deeper than {limit} levels")


def parse_json(text: str | bytes, where, what: str):
    """``json.loads(text)``, every failure a one-line error naming ``where``: not JSON, nested
    deeper than the parser recurses (about 1,000 levels), an integer past Python's digit limit."""
    try:
        return json.loads(text)
    except UnicodeDecodeError:
        raise TensorQAError(f"{where}: {what} is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise TensorQAError(f"{where}: not JSON ({what}: {e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise TensorQAError(f"{where}: {what} nests too deeply to read") from None
    except ValueError as e:  # int(): more digits than the interpreter converts
        first = (str(e).splitlines() or [type(e).__name__])[0]
        raise TensorQAError(f"{where}: {what} cannot be read ({first})") from None


def read_json(path: str | Path, what: str):
    """:func:`parse_json` of a file's bytes; a file that cannot be read is a one-line error."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise TensorQAError(f"{path}: cannot read {what} ({e.strerror or e})") from None
    return parse_json(data, path, what)


class EntryBudget:
    """Counts the entries a loader walks in a pickle of ``size`` bytes; past ``size +
    PICKLE_ENTRY_MARGIN`` a one-line error (objects shared many times over)."""

    def __init__(self, path, size: int, what: str):
        self.path, self.what = path, what
        self.left = size + PICKLE_ENTRY_MARGIN

    def spend(self, entries: int) -> None:
        self.left -= entries
        if self.left < 0:
            raise TensorQAError(f"{self.path}: the {self.what} pickle expands to more entries than its size allows "
                                "(objects shared many times over); refused")
