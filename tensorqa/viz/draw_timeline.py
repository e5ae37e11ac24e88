"""Drawing ``tensorqa show``'s figure from :func:`timeline.timeline_data` (matplotlib, Agg).

Two panels over the same seconds axis: action instances as bars (top), the person–object relation
grid (bottom: objects x keyframes, coloured by relation kind), keyframes as ticks under both. With
a question: its localization window shaded over both panels, its grounding's keyframes, objects
and action instances outlined in red, and its text, program and answer above."""

from __future__ import annotations

import textwrap

from tensorqa.scenes.vocab import vocab
from tensorqa.viz.plotting import png_bytes, pyplot
from tensorqa.viz.timeline import KIND_ORDER, NO_RELATION

KIND_COLOURS = {"contact": "#1f77b4", "verb": "#2ca02c", "spatial": "#ff7f0e", "attention": "#c5b0d5",
                NO_RELATION: "#d9d9d9"}
HIGHLIGHT = "#d62728"
WINDOW = "#fde68a"


def _object_name(oid: str) -> str:
    v = vocab()
    return v.object_english[v.object_ids.index(oid)]


def draw_timeline(data: dict, command: str = "show") -> bytes:
    """PNG bytes of the timeline figure of ``data`` (a :func:`timeline_data` dict)."""
    plt = pyplot(command)
    from matplotlib.patches import Patch, Rectangle

    bars, ticks, objects, cells = data["bars"], data["ticks"], data["objects"], data["cells"]
    secs = [t["secs"] for t in ticks]
    gaps = [b - a for a, b in zip(secs, secs[1:]) if b > a]
    width = 0.8 * min(gaps) if gaps else 0.8
    end = max(data["duration_s"], 1.0)
    top_h, grid_h = max(len(bars), 1) * 0.32 + 0.6, max(len(objects), 1) * 0.3 + 0.6
    fig, (ax_act, ax_rel) = plt.subplots(2, 1, sharex=True, figsize=(12, top_h + grid_h + 1.6),
                                         layout="constrained", gridspec_kw={"height_ratios": [top_h, grid_h]})
    q = data["question"]
    title = f"video {data['video_id']} ({data['split']}): {len(bars)} action instances, {len(ticks)} keyframes"
    if q:
        wrap = lambda s: "\n".join(textwrap.wrap(s, 150))  # noqa: E731
        title += (f"\n{q['question_id']} [{q['template']}]  {wrap(q['text'])}\nanswer: {q['answer']}"
                  f"\nprogram: {wrap(q['program'])}")
    fig.suptitle(title, x=0.01, ha="left", fontsize=9)

    w = data["window"]
    for ax in (ax_act, ax_rel):
        if w:
            ax.axvspan(w["start_s"] - width / 2, w["end_s"] + width / 2, color=WINDOW, alpha=0.6, zorder=0)
        for t in ticks:
            ax.axvline(t["secs"], color=HIGHLIGHT if t["highlight"] else "#bbbbbb",
                       lw=1.2 if t["highlight"] else 0.4, zorder=0.5)

    for i, b in enumerate(bars):
        ax_act.barh(i, max(b["end_s"] - b["start_s"], 0.05), left=b["start_s"], height=0.6,
                    color="#8da0cb", edgecolor=HIGHLIGHT if b["highlight"] else "#4b5d8a",
                    linewidth=2.2 if b["highlight"] else 0.6, zorder=2)
    ax_act.set_yticks(range(len(bars)), [f"{b['phrase']} ({b['instance']})" for b in bars], fontsize=7)
    ax_act.set_ylim(len(bars) - 0.4, -0.6)
    ax_act.set_title("action instances", fontsize=8, loc="left")

    row = {o: i for i, o in enumerate(objects)}
    for c in cells:
        x, y = next(t["secs"] for t in ticks if t["frame"] == c["frame"]), row[c["object"]]
        ax_rel.add_patch(Rectangle((x - width / 2, y - 0.4), width, 0.8, facecolor=KIND_COLOURS[c["kind"]],
                                   edgecolor=HIGHLIGHT if c["highlight"] else "white",
                                   linewidth=2.0 if c["highlight"] else 0.3, zorder=2))
    ax_rel.set_yticks(range(len(objects)), [f"{_object_name(o)} ({o})" for o in objects], fontsize=7)
    ax_rel.set_ylim(len(objects) - 0.4, -0.6)
    ax_rel.set_xlim(min([0.0] + secs) - width, end + width)
    ax_rel.set_xlabel("seconds (vertical lines: keyframes; red: in the question's grounding)", fontsize=8)
    ax_rel.set_title("person–object relations per keyframe", fontsize=8, loc="left")
    handles = [Patch(color=KIND_COLOURS[k], label=k) for k in (*KIND_ORDER, NO_RELATION)]
    if w:
        handles.append(Patch(color=WINDOW, label=f"window: {w['kind']}"))
    if q:
        handles.append(Patch(facecolor="white", edgecolor=HIGHLIGHT, linewidth=2, label="grounding"))
    ax_rel.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return png_bytes(fig)
