"""Scene graphs -> AGQA's stsgs pickle layout (``AGQA_{train,test}_stsgs.pkl``, docs/reference/agqa.md
§2.2), so AGQA program executors (STAIR's ``SceneGraphExecuter``, AGQA's tooling) run on our graphs.

File: ``pickle`` (protocol 4) of ``{video_id: {vertex_id: vertex dict}}``, a cyclic graph of plain
dicts (pickle keeps the sharing). Vertices are inserted frames (ascending), actions (by start),
objects (by frame then class), then relations grouped attention, contact, spatial, verb (each by
frame then class), with the fields of the real dumps in their order.

Choices (AGQA does not document them):

* ``secs`` must be > 0 (executors estimate fps as mean(frame / secs)): a keyframe at secs <= 0 is
  written at :data:`MIN_SECS`, and every time comparison (``all_f``, frame ``actions``) uses the
  written secs. Seconds are the shortest decimal that reads back as the same float32.
* An object gets a vertex where it is annotated or where a relation holds with it (a relation vertex
  needs one), so reading back gives ``obj | rel.any(-1)`` (``obj`` for every scene we make).
* ``next`` / ``prev`` of an object or relation vertex: the same class at the adjacent keyframe, None
  when absent there. Instances overlap when their closed intervals meet; ``while`` lists them in start
  order, ``next_discrete`` is the first to start after the end, ``prev_discrete`` the last to end
  before the start (ties: the later in start order). An action's ``objects`` / relation groups gather
  its keyframes' vertices; an instance covering no keyframe keeps an empty ``all_f``.
* Pickling recurses once per nested container: the dump runs in a worker thread with a large stack
  and a raised recursion limit (both restored). Pass ``video_ids`` to export part of a store.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
from pathlib import Path
from typing import Iterable, Union

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.outputs import check_output_file, new_file, publish
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.store import SceneStore, open_store
from tensorqa.scenes.vocab import vocab

PathLike = Union[str, os.PathLike]

MIN_SECS = 1e-3  # seconds written for a keyframe stored at secs <= 0
PICKLE_PROTOCOL = 4
RELATION_GROUPS = ("attention", "contact", "spatial", "verb")  # insertion order of relation vertices


_MAX_FRAME = 999_999  # 6 digits
_BLOCK = 256  # videos read from the store at a time
# recursion budget of the dump: pickling nests at most one level per container (vertex dict, list,
# names/vertices dict), and a vertex owns at most 18 of them (an action vertex)
_LEVELS_PER_VERTEX = 20
_STACK_BYTES_PER_LEVEL = 1024  # CPython 3.11's C pickler uses ~200-350 bytes a level
_MIN_STACK, _MAX_STACK = 64 << 20, 1 << 30  # the dump thread's stack (virtual; pages are touched as used)


def _seconds(values: np.ndarray) -> list[float]:
    """float32[K] -> Python floats: the shortest decimals that read back as the same float32."""
    return [float(str(x)) for x in np.asarray(values, dtype=np.float32)]


def _group() -> dict:
    return {"names": [], "vertices": []}


def _link(a: dict | None, b: dict | None) -> None:
    if a is not None and b is not None:
        a["next"], b["prev"] = b, a


def video_graph(scene: VideoScene) -> dict[str, dict]:
    """One video's scene as AGQA vertices: ``{vertex_id: vertex dict}`` (see the module docstring).

    scene: frame_ids int32[F] (unique, 0..999999), frame_secs float32[F], rel bool[F, 36, 54],
    obj bool[F, 36], instances [N]; any order (sorted here).
    """
    s = scene.sorted()
    fids = s.frame_ids.astype(np.int64)
    if fids.size and (fids[0] < 0 or fids[-1] > _MAX_FRAME):
        bad = int(fids[0] if fids[0] < 0 else fids[-1])
        raise TensorQAError(f"video {s.video_id!r}: frame number {bad} does not fit AGQA's 6-digit frame ids")
    if np.any(fids[1:] == fids[:-1]):
        dup = int(fids[1:][fids[1:] == fids[:-1]][0])
        raise TensorQAError(f"video {s.video_id!r}: frame number {dup} appears more than once")
    secs32 = np.where(s.frame_secs > 0, s.frame_secs, np.float32(MIN_SECS)).astype(np.float32)
    names = [f"{f:06d}" for f in fids.tolist()]
    secs = _seconds(secs32)
    frames = [{"id": fid, "secs": sec, "type": "frame", "metadata": s.split, "objects": _group(),
               **{kind: _group() for kind in RELATION_GROUPS}, "actions": [], "next": None, "prev": None}
              for fid, sec in zip(names, secs)]
    for a, b in zip(frames, frames[1:]):
        _link(a, b)
    objects = _object_vertices(s, frames, names, secs)
    relations = _relation_vertices(s, frames, objects, names, secs)
    actions = _action_vertices(s, frames, secs32)
    graph: dict[str, dict] = {}
    for vertex in frames + actions + list(objects.values()):
        graph[vertex["id"]] = vertex
    for kind in RELATION_GROUPS:
        for vertex in relations.values():  # inserted by (frame, class)
            if vertex["type"] == kind:
                graph[vertex["id"]] = vertex
    return graph


def _object_vertices(s: VideoScene, frames: list[dict], names: list[str], secs: list[float]) -> dict:
    """{(f, o): object vertex}, frame then class (np.nonzero walks row-major)."""
    v = vocab()
    objects: dict[tuple[int, int], dict] = {}
    present = s.obj | s.rel.any(-1)  # [F, O]: a relation needs an object vertex
    for f, o in zip(*(x.tolist() for x in np.nonzero(present))):
        cls = v.object_ids[o]
        vertex = {"id": f"{cls}/{names[f]}", "type": "object", "class": cls,
                  **{kind: [] for kind in RELATION_GROUPS}, "visible": True, "bbox": None, "metadata": s.split,
                  "frame_num": names[f], "secs": secs[f], "next": None, "prev": None}
        objects[f, o] = vertex
        frames[f]["objects"]["names"].append(cls)
        frames[f]["objects"]["vertices"].append(vertex)
        _link(objects.get((f - 1, o)), vertex)
    return objects


def _relation_vertices(s: VideoScene, frames: list[dict], objects: dict, names: list[str], secs: list[float]) -> dict:
    """{(f, r): relation vertex}: one per (frame, relation class), its objects by class."""
    v = vocab()
    relations: dict[tuple[int, int], dict] = {}
    for f, r, o in zip(*(x.tolist() for x in np.nonzero(s.rel.transpose(0, 2, 1)))):
        vertex = relations.get((f, r))
        kind = v.relation_kinds[r]
        if vertex is None:
            cls = v.relation_ids[r]
            vertex = {"id": f"{cls}/{names[f]}", "type": kind, "class": cls, "objects": [], "metadata": s.split,
                      "frame": names[f], "secs": secs[f], "next": None, "prev": None}
            relations[f, r] = vertex
            frames[f][kind]["names"].append(cls)
            frames[f][kind]["vertices"].append(vertex)
            _link(relations.get((f - 1, r)), vertex)
        vertex["objects"].append(objects[f, o])
        objects[f, o][kind].append(vertex)
    return relations


def _action_vertices(s: VideoScene, frames: list[dict], secs32: np.ndarray) -> list[dict]:
    """Action vertices in start order, linked to their frames, same-class neighbours and overlaps."""
    v = vocab()
    start32, end32 = s.inst_start, s.inst_end
    inside = (secs32[None, :] >= start32[:, None]) & (secs32[None, :] <= end32[:, None])  # [N, F]
    starts, ends = _seconds(start32), _seconds(end32)
    actions: list[dict] = []
    last_of_class: dict[int, dict] = {}
    count: dict[int, int] = {}
    for i, a in enumerate(s.inst_cls.tolist()):
        cls = v.actions[a]
        count[a] = count.get(a, 0) + 1
        covered = np.flatnonzero(inside[i]).tolist()
        obj_index = v.action_object[a]
        vertex = {"id": f"{cls}/{count[a]}", "charades": cls, "phrase": v.action_phrases[a], "type": "action",
                  "start": starts[i], "end": ends[i], "length": ends[i] - starts[i]}
        for kind in ("objects", *RELATION_GROUPS):
            gathered = [x for f in covered for x in frames[f][kind]["vertices"]]
            vertex[kind] = {"names": [x["class"] for x in gathered], "vertices": gathered}
        vertex.update({"metadata": s.split, "all_f": [frames[f]["id"] for f in covered],
                       "object_id": v.object_ids[obj_index] if obj_index >= 0 else None,
                       "verb_id": v.verb_ids[v.action_verb[a]], "next_discrete": None, "prev_discrete": None,
                       "next_instance": None, "prev_instance": last_of_class.get(a), "while": []})
        if vertex["prev_instance"] is not None:
            vertex["prev_instance"]["next_instance"] = vertex
        last_of_class[a] = vertex
        actions.append(vertex)
        for f in covered:
            frames[f]["actions"].append(vertex)
    overlap = (start32[:, None] <= end32[None, :]) & (end32[:, None] >= start32[None, :])  # [N, N]
    np.fill_diagonal(overlap, False)
    for i, vertex in enumerate(actions):
        vertex["while"] = [actions[j] for j in np.flatnonzero(overlap[i]).tolist()]
        after = np.flatnonzero(start32 > end32[i])
        if after.size:  # instances are in start order: the first one after the end is the nearest
            vertex["next_discrete"] = actions[int(after[0])]
        before = np.flatnonzero(end32 < start32[i])
        if before.size:  # the one ending last; among equal ends the later in start order
            vertex["prev_discrete"] = actions[int(before[np.flatnonzero(end32[before] == end32[before].max())[-1]])]
    return actions


def _scenes(store: SceneStore, video_ids: list[str] | None) -> Iterable[VideoScene]:
    if video_ids is None:
        for batch in store.blocks(_BLOCK):
            yield from batch.scenes()
    else:
        for video_id in video_ids:
            yield store.scene(video_id)


class _Counted:
    """A file whose writes advance a progress bar by their bytes."""

    def __init__(self, f, bar):
        self.f, self.bar = f, bar

    def write(self, data) -> int:
        n = self.f.write(data)
        self.bar.update(len(data))
        return n


def _dump(data: dict, path: Path, levels: int, progress: bool = False) -> None:
    """``pickle.dump`` with room for ``levels`` nested saves, written to ``path`` atomically
    (``progress``: a bar of the bytes written on stderr)."""
    from tqdm import tqdm

    partial = path.with_name(path.name + ".partial")
    limit = sys.getrecursionlimit()
    stack = threading.stack_size()
    failure: list[BaseException] = []

    def write():
        try:
            with open(new_file(partial), "wb") as f, tqdm(desc="export-agqa: pickle", unit="B", unit_scale=True,
                                                           disable=not progress, dynamic_ncols=True) as bar:
                # new: a planted link is not written through
                pickle.dump(data, _Counted(f, bar) if progress else f, protocol=PICKLE_PROTOCOL)
        except BaseException as e:  # re-raised in the caller's thread
            failure.append(e)

    # the C pickler recurses once per nested container; a thread of our own gets a stack that holds
    # that many levels (the main thread's is fixed by the OS, often 8 MiB). The recursion limit never
    # exceeds what the stack holds, so a graph too deep even for that fails with RecursionError.
    size = min(max(_MIN_STACK, levels * _STACK_BYTES_PER_LEVEL), _MAX_STACK)
    try:
        sys.setrecursionlimit(max(limit, size // _STACK_BYTES_PER_LEVEL))
        threading.stack_size(size)
        worker = threading.Thread(target=write, name="export-agqa-pickle")
        worker.start()
        worker.join()
    finally:
        threading.stack_size(stack)
        sys.setrecursionlimit(limit)
    if failure:
        partial.unlink(missing_ok=True)
        e = failure[0]
        if isinstance(e, OSError):
            raise TensorQAError(f"{path}: cannot write ({e.strerror or e})") from None
        if isinstance(e, RecursionError):
            raise TensorQAError(f"{path}: a video graph nests too deeply for pickle (RecursionError)") from None
        raise e
    try:
        publish(partial, path)
    except OSError as e:
        partial.unlink(missing_ok=True)
        raise TensorQAError(f"{path}: cannot write ({e.strerror or e})") from None


def export_agqa(store: SceneStore | PathLike, path: PathLike, video_ids: Iterable[str] | None = None,
                progress: bool = False) -> Path:
    """Write videos of a store as an AGQA stsgs pickle at ``path`` (atomically, via ``path.partial``).

    store: a :class:`SceneStore` or the path of one. video_ids: the videos to write, in this order
    (default: all, in store order); an id the store lacks is a :class:`TensorQAError` and nothing
    is written. progress: bars on stderr (the graphs, then the pickle's bytes). Returns ``path``.
    """
    from tqdm import tqdm

    path = Path(path)
    if not path.parent.is_dir():
        raise TensorQAError(f"{path}: output directory {path.parent} does not exist")
    check_output_file(path, None, what="the output is a pickle file")  # not a folder or device: before any work
    if isinstance(video_ids, str):
        video_ids = [video_ids]
    own = not isinstance(store, SceneStore)
    s = open_store(store) if own else store
    try:
        if video_ids is not None:
            video_ids = list(dict.fromkeys(video_ids))
            for video_id in video_ids:
                s.index(video_id)  # fail on an unknown id before any work
        data = {}
        with tqdm(total=len(s) if video_ids is None else len(video_ids), desc="export-agqa: graphs", unit="video",
                  disable=not progress, dynamic_ncols=True) as bar:
            for scene in _scenes(s, video_ids):
                data[scene.video_id] = video_graph(scene)
                bar.update()
    finally:
        if own:
            s.close()
    most = max((len(g) for g in data.values()), default=0)
    _dump(data, path, levels=_LEVELS_PER_VERTEX * most + 100, progress=progress)
    return path
