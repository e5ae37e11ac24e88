"""``sg_grounding`` of question records: character spans of the question -> AGQA graph vertex ids.

AGQA's released records carry ``sg_grounding = {"start-end": [vertex ids]}`` (docs/reference/agqa.md §2.5,
docs/reference/agqa_semantics.md §e). This module computes it for tensorqa's records after they are rendered:

    grounding_column(records, scenes, semantics="agqa") -> string array      # JSON object text per row
    with_grounding(records, scenes, semantics="agqa") -> pa.Table            # sg_grounding filled in
    ground_record(record, scene, semantics="agqa") -> dict[str, list[str]]   # one record (scalar)
    check_grounding(grounding, question, vertex_ids) -> list[str]            # §e's validation rules

``records`` is a RECORD_SCHEMA table (the columns of :data:`COLUMNS` suffice; the
``window_action*_ref`` ones may be absent); ``scenes`` is a
``SceneBatch``, a ``{video_id: VideoScene}`` mapping or a ``SceneStore``: the scenes the records
were generated from, with the semantics they were generated with. Vertex ids are those of
:func:`tensorqa.scenes.export_agqa.video_graph` on that scene: keyframe ``'000105'``, object
``'o4/000105'``, relation ``'r15/000105'`` / ``'v029/000105'``, action instance ``'c076/1'``.
The text is what ``json.dumps`` writes for the dict (``", "`` and ``": "`` separators).

Spans (§e)
----------
The question is read through its frame (``TEMPLATES[template].frames[frame]``): literal fragments
and slot phrases follow each other in textual order, each phrase being one that the vocabulary
and the catalogue produce for the record's slot columns. Keys are ``"start-end"`` offsets into
the question (Python string indices, ``end`` exclusive). Per argument, in textual order:

* object / object2 / relation slot: the span of its phrase (``a blanket``, ``holding``, or a whole
  reference phrase such as ``the object they were holding first``);
* action / action2 slot: for an indirect-object action (``ToAction(verb, <reference>)``), first
  the span of each occurrence of its object reference phrase; then the whole action phrase;
* window slot: first X's keys as for an action slot (then Y's, for between), then the
  localization phrase without its leading space (``while holding a pillow``). The whole video has
  an empty phrase and gives a zero-width key (below).

The relation an indirect-object action's reference goes through is not a record column; it is
read from the program: the k-th ``ToAction(`` belongs to the k-th indirect action slot in the
program's slot order, and its relation is the first ``[relations, R, objects]`` after it.

Keys inside an argument precede the argument's own key, the order of the real records
(YSKX3-8: ``"27-36"`` object, ``"43-59"`` action, ``"37-59"`` localization; LSKA2-2205: relation,
inner object reference, indirect-object action).

Values (§e)
-----------
Ids are listed in keyframe order (AGQA lists them in no particular order). The question's
*evidence keyframes* E are the keyframes that make its answer, always a contiguous run:

* exists / what templates (objExists, objRelExists, relExists, and / xor, objWhat,
  objWhatChoose): the window;
* objFirst / objLast and their Verify forms: the answer's stretch inside the window (objFirst:
  the relation's first keyframe through the keyframe where it stops; objLast: from
  ``obj_last_extra_keyframes`` before the gap through its last keyframe), as the scalar executor
  (``tensorqa.engine.scalar``) defines it; objFirstChoose / objLastChoose: the chosen object's
  stretch, its stopping keyframe included when ``choose_stretch_includes_stop``;
* relTime / objTime: the compare side that the answer names (§a.2: strictly before X's first
  keyframe, or strictly after its last).

Then:

* an object lists its vertices ``oN/f`` at the keyframes of E where it takes part: it stands in
  the question's relation (objRelExists, and / xor, the verify and choose templates) or it is
  interacted with under the template's §c.1 rule (objExists, objTime). Empty when it never does:
  the answer is then "no" (for a choose template: it is not the answer);
* a relation lists ``rN/f`` / ``vNNN/f`` at the keyframes of E where it holds with one of the
  question's objects (objRelExists, and / xor, the choose templates) or with any object
  (relExists, objWhat, relTime, and the objFirst / objLast family, whose stretch is the
  relation's whatever the object);
* an action argument (actTime, relTime, objTime, the length templates) is its instance-1 id
  ``cNNN/1``; an object reference inside an indirect-object action: see the decisions below;
* a localization lists the window's keyframes on its span (before / after / between: the window;
  while: the action's keyframes, the same run), and ``cNNN/1`` on the span of each of its actions;
* the whole video (a window slot filled by nothing) lists every keyframe on a zero-width key.

Decisions where §e is silent
----------------------------
* **Zero-width key position.** The real record YSKX3-9 ("Was a blanket one of the things they
  were interacting with?", 59 characters, ``?`` at 58) has ``"57-57"``: one character before the
  point where a localization phrase would be inserted (58). The key is placed there
  (:data:`ZERO_WIDTH_SHIFT`), reproducing that record.
* **"In the video,"**: §e maps an opening "In the video," to its 12 characters. In tensorqa's
  frames that opening occurs only as wording of the time templates (actTime, relTime, objTime);
  such a question gets ``"0-12"`` listing every keyframe (it names the whole video), before the
  other keys. Frames never start with a placeholder (``check_frame``), so §e's capitalized
  sentence-start localization never arises.
* **Object references in object slots** (``the object they were holding first`` as objRelExists'
  object) are grounded like a direct object: their referent's vertices at E, in the question's
  relation. The relation inside the reference phrase gets no key of its own (LSKA2-2205's inner
  reference has none either).
* **Object references inside indirect-object actions** (action slots and localizing actions
  alike) have no part in the question's relation,
  so they list the keyframes that define them: the referent's vertices where the reference's
  relation holds with it, over that relation's whole-video first stretch ("first"), last stretch
  ("last", with ``obj_last_extra_keyframes``) or the whole video ("whole"). For LSKA2-2205 this is
  the one id the record has. An action phrase naming its object twice ("watching {object} or
  something on {object}") gives a key per occurrence, with the same ids.
* **Action instance ids** are always ``cNNN/1`` (§f 2, "grounding always instance 1"), also for
  between's X, whose window starts after X's last instance. The id exists in the exported graph
  whenever the class has an instance, even one without keyframes (the export numbers them all).
* **actTime's first action** and the **length templates' actions** get ``[cNNN/1]`` like every
  action argument (LSKA2-2205 grounds its action that way), not keyframes.
* **Templates with nothing to point at**: objWhatGeneral, actWhatAfterAll, actWhatBefore, actFirst
  and actLast have only their localization's keys (their answer is not in the question);
  actLongest / actShortest have no argument and no window: ``{}``.
* **Registry ablations** (``primitives.registry.ablate``) are ignored: windows follow the
  semantics' own rules, as the records' programs state them.

Two implementations
-------------------
(``grounding_scalar.py`` and ``grounding_bulk.py``; ``grounding_text.py`` holds what they share.)
:func:`ground_record` is the scalar reference, written to be read: one record, plain loops over
its frame's parts; a reference phrase's wording variant is found by matching the question text.
:func:`grounding_column` is the bulk path, with no Python loop over rows: rows are taken video
block by video block (scene tables: keyframe names, instance keyframe ranges, interaction masks,
built once per block) and laid out per (template, frame, window shape, indirect-action shape)
group, where every row has the same keys in the same order; windows, evidence runs, offsets and
id lists are numpy columns, and each distinct (video, id source, o, o2, r, run) list is built
once. The JSON texts and the re-rendered questions are each one gather over a string pool
(``text.gather_text``). The bulk path assumes the wording variants ``records.render`` picks
(frame variant ``v``: object and action ``v % 3``, object2 and action2 ``(v + 1) % 3``, X
``(v + 2) % 3``, Y ``v % 3``), re-renders each question with them and compares: a row whose text
differs (a record from elsewhere) goes to the scalar path, which matches any variant, or raises
:class:`TensorQAError` when the question does not follow its frame.
"""

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
    """sg_grounding of every record: strings [M] (an Array, or a ChunkedArray past 256K rows per
    block), one JSON object text per row, in row order (``{"start-end": [vertex ids], ...}``,
    ``json.dumps`` spacing).

    records: a RECORD_SCHEMA table (at least the non-optional :data:`COLUMNS`). scenes: the scenes
    the records were generated from (``SceneBatch``, ``{video_id: VideoScene}`` or ``SceneStore``).
    semantics: the semantics they were generated with. block_videos: videos whose scene tables are
    held at once (about ``block_videos * F * 2 KiB`` for F keyframes); their rows are grounded
    ``text.CHUNK_ROWS`` at a time. Rows already grouped by video (as the generator writes them) are
    read in place; otherwise they are gathered video by video and the result is put back in row
    order. A pool-scale table is best grounded block by block, as the generator writes it.
    reference_relations: the relation each indirect-object action's reference goes through, per
    action slot (int64[M], ``CellBlock.action_reference_relations``), when the caller generated
    the records; otherwise it is read back from the program text.
    """
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
