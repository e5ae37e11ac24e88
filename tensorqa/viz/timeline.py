"""The figure data of ``tensorqa show``: one video's timeline and a question's evidence on it, as plain
Python values (no plotting library), so tests check them against the store and the record.

``timeline_data(scene, record=None, semantics="agqa") -> dict`` with video_id, split, duration_s and
    bars     one per action instance [N] in (start, end, class) order: instance, action, phrase,
             start_s, end_s, highlight
    ticks    one per keyframe [F]: frame, id, secs, highlight
    objects  the grid's rows [O']: object classes annotated at some keyframe
    cells    one per (object, keyframe) where the object is annotated: relations, kinds (every kind
             present, KIND_ORDER), kind (the first), highlight, grounded, asked, answer
    legend   [{"key", "label"}] in order (:func:`legend_entries`)
and, with a record (a RECORD_SCHEMA row), else None:
    question   question_id, template, text, program, answer
    window     kind, frames, start_s, end_s: the keyframes of the program's Localize (§a.1), the whole
               video, or the answered side of a compare-time template (§a.2)
    grounding  the record's sg_grounding (computed when the pool has none): keyframes, objects,
               relations, instances, spans; a vertex id highlights its keyframe and cell
    evidence   the asked relation and its cells, the answer object and its cells, the question's objects
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import numpy as np

from tensorqa.agqa.program import Call, parse_program
from tensorqa.agqa.semantics import Semantics
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.vocab import vocab

# a grid cell takes the first kind among its relations: contact is the most telling evidence,
# attention (looking at / not looking at) the least
KIND_ORDER = ("contact", "verb", "spatial", "attention")
NO_RELATION = "none"  # the object is annotated, the person stands in no relation to it


def seconds(x) -> float:
    """A float32 time as the shortest decimal that reads back as it (2.2, not 2.200000047683716)."""
    return float(str(np.float32(x)))


def keyframe_id(frame: int) -> str:
    """AGQA's vertex id of a keyframe: its Charades frame number on 6 digits."""
    return f"{int(frame):06d}"


def parse_grounding(grounding: Mapping[str, list[str]] | str | None) -> dict:
    """Vertex ids of an sg_grounding, by kind: keyframes (frame numbers, ascending), objects and
    relations ([id, frame] pairs), action instances (``cNNN/k``)."""
    spans = json.loads(grounding) if isinstance(grounding, str) else dict(grounding or {})
    frames, objects, relations, instances = set(), set(), set(), set()
    for ids in spans.values():
        for vid in ids:
            head, _, tail = vid.partition("/")
            if not tail:
                frames.add(int(head))
            elif head.startswith("c"):
                instances.add(vid)
            else:
                frames.add(int(tail))
                (objects if head.startswith("o") else relations).add((head, int(tail)))
    return {"keyframes": sorted(frames), "objects": [list(x) for x in sorted(objects, key=lambda x: (x[1], x[0]))],
            "relations": [list(x) for x in sorted(relations, key=lambda x: (x[1], x[0]))],
            "instances": sorted(instances), "spans": spans}


def instance_ids(scene: VideoScene) -> list[str]:
    """``cNNN/k`` of each instance [N] of a sorted scene: k counts the class's instances from 1 in
    start order (the numbering of ``export_agqa.video_graph``)."""
    v = vocab()
    seen: dict[int, int] = {}
    out = []
    for c in scene.inst_cls.tolist():
        seen[c] = seen.get(c, 0) + 1
        out.append(f"{v.actions[c]}/{seen[c]}")
    return out


def window_frames(program: str, scene: VideoScene, semantics: str | Semantics = "agqa", window: str = "",
                  answer: str = "") -> tuple[str, list[int]] | None:
    """(kind, frame numbers [W]) of a program's window: its first ``Localize(...)`` (§a.1), the side a
    compare-time answer names (§a.2), or every keyframe for "video"; None when there is none here."""
    from tensorqa.engine.scalar import Undefined
    from tensorqa.agqa.executor import VideoExecutor

    node = next((n for n in parse_program(program).walk() if isinstance(n, Call) and n.func == "Localize"), None)
    if node is None:
        return ("video", [int(f) for f in scene.frame_ids]) if window == "video" else None
    kind = str(node.args[0])
    if kind == "temporal tag":
        if answer not in ("before", "after"):
            return None
        sides = VideoExecutor(scene, semantics).compare_frames(node.args[1])  # the compare windows' twin
        if isinstance(sides, Undefined):
            return None
        frames = sides[0] if answer == "before" else sides[2]
        return (f"compare-{answer}", frames) if frames else None
    frames = VideoExecutor(scene, semantics).window_frames(node)
    return None if isinstance(frames, Undefined) or not frames else (kind, [int(f) for f in frames])


def relation_cells(scene: VideoScene) -> tuple[list[str], list[dict]]:
    """The grid's rows (object ids annotated at some keyframe) and its cells, one per annotated
    (object, keyframe): the person's relations to the object there and their kinds (KIND_ORDER)."""
    v = vocab()
    kinds = np.array(v.relation_kinds)
    present = scene.obj | scene.rel.any(axis=2)  # bool[F, O]
    rows = [o for o in range(v.num_objects) if present[:, o].any()]
    cells = []
    for o in rows:
        for f in np.flatnonzero(present[:, o]).tolist():
            rs = np.flatnonzero(scene.rel[f, o]).tolist()
            have = set(kinds[rs].tolist())
            present_kinds = [k for k in KIND_ORDER if k in have]
            cells.append({"object": v.object_ids[o], "frame": int(scene.frame_ids[f]),
                          "relations": [v.relation_ids[r] for r in rs], "kinds": present_kinds,
                          "kind": present_kinds[0] if present_kinds else NO_RELATION, "highlight": False,
                          "grounded": False, "asked": False, "answer": False})
    return [v.object_ids[o] for o in rows], cells


def timeline_data(scene: VideoScene, record: Mapping[str, Any] | None = None, semantics: str = "agqa") -> dict:
    """The figure data of one video, with a question's window and grounding when ``record`` is
    given (see the module docstring)."""
    v = vocab()
    s = scene.sorted()
    secs = [seconds(x) for x in s.frame_secs]
    bars = [{"instance": iid, "action": v.actions[c], "phrase": v.action_phrases[c],
             "start_s": seconds(a), "end_s": seconds(b), "highlight": False}
            for iid, c, a, b in zip(instance_ids(s), s.inst_cls.tolist(), s.inst_start, s.inst_end)]
    ticks = [{"frame": int(f), "id": keyframe_id(f), "secs": t, "highlight": False} for f, t in zip(s.frame_ids, secs)]
    objects, cells = relation_cells(s)
    duration = max([0.0] + secs + [b["end_s"] for b in bars])
    data = {"video_id": s.video_id, "split": s.split, "duration_s": duration, "bars": bars, "ticks": ticks,
            "objects": objects, "cells": cells, "question": None, "window": None, "grounding": None,
            "evidence": None}
    if record is None:
        data["legend"] = legend_entries(data)
        return data
    data["question"] = {k: record.get(src) for k, src in (("question_id", "question_id"), ("template", "template"),
                        ("text", "question"), ("program", "program"), ("answer", "answer"))}
    found = window_frames(record["program"], s, semantics, record.get("window") or "", record.get("answer") or "")
    if found:
        kind, frames = found
        at = {int(f): t for f, t in zip(s.frame_ids, secs)}
        data["window"] = {"kind": kind, "frames": frames,
                          "start_s": at[frames[0]], "end_s": at[frames[-1]]}
    grounding = record.get("sg_grounding")
    if grounding is None:
        from tensorqa.agqa.grounding import ground_record

        grounding = ground_record(record, s, semantics)
    g = data["grounding"] = parse_grounding(grounding)
    lit_frames, lit_objects, lit_instances = set(g["keyframes"]), {tuple(x) for x in g["objects"]}, set(g["instances"])
    for t in ticks:
        t["highlight"] = t["frame"] in lit_frames
    lit_relations = {(r, f) for r, f in g["relations"]}
    for c in cells:
        c["highlight"] = (c["object"], c["frame"]) in lit_objects
        c["grounded"] = any((r, c["frame"]) in lit_relations for r in c["relations"])
    for b in bars:
        b["highlight"] = b["instance"] in lit_instances
    data["evidence"] = question_evidence(record, cells)
    data["legend"] = legend_entries(data)
    return data


def question_evidence(record: Mapping[str, Any], cells: list[dict]) -> dict:
    """What the question asks, located on the grid (``evidence`` in the module docstring); marks
    the cells' ``asked`` and ``answer``."""
    v = vocab()
    relation = record.get("relation") or None
    english = dict(zip(v.object_english, v.object_ids))
    answer = english.get(record.get("answer") or "")
    for c in cells:
        c["asked"] = relation is not None and relation in c["relations"]
        c["answer"] = c["object"] == answer
    return {"relation": relation,
            "relation_name": v.relation_english[v.relation_ids.index(relation)] if relation else None,
            "relation_cells": [[c["object"], c["frame"]] for c in cells if c["asked"]],
            "answer_object": answer, "answer_name": record.get("answer") if answer else None,
            "answer_cells": [[c["object"], c["frame"]] for c in cells if c["answer"]],
            "question_objects": [o for o in (record.get("object"), record.get("object2")) if o]}


def legend_entries(data: dict) -> list[dict]:
    """What the figure's legend explains, in order: the relation kinds, the window, and with a
    question what it asks (the asked relation, the answer object) and its grounding."""
    entries = [{"key": f"kind:{k}", "label": k} for k in KIND_ORDER]
    entries.append({"key": f"kind:{NO_RELATION}", "label": "annotated, no relation of the kind"})
    w, ev = data["window"], data["evidence"]
    if w:
        entries.append({"key": "window", "label": f"window: {w['kind']}"})
    if ev and ev["relation"]:
        entries.append({"key": "asked", "label": f"asked relation holds: {ev['relation_name']} ({ev['relation']})"})
    if ev and ev["answer_object"]:
        entries.append({"key": "answer", "label": f"answer object: {ev['answer_name']} ({ev['answer_object']})"})
    if data["question"]:
        entries.append({"key": "grounding", "label": "red: in the question's grounding"})
    return entries
