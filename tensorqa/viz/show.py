"""``tensorqa show STORE VIDEO [--pool POOL --question ID] --out FILE.{png,html}``: one video's
timeline, with a question's window and grounding when one is given."""

from __future__ import annotations

import os
from pathlib import Path

from tensorqa.errors import TensorQAError
from tensorqa.scenes.store import open_store
from tensorqa.scenes.vocab import vocab
from tensorqa.viz.draw_timeline import draw_timeline
from tensorqa.viz.html import esc, image, page, table, write_atomic
from tensorqa.viz.question import find_record
from tensorqa.viz.timeline import timeline_data

FORMATS = (".png", ".html")


def check_out(out: str | os.PathLike, formats: tuple[str, ...] = FORMATS) -> Path:
    """``--out``: a file with one of ``formats`` in an existing folder."""
    out = Path(out)
    if out.suffix.lower() not in formats:
        raise TensorQAError(f"--out {out}: expected a file ending in {' or '.join(formats)}")
    if not out.parent.is_dir():
        raise TensorQAError(f"--out {out}: its folder does not exist")
    if out.is_dir():
        raise TensorQAError(f"--out {out}: is a folder; expected a file")
    return out


def show(store: str, video: str, out: str, pool: str | None = None, question: str | None = None,
         semantics: str = "agqa") -> dict:
    """Write the figure of ``video`` (with question ``question`` of ``pool``) to ``out``; returns
    the figure data (:func:`timeline.timeline_data`)."""
    if (pool is None) != (question is None):
        raise TensorQAError("--pool and --question go together (the question is looked up in the pool)")
    out_path = check_out(out)
    with open_store(store) as s:
        scene = s.scene(video)
    record = None
    if question is not None:
        record = find_record(pool, question)
        if record["video_id"] != video:
            raise TensorQAError(f"--question {question}: is about video {record['video_id']}, not {video}")
    data = timeline_data(scene, record, semantics)
    png = draw_timeline(data)
    write_atomic(out_path, png if out_path.suffix.lower() == ".png" else timeline_page(data, png))
    return data


def _marked(text: str, spans: dict) -> str:
    """The question with every non-empty grounding span marked (overlaps merged)."""
    lit = [False] * len(text)
    for key in spans:
        a, b = (int(x) for x in key.split("-"))
        for i in range(max(a, 0), min(b, len(text))):
            lit[i] = True
    out, i = [], 0
    while i < len(text):
        j = i
        while j < len(text) and lit[j] == lit[i]:
            j += 1
        out.append(f"<mark>{esc(text[i:j])}</mark>" if lit[i] else esc(text[i:j]))
        i = j
    return "".join(out)


GROUNDING_IDS = (
    '<p class="note">sg_grounding maps each marked span of the question (its character offsets, '
    "<code>start-end</code>) to scene-graph vertex ids: <code>000105</code> is a keyframe (its Charades "
    "frame number on six digits); <code>o4/000105</code> object o4 at that keyframe; <code>r15/000105</code> "
    "relation r15 at that keyframe (the relation vertex, whatever its object); <code>c076/1</code> the first "
    "instance of action c076 in the video (instances of a class are numbered from 1 in start order). "
    "The meaning column spells each id out.</p>")


def vertex_meaning(vid: str, data: dict) -> str:
    """One sg_grounding vertex id in words: ``r15/000105`` -> "holding at keyframe 105 (4.38 s)"."""
    v = vocab()
    at = {t["frame"]: t["secs"] for t in data["ticks"]}
    head, _, tail = vid.partition("/")

    def keyframe(f: str) -> str:
        secs = at.get(int(f))
        return f"keyframe {int(f)}" + (f" ({secs:.2f} s)" if secs is not None else "")

    if not tail:
        return keyframe(head)
    if head.startswith("c"):
        phrase = next((b["phrase"] for b in data["bars"] if b["instance"] == vid), head)
        return f"{phrase}, instance {tail}"
    if head.startswith("o") and head in v.object_ids:
        return f"{v.object_english[v.object_ids.index(head)]} at {keyframe(tail)}"
    if head in v.relation_ids:
        return f"{v.relation_english[v.relation_ids.index(head)]} at {keyframe(tail)}"
    return vid


def _cells_text(pairs: list[list]) -> str:
    return ", ".join(f"{o}@{f}" for o, f in pairs) or "none"


def _evidence_rows(data: dict) -> list[list]:
    ev = data["evidence"]
    rows = []
    if ev["relation"]:
        rows.append(["asked relation (black dots)", ev["relation"], ev["relation_name"],
                     _cells_text(ev["relation_cells"])])
    if ev["answer_object"]:
        rows.append(["answer object (green row)", ev["answer_object"], ev["answer_name"],
                     _cells_text(ev["answer_cells"])])
    return rows


def _relation_rows(data: dict) -> list[list]:
    """One row per (object, relation) of the grid: the keyframes where the relation holds."""
    v = vocab()
    frames: dict[tuple[str, str], list[int]] = {}
    for c in data["cells"]:
        for r in c["relations"]:
            frames.setdefault((c["object"], r), []).append(c["frame"])
    order = {o: i for i, o in enumerate(data["objects"])}
    rows = []
    for (o, r), fs in sorted(frames.items(), key=lambda x: (order[x[0][0]], v.relation_ids.index(x[0][1]))):
        i = v.relation_ids.index(r)
        rows.append([f"{v.object_english[v.object_ids.index(o)]} ({o})", f"{v.relation_english[i]} ({r})",
                     v.relation_kinds[i], ", ".join(map(str, fs))])
    return rows


def timeline_page(data: dict, png: bytes) -> str:
    """The HTML page of ``show``: the figure, then the question, its window and its grounding."""
    parts = [image(png, f"timeline of video {data['video_id']}")]
    q, w, g = data["question"], data["window"], data["grounding"]
    if q:
        parts.append("<h2>Question</h2>")
        parts.append(table(["field", "value"], [["question_id", q["question_id"]], ["template", q["template"]],
                                                ["answer", q["answer"]], ["program", q["program"]]]))
        parts.append(f"<p>{_marked(q['text'], g['spans'])}</p>"
                     '<p class="note">marked: the question spans that sg_grounding maps to scene-graph vertices</p>')
        parts.append("<h2>Localization window</h2>")
        parts.append(f"<p>{esc(w['kind'])}: {len(w['frames'])} keyframes, {w['start_s']:.2f} s to {w['end_s']:.2f} s "
                     f"(frames {esc(', '.join(map(str, w['frames'])))})</p>" if w else
                     "<p>none (the program has no localization)</p>")
        ev = data["evidence"]
        if ev["relation"] or ev["answer_object"]:
            parts.append("<h2>What the question asks, on the grid</h2>")
            parts.append(table(["", "id", "name", "cells (object@keyframe)"], _evidence_rows(data)))
        parts.append("<h2>Grounding (sg_grounding)</h2>")
        parts.append(GROUNDING_IDS)
        parts.append(table(["span", "text", "vertex ids", "meaning"],
                           [[k, q["text"][int(k.split('-')[0]):int(k.split('-')[1])], " ".join(ids),
                             "; ".join(vertex_meaning(i, data) for i in ids)]
                            for k, ids in g["spans"].items()]))
    parts.append("<h2>Action instances</h2>")
    parts.append(table(["instance", "action", "start s", "end s"] + (["in grounding"] if q else []),
                       [[b["instance"], b["phrase"], round(b["start_s"], 2), round(b["end_s"], 2)]
                        + (["yes" if b["highlight"] else ""] if q else []) for b in data["bars"]]))
    parts.append("<h2>Relations per object</h2>")
    parts.append(table(["object", "relation", "kind", "keyframes where it holds"], _relation_rows(data)))
    title = f"tensorqa show: video {data['video_id']}" + (f", question {q['question_id']}" if q else "")
    return page(title, "\n".join(parts))
