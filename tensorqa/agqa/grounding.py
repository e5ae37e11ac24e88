"""``sg_grounding`` of question records: character spans of the question -> AGQA graph vertex ids
(docs/reference/agqa.md §2.5; which spans get keys and the decisions where AGQA is silent:
docs/reference/agqa_semantics.md §e, "How tensorqa grounds a record").

    grounding_column(records, scenes, semantics="agqa") -> string array      # JSON object text per row
    with_grounding(records, scenes, semantics="agqa") -> pa.Table            # sg_grounding filled in
    ground_record(record, scene, semantics="agqa") -> dict[str, list[str]]   # one record (scalar)
    check_grounding(grounding, question, vertex_ids) -> list[str]            # §e's validation rules

``scenes``: a ``SceneBatch``, ``{video_id: VideoScene}`` or ``SceneStore``; vertex ids are those of
``scenes.export_agqa.video_graph``. :func:`ground_record` (``grounding_scalar``) is the scalar
reference, matching any wording variant; :func:`grounding_column` (``grounding_bulk``,
``grounding_rows``) groups rows with the same key layout and re-renders each question with
``records.render``'s wording variants to check it, sending a row that differs to the scalar path."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.errors import TensorQAError
from tensorqa.scenes.batch import SceneBatch, VideoScene
from tensorqa.agqa.semantics import Semantics, get_semantics
from tensorqa.agqa.grounding_bulk import assemble, id_lists
from tensorqa.agqa.grounding_rows import Rows, SceneTables
from tensorqa.agqa.grounding_scalar import ScalarGroundingVideo, ground_one
from tensorqa.agqa.grounding_text import COLUMNS, OPTIONAL_COLUMNS
from tensorqa.agqa.text import CHUNK_ROWS


def _scene_getter(scenes) -> Callable[[str], VideoScene | None]:
    """video_id -> VideoScene (None when absent) over a SceneBatch, a mapping or a SceneStore."""
    if isinstance(scenes, SceneBatch):
        index = {v: i for i, v in enumerate(scenes.video_ids)}
        return lambda video_id: scenes[index[video_id]].scenes()[0] if video_id in index else None
    if isinstance(scenes, Mapping):
        return scenes.get
    if hasattr(scenes, "scene") and hasattr(scenes, "video_ids"):  # SceneStore (store.py needs h5py)
        known = set(scenes.video_ids)
        return lambda video_id: scenes.scene(video_id) if video_id in known else None
    raise TensorQAError(f"sg_grounding: cannot read scenes from a {type(scenes).__name__}")


def _batch_of(scenes, names: list[str], get: Callable[[str], VideoScene | None]) -> SceneBatch:
    """The videos ``names`` as one SceneBatch, in that order."""
    if isinstance(scenes, SceneBatch):
        index = {v: i for i, v in enumerate(scenes.video_ids)}
        missing = [v for v in names if v not in index]
        if missing:
            raise TensorQAError(f"sg_grounding: no scene for video {missing[0]!r} in the batch")
        positions = [index[v] for v in names]
        return scenes if positions == list(range(len(scenes))) else scenes[positions].trim()
    found = [get(v) for v in names]
    missing = [v for v, s in zip(names, found) if s is None]
    if missing:
        raise TensorQAError(f"sg_grounding: no scene for video {missing[0]!r}")
    return SceneBatch.from_scenes([s.sorted() for s in found])


def grounding_column(records: pa.Table, scenes, semantics: Semantics | str = "agqa", block_videos: int = 64,
                     reference_relations: dict[str, np.ndarray] | None = None) -> pa.Array | pa.ChunkedArray:
    """sg_grounding of every record: strings [M] (a ChunkedArray past 256K rows per block), one JSON
    object text per row, in row order.

    records: a RECORD_SCHEMA table (at least the non-optional :data:`COLUMNS`); scenes and semantics:
    those the records were generated from. block_videos: videos whose scene tables are held at once
    (about ``block_videos * F * 2 KiB``); rows not grouped by video are gathered video by video and put
    back in order. reference_relations: int64[M] per action slot (``CellBlock.action_reference_relations``)
    when the caller generated the records; otherwise read back from the programs."""
    missing = [c for c in COLUMNS if c not in OPTIONAL_COLUMNS and c not in records.column_names]
    if missing:
        raise TensorQAError(f"sg_grounding: records lack column(s) {missing}")
    if block_videos < 1:
        raise TensorQAError(f"sg_grounding: block_videos must be at least 1, got {block_videos}")
    sem = get_semantics(semantics)
    if records.num_rows == 0:
        return pa.array([], pa.string())
    if records.column("video_id").null_count:
        raise TensorQAError("sg_grounding: a record has no video_id")
    encoded = pc.dictionary_encode(records.column("video_id")).combine_chunks()
    video_ids = encoded.dictionary.to_pylist()  # each has rows, in order of first appearance
    code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    get = _scene_getter(scenes)
    order = np.argsort(code, kind="stable")
    bounds = np.searchsorted(code[order], np.arange(0, len(video_ids) + block_videos, block_videos))
    in_order = bool((order == np.arange(len(order))).all())  # rows already grouped by video
    texts: list[pa.Array] = []
    for n, (a, z) in enumerate(itertools.pairwise(bounds)):
        st = SceneTables.build(_batch_of(scenes, video_ids[n * block_videos:(n + 1) * block_videos], get), sem)
        for c in range(a, z, CHUNK_ROWS):  # bounded memory: the texts of at most CHUNK_ROWS rows at once
            idx = order[c:min(c + CHUNK_ROWS, z)]
            block = records.slice(c, len(idx)) if in_order else records.take(pa.array(idx))
            given = None if reference_relations is None else {s: r[idx] for s, r in reference_relations.items()}
            texts += _ground_block(block, code[idx] - n * block_videos, st, sem, get, given)
    out = pa.chunked_array(texts, pa.string())
    if not in_order:
        out = out.take(pa.array(np.argsort(order, kind="stable")))
    return out.combine_chunks() if out.num_chunks == 1 else out


def _ground_block(block: pa.Table, video: np.ndarray, st: SceneTables, sem: Semantics,
                  get: Callable[[str], VideoScene | None], reference_relations=None) -> list[pa.Array]:
    """The JSON texts of a block of records whose videos are ``st``'s (``video``: their positions)."""
    rows = Rows(block, video, st, sem, reference_relations)
    lists, bodies = id_lists(rows, st, sem)
    text, same = assemble(rows, lists, bodies, block.column("question").combine_chunks())
    chunks = text.chunks if isinstance(text, pa.ChunkedArray) else [text]
    other = np.flatnonzero(~same)
    if other.size:  # not records.render's wording: the scalar path (any wording variant, or an error)
        present = [c for c in COLUMNS if c in block.column_names]
        found = [json.dumps(ground_record(row, get(row["video_id"]), sem))
                 for row in block.select(present).take(pa.array(other)).to_pylist()]
        mask = np.zeros(block.num_rows, bool)
        mask[other] = True
        chunks = [pc.replace_with_mask(pa.chunked_array(chunks, pa.string()).combine_chunks(), pa.array(mask),
                                       pa.array(found, pa.string()))]
    return chunks


def with_grounding(records: pa.Table, scenes, semantics: Semantics | str = "agqa", block_videos: int = 64,
                   reference_relations: dict[str, np.ndarray] | None = None) -> pa.Table:
    """``records`` with its ``sg_grounding`` column (replaced, or appended) from :func:`grounding_column`."""
    column = grounding_column(records, scenes, semantics, block_videos, reference_relations)
    if "sg_grounding" in records.column_names:
        return records.set_column(records.column_names.index("sg_grounding"), "sg_grounding", column)
    return records.append_column("sg_grounding", column)


def ground_record(record: Mapping[str, Any], scene: VideoScene, semantics: Semantics | str = "agqa") -> dict[str, list[str]]:
    """The sg_grounding of one record (a RECORD_SCHEMA row as a dict) on its video's scene: the
    scalar reference of :func:`grounding_column`. A reference phrase may use any wording variant."""
    if record.get("video_id") not in (None, scene.video_id):
        raise TensorQAError(f"sg_grounding: record is about video {record['video_id']!r}, the scene is {scene.video_id!r}")
    row = {c: record.get(c) or "" for c in COLUMNS}
    row["frame"] = record.get("frame", 0)
    return ground_one(ScalarGroundingVideo(scene, get_semantics(semantics)), row)


def check_grounding(grounding: Mapping[str, list[str]] | str, question: str, vertex_ids: Iterable[str]) -> list[str]:
    """Problems with a grounding under AGQA's own validation (§e): keys are ``"start-end"`` with
    0 <= start <= end <= len(question), and every id is a vertex of the video's graph. One line per
    problem; empty when valid. ``vertex_ids``: e.g. ``export_agqa.video_graph(scene).keys()``."""
    g = json.loads(grounding) if isinstance(grounding, str) else grounding
    known = vertex_ids if isinstance(vertex_ids, (set, frozenset, Mapping)) else set(vertex_ids)
    problems = []
    for key, ids in g.items():
        m = re.fullmatch(r"(-?\d+)-(-?\d+)", key)
        if m is None:
            problems.append(f"key {key!r} is not 'start-end'")
            continue
        a, b = int(m.group(1)), int(m.group(2))
        if a < 0 or b < 0:
            problems.append(f"key {key!r} has a negative offset")
        elif a > b or b > len(question):
            problems.append(f"key {key!r} is not within the question ({len(question)} characters)")
        problems += [f"key {key!r}: id {i!r} is not a vertex of the graph" for i in ids if i not in known]
    return problems
