"""``tensorqa show STORE VIDEO [--pool POOL --question ID] --out FILE.{png,html}``: one video's
timeline, with a question's window and grounding when one is given."""

from __future__ import annotations

import os
from pathlib import Path

from tensorqa.errors import TensorQAError
from tensorqa.scenes.store import open_store
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
        parts.append("<h2>Grounding (sg_grounding)</h2>")
        parts.append(table(["span", "text", "vertex ids"],
                           [[k, q["text"][int(k.split('-')[0]):int(k.split('-')[1])], " ".join(ids)]
                            for k, ids in g["spans"].items()]))
    parts.append("<h2>Action instances</h2>")
    parts.append(table(["instance", "action", "start s", "end s", "in grounding"],
                       [[b["instance"], b["phrase"], round(b["start_s"], 2), round(b["end_s"], 2),
                         "yes" if b["highlight"] else ""] for b in data["bars"]]))
    title = f"tensorqa show: video {data['video_id']}" + (f", question {q['question_id']}" if q else "")
    return page(title, "\n".join(parts))
