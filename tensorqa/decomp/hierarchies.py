"""Read an AGQA-Decomp hierarchy folder (docs/reference/agqa.md §2.6: ``<video_id>.json`` files of
``{main_key: {"subquestion": {text: {...}}, "hierarchy": {parent text: {rule: [child texts]}}}}``
and an optional ``isolated.json``) into flat pyarrow tables, in file order (files by name, then
JSON order). A "hierarchy" is one main question of one file. ``key`` is kept as the string of its
JSON value (the official lookup went through JSON) and a non-string ``answer`` as its JSON text.

``nodes``: hierarchy, video, main_key, text, type, collapsed, answer, key, program, is_parent (a key
of that main question's "hierarchy"), text_id (equal for equal texts of a file). ``edges``:
hierarchy, video, main_key, parent, rule, child (dictionaries over the node texts), position and
arity in the rule's list, parent_row / child_row (rows of ``nodes``). ``isolated``: type,
collapsed, answer, key."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.errors import TensorQAError
from tensorqa.decomp.constants import collapse

ISOLATED_FILE = "isolated.json"

_NAMES = pa.dictionary(pa.int32(), pa.string())
_TEXTS = pa.dictionary(pa.int64(), pa.string())
NODE_SCHEMA = pa.schema([
    ("hierarchy", pa.int32()), ("video", _NAMES), ("main_key", _NAMES), ("text", pa.string()), ("type", pa.string()),
    ("collapsed", pa.string()), ("answer", pa.string()), ("key", pa.string()), ("program", pa.string()),
    ("is_parent", pa.bool_()), ("text_id", pa.int32())])
EDGE_SCHEMA = pa.schema([
    ("hierarchy", pa.int32()), ("video", _NAMES), ("main_key", _NAMES), ("parent", _TEXTS), ("rule", pa.string()),
    ("child", _TEXTS), ("position", pa.int32()), ("arity", pa.int32()), ("parent_row", pa.int64()),
    ("child_row", pa.int64())])
ISOLATED_SCHEMA = pa.schema([(c, pa.string()) for c in ("type", "collapsed", "answer", "key")])


@dataclass(frozen=True)
class Hierarchies:
    """One AGQA-Decomp folder as flat tables (columns: the module docstring). main_keys: string[H];
    hierarchy_video: int32[H] into ``videos`` (one per file); key_values: string[K], each file's
    distinct question keys; node_key_row: int64[N] into them; texts_per_video: a bound of ``text_id``."""

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

    def where(self, hierarchy: int) -> str:
        """``<file>, main question '<key>'`` for error messages."""
        return _where(self.source, self.videos, self.hierarchy_video, self.main_keys, hierarchy)


from tensorqa.decomp.hierarchy_files import fields, read_videos, answer_column, key_column, read_json, string_column  # noqa: F401  (public here)


def _read_isolated(path: Path) -> pa.Table:
    data = read_json(path)
    if not isinstance(data, list):
        raise TensorQAError(f"{path}: expected a list of {{type, answer, key}} questions, got {type(data).__name__}")
    types, answers, keys, _ = fields(data, path, "isolated")
    types = string_column(types, path, "type")
    return pa.table([types, _collapsed(types), answer_column(answers), key_column(keys)], schema=ISOLATED_SCHEMA)


def _collapsed(types: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Collapsed type of each raw type (mapped once per distinct type)."""
    uniq = pc.unique(types)
    names = pa.array([collapse(t) for t in uniq.to_pylist()], type=pa.string())
    return pc.take(names, pc.index_in(types, value_set=uniq))


def _rows_of(hier: np.ndarray, ids: np.ndarray, node_key: np.ndarray, node_order: np.ndarray,
             n_text: int) -> np.ndarray:
    """int64[M] node rows of (hierarchy int32[M], file-local text id int[M]) pairs, -1 where the text
    is not a sub-question of that hierarchy; node_key: int64[N] hierarchy * n_text + text id, sorted
    by ``node_order``."""
    ids = np.asarray(ids, np.int64)
    if len(node_key) == 0:
        return np.full(len(ids), -1, np.int64)
    want = hier.astype(np.int64) * n_text + ids
    pos = np.minimum(np.searchsorted(node_key, want, sorter=node_order), len(node_key) - 1)
    rows = node_order[pos]
    return np.where((ids >= 0) & (node_key[rows] == want), rows, -1).astype(np.int64)


def _folder(path) -> tuple[Path, list[Path], Path]:
    """(the hierarchy folder, its video files in name order, the isolated questions' file)."""
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
    return root, files, iso_path


def _edge_layout(n_rule: np.ndarray, n_child: np.ndarray):
    """Per edge (child of a rule): (rule, parent, position in the rule's list int32, arity int32)."""
    rule_parent = np.repeat(np.arange(len(n_rule)), n_rule)
    edge_rule = np.repeat(np.arange(len(n_child)), n_child)
    rule_start = np.cumsum(n_child) - n_child
    position = (np.arange(len(edge_rule)) - rule_start[edge_rule]).astype(np.int32)
    return edge_rule, rule_parent[edge_rule], position, n_child[edge_rule].astype(np.int32)


def _counts(parts: list[dict], name: str) -> np.ndarray:
    """One numeric field of every parsed file, concatenated."""
    return np.concatenate([d[name] for d in parts]) if parts else np.zeros(0, np.int64)


def _column(parts: list[dict], name: str, t: pa.DataType = pa.string()) -> pa.ChunkedArray:
    """One column of every parsed file, concatenated."""
    return pa.chunked_array([d[name] for d in parts], type=t)


def _coded(codes: np.ndarray, values: pa.Array) -> pa.DictionaryArray:
    """``values[codes]`` as a dictionary column (no string copied)."""
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), values)


def load_hierarchies(path: str | os.PathLike, progress: bool = False, workers: int | None = None) -> Hierarchies:
    """Read an AGQA-Decomp folder (``<video_id>.json`` files plus optional ``isolated.json``; other
    files are ignored). A folder without any video file, a malformed file, or a hierarchy naming a
    question missing from its own ``subquestion`` object is a TensorQAError naming the file. Files
    are parsed by ``workers`` processes (default: one per usable CPU for a large folder, none for a
    small one); the tables do not depend on it."""
    root, files, iso_path = _folder(path)
    parts = read_videos(files, workers, progress)

    videos = [p.stem for p in files]
    n_hier_file = np.array([len(d["main_keys"]) for d in parts], np.int64)
    hierarchy_video = np.repeat(np.arange(len(files), dtype=np.int32), n_hier_file)
    main_keys = pa.concat_arrays([d["main_keys"] for d in parts]) if parts else pa.array([], pa.string())

    # distinct question keys of each file, and each node's row among them
    key_values = pa.chunked_array([d["key_values"] for d in parts], type=pa.string())
    key_offset = np.cumsum([0] + [len(d["key_values"]) for d in parts])[:-1]
    node_key_row = np.concatenate([np.zeros(0, np.int64)] + [d["key_id"] + o for d, o in zip(parts, key_offset)])
    n_sub, n_par, n_rule, n_child = (_counts(parts, k) for k in ("n_sub", "n_par", "n_rule", "n_child"))
    H = len(main_keys)

    text, types = _column(parts, "text"), _column(parts, "type")
    node_hier = np.repeat(np.arange(H, dtype=np.int32), n_sub)
    N = len(node_hier)

    # (hierarchy, text) -> node row: file-local text ids, one integer sort
    T = max([d["n_text"] for d in parts] + [1])
    text_id = _counts(parts, "text_id").astype(np.int32) if parts else np.zeros(0, np.int32)
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
    parent_id = _counts(parts, "parent_id")
    par_row = _rows_of(par_hier, parent_id, node_key, node_order, T)
    if (par_row < 0).any():
        not_found(par_row, par_hier, parent_id, "hierarchy question", "parents_missing")
    is_parent = np.zeros(N, bool)
    is_parent[par_row] = True

    edge_rule, edge_parent, position, arity = _edge_layout(n_rule, n_child)
    edge_hier = par_hier[edge_parent]
    child_id = _counts(parts, "child_id")
    child_row = _rows_of(edge_hier, child_id, node_key, node_order, T)
    if (child_row < 0).any():
        not_found(child_row, edge_hier, child_id, "child question", "children_missing")
    parent_row = par_row[edge_parent]

    video_names = pa.array(videos, type=pa.string())

    nodes = pa.table([
        pa.array(node_hier, pa.int32()), _coded(hierarchy_video[node_hier], video_names), _coded(node_hier, main_keys),
        text, types, _collapsed(types) if N else pa.array([], pa.string()),
        *(_column(parts, k) for k in ("answer", "key", "program")),
        pa.array(is_parent, pa.bool_()), pa.array(text_id, pa.int32()),
    ], schema=NODE_SCHEMA)
    flat_text = text.combine_chunks() if N else pa.array([], pa.string())
    edges = pa.table([
        pa.array(edge_hier, pa.int32()), _coded(hierarchy_video[edge_hier], video_names), _coded(edge_hier, main_keys),
        # parent / child texts: the node text column indexed by row (no copy of the strings)
        pa.DictionaryArray.from_arrays(pa.array(parent_row), flat_text),
        pc.take(_column(parts, "rules"), pa.array(edge_rule)),
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


def _where(root: Path | None, videos, hierarchy_video, main_keys, hier) -> str:
    name = f"{videos[int(hierarchy_video[int(hier)])]}.json"
    return f"{name if root is None else root / name}, main question {main_keys[int(hier)].as_py()!r}"
