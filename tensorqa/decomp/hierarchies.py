"""Read an AGQA-Decomp hierarchy folder into flat columnar tables.

Layout (reference ``agqa.md`` §2.6)::

    DIR/<video_id>.json   {main_key: {"subquestion": {text: {type, answer, program, key, ...}},
                                      "hierarchy":   {parent text: {rule: [child text, ...]}}}}
    DIR/isolated.json     [{type, answer, key, ...}, ...]   questions of no hierarchy (optional)

Sub-questions are named by their question text; ``key`` is the question id that predictions use.
A "hierarchy" below is one main question of one video file (one ``main_key``).

The tables (pyarrow, one row per entry, in file order: files sorted by name, then main keys,
then sub-questions / parents / rules / children in their JSON order):

``nodes``     hierarchy int32, video, main_key (dictionary strings), text, type, collapsed,
              answer (null = JSON null), key, program (null if absent), is_parent bool
              (the text is a key of that main question's "hierarchy" object), text_id int32
              (equal within a video for equal texts: the id of the text in its file).
``edges``     hierarchy int32, video, main_key, parent, rule, child (parent / child: dictionary
              strings over the node texts), position int32 (index of the child in the rule's
              list), arity int32 (length of that list), parent_row / child_row int64 (rows of
              ``nodes`` in the same hierarchy).
``isolated``  type, collapsed, answer, key.

Values keep their JSON meaning except where a column must be one type: a question ``key`` is
the string form of the JSON value (the official code looks predictions up in a map that went
through JSON, whose keys are strings), and a non-string ``answer`` (a list, a number) is stored
as its JSON text.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from itertools import chain, count, repeat
from operator import itemgetter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.errors import TensorQAError
from tensorqa.decomp.constants import collapse

ISOLATED_FILE = "isolated.json"

NODE_SCHEMA = pa.schema([
    ("hierarchy", pa.int32()),
    ("video", pa.dictionary(pa.int32(), pa.string())),
    ("main_key", pa.dictionary(pa.int32(), pa.string())),
    ("text", pa.string()),
    ("type", pa.string()),
    ("collapsed", pa.string()),
    ("answer", pa.string()),
    ("key", pa.string()),
    ("program", pa.string()),
    ("is_parent", pa.bool_()),
    ("text_id", pa.int32()),
])

EDGE_SCHEMA = pa.schema([
    ("hierarchy", pa.int32()),
    ("video", pa.dictionary(pa.int32(), pa.string())),
    ("main_key", pa.dictionary(pa.int32(), pa.string())),
    ("parent", pa.dictionary(pa.int64(), pa.string())),
    ("rule", pa.string()),
    ("child", pa.dictionary(pa.int64(), pa.string())),
    ("position", pa.int32()),
    ("arity", pa.int32()),
    ("parent_row", pa.int64()),
    ("child_row", pa.int64()),
])

ISOLATED_SCHEMA = pa.schema([
    ("type", pa.string()),
    ("collapsed", pa.string()),
    ("answer", pa.string()),
    ("key", pa.string()),
])


@dataclass(frozen=True)
class Hierarchies:
    """One AGQA-Decomp folder as flat tables (see the module docstring for the columns).

    videos:     the video id of each file, in reading order
    main_keys:  pa.string [H], the main question key of each hierarchy
    hierarchy_video: int32 [H], index into ``videos`` of each hierarchy
    key_values: pa.string [K], the distinct question keys of each file, file after file
    node_key_row: int64 [N], the row of each node's key in ``key_values``
    texts_per_video: an upper bound of the node ``text_id`` (distinct texts of the largest file)
    """

    nodes: pa.Table
    edges: pa.Table
    isolated: pa.Table
    videos: list[str]
    main_keys: pa.Array
    hierarchy_video: np.ndarray
    key_values: pa.ChunkedArray
    node_key_row: np.ndarray
    texts_per_video: int
    source: Path | None = None

    @property
    def num_hierarchies(self) -> int:
        return len(self.main_keys)

    def file_of(self, hierarchy: int) -> str:
        """The file a hierarchy was read from (for messages)."""
        name = f"{self.videos[int(self.hierarchy_video[hierarchy])]}.json"
        return str(self.source / name) if self.source is not None else name

    def where(self, hierarchy: int) -> str:
        """``<file>, main question '<key>'`` for error messages."""
        return f"{self.file_of(hierarchy)}, main question {self.main_keys[int(hierarchy)].as_py()!r}"


# --------------------------------------------------------------------------------------------
# reading

try:
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency; the standard library still works
    _loads = json.loads


def read_json(path: Path):
    """Parse one JSON file (orjson, about 3x the standard library's speed on hierarchy folders, when
    installed); a missing, unreadable or malformed file is a one-line TensorQAError."""
    try:
        with open(path, "rb") as f:
            text = f.read()
        return _loads(text)
    except FileNotFoundError:
        raise TensorQAError(f"{path}: no such file") from None
    except OSError as e:
        raise TensorQAError(f"{path}: cannot read ({e.strerror or e})") from None
    except (ValueError, UnicodeDecodeError) as e:  # json.JSONDecodeError and orjson.JSONDecodeError are ValueErrors
        raise TensorQAError(f"{path}: not valid JSON ({e})") from None


def _string_column(values: list, path: Path, field: str) -> pa.Array:
    """A list of JSON strings as pa.string; anything else (null included) is an error naming the field."""
    try:
        out = pa.array(values, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        out = None
    if out is None or out.null_count:
        bad = next(v for v in values if not isinstance(v, str))
        raise TensorQAError(f"{path}: {field} must be a string, got {bad!r}")
    return out


def _answer_column(values: list) -> pa.Array:
    """Answers: strings and nulls as they are, other JSON values as their JSON text."""
    try:
        return pa.array(values, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([v if v is None or isinstance(v, str) else json.dumps(v, sort_keys=True) for v in values],
                        type=pa.string())


def _key_column(values: list) -> pa.Array:
    """Question keys as strings (ints become their decimal text, as a JSON round trip makes them)."""
    try:
        return pa.array(values, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    try:
        return pa.array(values, type=pa.int64()).cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([None if v is None else v if isinstance(v, str) else json.dumps(v) for v in values],
                        type=pa.string())


def _fields(infos: list, path: Path, where: str, strict: bool = True) -> tuple[list, list, list, list]:
    """(type, answer, key, program) lists of question dicts; a missing field is an error
    (a TensorQAError naming it when ``strict``, else the KeyError / TypeError itself)."""
    try:
        types = list(map(itemgetter("type"), infos))
        answers = list(map(itemgetter("answer"), infos))
        keys = list(map(itemgetter("key"), infos))
    except (KeyError, TypeError):
        if not strict:
            raise
        for i, info in enumerate(infos):
            if not isinstance(info, dict):
                raise TensorQAError(f"{path}: {where} entry {i} is not an object") from None
            for f in ("type", "answer", "key"):
                if f not in info:
                    raise TensorQAError(f"{path}: {where} entry {i} has no {f!r} field") from None
        raise
    programs = list(map(dict.get, infos, repeat("program")))
    return types, answers, keys, programs


def _flatten(data: dict) -> dict:
    """Fast path: flatten a parsed video file with C-level iteration only (map / chain), no checks
    beyond what these calls enforce. Raises KeyError / TypeError / ValueError on a malformed file."""
    values = list(data.values())
    subs = list(map(itemgetter("subquestion"), values))
    hiers = list(map(itemgetter("hierarchy"), values))
    infos = list(chain.from_iterable(map(dict.values, subs)))      # dict.values rejects non-objects
    rule_dicts = list(chain.from_iterable(map(dict.values, hiers)))
    kid_lists = list(chain.from_iterable(map(dict.values, rule_dicts)))
    if not set(map(type, kid_lists)) <= {list}:
        raise TypeError("children must be lists")
    return dict(
        main_keys=list(data), n_sub=list(map(len, subs)), n_par=list(map(len, hiers)),
        n_rule=list(map(len, rule_dicts)), n_child=list(map(len, kid_lists)),
        texts=list(chain.from_iterable(subs)), infos=infos, parents=list(chain.from_iterable(hiers)),
        rule_names=list(chain.from_iterable(rule_dicts)), children=list(chain.from_iterable(kid_lists)),
    )


def _locate_error(path: Path, data: dict) -> None:
    """Slow path, run only when the fast path failed: raise a TensorQAError naming the bad entry."""
    for main_key, value in data.items():
        try:
            sub, hier = value["subquestion"], value["hierarchy"]
        except (KeyError, TypeError):
            raise TensorQAError(f"{path}: main question {main_key!r} needs 'subquestion' and 'hierarchy' objects") from None
        if not isinstance(sub, dict) or not isinstance(hier, dict):
            raise TensorQAError(f"{path}: main question {main_key!r}: 'subquestion' and 'hierarchy' must be objects")
        _fields(list(sub.values()), path, f"main question {main_key!r}: subquestion")
        for parent, rules in hier.items():
            if not isinstance(rules, dict):
                raise TensorQAError(f"{path}: main question {main_key!r}: hierarchy of {parent!r} must be "
                                    f"an object {{rule: [child questions]}}")
            for kids in rules.values():
                if not isinstance(kids, list):
                    raise TensorQAError(f"{path}: main question {main_key!r}: children of {parent!r} must be a list")
    raise TensorQAError(f"{path}: malformed AGQA-Decomp hierarchy file")


def _read_video(path: Path) -> dict:
    """Flatten one ``<video_id>.json`` into per-file Arrow columns and count lists (no cross-file state)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise TensorQAError(f"{path}: expected an object {{main question key: {{subquestion, hierarchy}}}}, "
                            f"got {type(data).__name__}")
    try:
        flat = _flatten(data)
        types, answers, keys, programs = _fields(flat["infos"], path, "subquestion", strict=False)
    except (KeyError, TypeError, AttributeError):
        _locate_error(path, data)
        raise
    if not set(map(type, flat["children"])) <= {str}:
        bad = next(c for c in flat["children"] if not isinstance(c, str))
        raise TensorQAError(f"{path}: a child question must be a question text, got {bad!r}")
    counts = {k: np.asarray(flat[k], np.int64) for k in ("n_sub", "n_par", "n_rule", "n_child")}
    # texts -> ids local to this file (first appearance order), with a small per-file dict: the
    # global tables never hash question strings. -1 marks a text that no subquestion of the file has.
    texts = flat["texts"]
    ids = dict(zip(dict.fromkeys(texts), count()))
    text_id = np.array(list(map(ids.__getitem__, texts)), np.int32)
    parent_id = np.array(list(map(ids.get, flat["parents"], repeat(-1))), np.int32)
    child_id = np.array(list(map(ids.get, flat["children"], repeat(-1))), np.int32)
    # question keys -> distinct keys of this file (their predictions are looked up once each)
    key_col = _key_column(keys)
    try:
        kids = dict(zip(dict.fromkeys(keys), count()))
        key_id = np.array(list(map(kids.__getitem__, keys)), np.int64)
        key_values = _key_column(list(kids))
    except TypeError:  # an unhashable key (a list, ...): go through its string form
        skeys = key_col.to_pylist()
        kids = dict(zip(dict.fromkeys(skeys), count()))
        key_id = np.array(list(map(kids.__getitem__, skeys)), np.int64)
        key_values = pa.array(list(kids), pa.string())
    return dict(
        main_keys=pa.array(flat["main_keys"], pa.string()), **counts,
        text=_string_column(texts, path, "question text"), type=_string_column(types, path, "type"),
        answer=_answer_column(answers), key=key_col, program=_answer_column(programs),
        rules=_string_column(flat["rule_names"], path, "composition rule"),
        text_id=text_id, parent_id=parent_id, child_id=child_id, n_text=len(ids),
        key_id=key_id, key_values=key_values,
        # the first text missing from the file, kept for the error message
        parents_missing=[flat["parents"][i] for i in np.flatnonzero(parent_id < 0)[:1]],
        children_missing=[flat["children"][i] for i in np.flatnonzero(child_id < 0)[:1]],
    )


def _read_videos(files: list[Path], workers: int | None, progress: bool) -> list[dict]:
    """Read video files, in ``workers`` processes (results in file order).

    workers None: as many as this process may use CPUs, but only for a folder big enough
    (>= 16 files and > 64 MiB of JSON) to repay starting them.
    """
    if workers is None:
        big = len(files) >= 16 and sum(p.stat().st_size for p in files) > 64 * 2**20
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        workers = cpus if big else 1
    workers = max(1, min(workers, len(files)))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(files), desc="reading hierarchies", unit="file")
    out = []
    if workers <= 1:
        for p in files:
            out.append(_read_video(p))
            if bar is not None:
                bar.update()
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            for part in pool.map(_read_video, files, chunksize=4):
                out.append(part)
                if bar is not None:
                    bar.update()
    if bar is not None:
        bar.close()
    return out


def _read_isolated(path: Path) -> pa.Table:
    data = read_json(path)
    if not isinstance(data, list):
        raise TensorQAError(f"{path}: expected a list of {{type, answer, key}} questions, got {type(data).__name__}")
    types, answers, keys, _ = _fields(data, path, "isolated")
    types = _string_column(types, path, "type")
    return pa.table([types, _collapsed(types), _answer_column(answers), _key_column(keys)], schema=ISOLATED_SCHEMA)


def _collapsed(types: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Collapsed type of each raw type (mapped once per distinct type)."""
    uniq = pc.unique(types)
    names = pa.array([collapse(t) for t in uniq.to_pylist()], type=pa.string())
    return pc.take(names, pc.index_in(types, value_set=uniq))


def _cat(chunks: list[pa.Array], type: pa.DataType) -> pa.ChunkedArray:
    return pa.chunked_array(chunks, type=type)


def _rows_of(hier: np.ndarray, ids: np.ndarray, node_key: np.ndarray, node_order: np.ndarray,
             n_text: int) -> np.ndarray:
    """Node rows of (hierarchy, file-local text id) pairs; -1 where the text is not a sub-question
    of that hierarchy.

    hier: int32 [M]; ids: int [M] (-1 = unknown); node_key: int64 [N] = hierarchy * n_text + text
    id, sorted by ``node_order``. Returns int64 [M].
    """
    ids = np.asarray(ids, np.int64)
    if len(node_key) == 0:
        return np.full(len(ids), -1, np.int64)
    want = hier.astype(np.int64) * n_text + ids
    pos = np.minimum(np.searchsorted(node_key, want, sorter=node_order), len(node_key) - 1)
    rows = node_order[pos]
    return np.where((ids >= 0) & (node_key[rows] == want), rows, -1).astype(np.int64)


def load_hierarchies(path: str | os.PathLike, progress: bool = False, workers: int | None = None) -> Hierarchies:
    """Read an AGQA-Decomp folder (``<video_id>.json`` files plus optional ``isolated.json``).

    Files other than ``*.json`` are ignored. A folder without any video file, a malformed file,
    or a hierarchy that names a question missing from its own ``subquestion`` object is a
    TensorQAError naming the file. Files are parsed by ``workers`` processes (default: one per
    usable CPU for a large folder, none for a small one); the tables do not depend on it.
    """
    root = Path(path)
    if not root.exists():
        raise TensorQAError(f"{root}: no such directory")
    if not root.is_dir():
        raise TensorQAError(f"{root}: not a directory (expected an AGQA-Decomp hierarchy folder)")
    if (root / "hierarchies").is_dir() and not (root / ISOLATED_FILE).exists():
        root = root / "hierarchies"  # the output folder of tensorqa decompose: its AGQA-Decomp folder
    files = sorted(p for p in root.iterdir() if p.suffix == ".json" and p.name != ISOLATED_FILE)
    iso_path = root / ISOLATED_FILE
    if not files and not iso_path.exists():
        raise TensorQAError(f"{root}: no <video_id>.json hierarchy files")

    parts = _read_videos(files, workers, progress)

    videos = [p.stem for p in files]
    n_hier_file = np.array([len(d["main_keys"]) for d in parts], np.int64)
    hierarchy_video = np.repeat(np.arange(len(files), dtype=np.int32), n_hier_file)
    main_keys = pa.concat_arrays([d["main_keys"] for d in parts]) if parts else pa.array([], pa.string())

    def counts(name):
        return np.concatenate([d[name] for d in parts]) if parts else np.zeros(0, np.int64)

    # distinct question keys of each file, and each node's row among them
    key_values = pa.chunked_array([d["key_values"] for d in parts], type=pa.string())
    key_offset = np.cumsum([0] + [len(d["key_values"]) for d in parts])[:-1]
    node_key_row = np.concatenate([d["key_id"] + o for d, o in zip(parts, key_offset)]) if parts else \
        np.zeros(0, np.int64)

    n_sub, n_par, n_rule, n_child = counts("n_sub"), counts("n_par"), counts("n_rule"), counts("n_child")
    H = len(main_keys)

    def col(name, t=pa.string()):
        return _cat([d[name] for d in parts], t)

    text, types = col("text"), col("type")
    node_hier = np.repeat(np.arange(H, dtype=np.int32), n_sub)
    N = len(node_hier)

    # (hierarchy, text) -> node row: file-local text ids, one integer sort
    T = max([d["n_text"] for d in parts] + [1])
    text_id = counts("text_id").astype(np.int32) if parts else np.zeros(0, np.int32)
    node_key = node_hier.astype(np.int64) * T + text_id
    node_order = np.argsort(node_key, kind="stable")

    def not_found(rows, hier, ids, what, missing):
        """Error for the first -1 in ``rows``: name the file, main question and text."""
        i = int(np.flatnonzero(rows < 0)[0])
        f, local = int(hierarchy_video[hier[i]]), int(ids[i])
        if local < 0:
            bad = parts[f][missing][0]
        else:
            bad = text[int(np.flatnonzero((hierarchy_video[node_hier] == f) & (text_id == local))[0])].as_py()
        raise TensorQAError(f"{_where(root, videos, hierarchy_video, main_keys, hier[i])}: {what} {bad!r} "
                            f"is not among its subquestions")

    par_hier = np.repeat(np.arange(H, dtype=np.int32), n_par)
    parent_id = counts("parent_id")
    par_row = _rows_of(par_hier, parent_id, node_key, node_order, T)
    if (par_row < 0).any():
        not_found(par_row, par_hier, parent_id, "hierarchy question", "parents_missing")
    is_parent = np.zeros(N, bool)
    is_parent[par_row] = True

    # edges: parent of each rule, rule of each child
    rule_parent = np.repeat(np.arange(len(n_rule)), n_rule)
    edge_rule = np.repeat(np.arange(len(n_child)), n_child)
    edge_parent = rule_parent[edge_rule]
    E = len(edge_rule)
    rule_start = np.cumsum(n_child) - n_child
    position = (np.arange(E) - rule_start[edge_rule]).astype(np.int32)
    arity = n_child[edge_rule].astype(np.int32)
    edge_hier = par_hier[edge_parent]
    child_id = counts("child_id")
    child_row = _rows_of(edge_hier, child_id, node_key, node_order, T)
    if (child_row < 0).any():
        not_found(child_row, edge_hier, child_id, "child question", "children_missing")
    parent_row = par_row[edge_parent]

    video_names = pa.array(videos, type=pa.string())

    def video_col(hier):
        return pa.DictionaryArray.from_arrays(pa.array(hierarchy_video[hier], pa.int32()), video_names)

    def main_col(hier):
        return pa.DictionaryArray.from_arrays(pa.array(hier, pa.int32()), main_keys)

    nodes = pa.table([
        pa.array(node_hier, pa.int32()), video_col(node_hier), main_col(node_hier), text, types,
        _collapsed(types) if N else pa.array([], pa.string()), col("answer"), col("key"), col("program"),
        pa.array(is_parent, pa.bool_()), pa.array(text_id, pa.int32()),
    ], schema=NODE_SCHEMA)
    flat_text = text.combine_chunks() if N else pa.array([], pa.string())
    edges = pa.table([
        pa.array(edge_hier, pa.int32()), video_col(edge_hier), main_col(edge_hier),
        # parent / child texts: the node text column indexed by row (no copy of the strings)
        pa.DictionaryArray.from_arrays(pa.array(parent_row), flat_text), pc.take(col("rules"), pa.array(edge_rule)),
        pa.DictionaryArray.from_arrays(pa.array(child_row), flat_text), pa.array(position), pa.array(arity),
        pa.array(parent_row), pa.array(child_row),
    ], schema=EDGE_SCHEMA)
    isolated = _read_isolated(iso_path) if iso_path.exists() else ISOLATED_SCHEMA.empty_table()
    return Hierarchies(nodes=nodes, edges=edges, isolated=isolated, videos=videos, main_keys=main_keys,
                       hierarchy_video=hierarchy_video, key_values=key_values, node_key_row=node_key_row,
                       texts_per_video=T, source=root)


def as_hierarchies(hierarchies: "Hierarchies | str | os.PathLike") -> Hierarchies:
    """``hierarchies`` itself when already loaded, else :func:`load_hierarchies` of that folder."""
    return hierarchies if isinstance(hierarchies, Hierarchies) else load_hierarchies(hierarchies)


def _where(root: Path, videos, hierarchy_video, main_keys, hier) -> str:
    return f"{root / (videos[int(hierarchy_video[int(hier)])] + '.json')}, main question {main_keys[int(hier)].as_py()!r}"
