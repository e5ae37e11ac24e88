"""Drawing ``tensorqa show``'s figure from :func:`timeline.timeline_data` (matplotlib, Agg): action bars
over the person–object relation grid (a row per object, a cell per annotated keyframe, one stripe per
relation kind so every kind shows), on one seconds axis. With a question: its window shaded, the
asked relation's cells dotted, the answer's row banded, the grounding outlined in red, its text above.
"""

from __future__ import annotations

import textwrap

import numpy as np

from tensorqa.scenes.vocab import vocab
from tensorqa.viz.plotting import png_bytes, pyplot
from tensorqa.viz.timeline import KIND_ORDER, NO_RELATION

KIND_COLOURS = {"contact": "#1f77b4", "verb": "#2ca02c", "spatial": "#ff7f0e", "attention": "#9467bd",
                NO_RELATION: "#e5e5e5"}
HIGHLIGHT = "#d62728"
WINDOW = "#fde68a"
ANSWER = "#bbf7d0"
ANSWER_TEXT = "#15803d"


def _object_name(oid: str) -> str:
    v = vocab()
    return v.object_english[v.object_ids.index(oid)]


def cell_extents(secs: list[float]) -> list[tuple[float, float]]:
    """(left, right) seconds of each keyframe's cell [F]: half way to each neighbour, at most half
    the median gap to either side (an isolated keyframe does not get a wide cell)."""
    gaps = np.diff(secs) if len(secs) > 1 else np.array([])
    gaps = gaps[gaps > 0]
    half = float(np.median(gaps)) / 2 if len(gaps) else 0.5
    out = []
    for i, x in enumerate(secs):
        left = max(x - half, (secs[i - 1] + x) / 2) if i else x - half
        right = min(x + half, (x + secs[i + 1]) / 2) if i + 1 < len(secs) else x + half
        if right - left < 1e-6:  # two keyframes at the same second
            left, right = x - half / 4, x + half / 4
        pad = 0.06 * (right - left)
        out.append((left + pad, right - pad))
    return out


def draw_timeline(data: dict, command: str = "show") -> bytes:
    """PNG bytes of the timeline figure of ``data`` (a :func:`timeline_data` dict)."""
    plt = pyplot(command)
    bars, ticks, objects = data["bars"], data["ticks"], data["objects"]
    secs = [t["secs"] for t in ticks]
    extent = dict(zip((t["frame"] for t in ticks), cell_extents(secs)))
    top_h, grid_h = max(len(bars), 1) * 0.3 + 0.6, max(len(objects), 1) * 0.42 + 0.6
    fig, (ax_act, ax_rel) = plt.subplots(2, 1, sharex=True, figsize=(12, top_h + grid_h + 1.8),
                                         layout="constrained", gridspec_kw={"height_ratios": [top_h, grid_h]})
    fig.suptitle(_title(data), x=0.01, ha="left", fontsize=9)
    w = data["window"]
    grounded_secs = [t["secs"] for t in ticks if t["highlight"]]
    for ax in (ax_act, ax_rel):
        if w:
            lo, hi = extent[w["frames"][0]][0], extent[w["frames"][-1]][1]
            ax.axvspan(lo, hi, color=WINDOW, alpha=0.6, zorder=0)
        for x in secs:
            ax.axvline(x, color="#c8c8c8", lw=0.4, zorder=0.5)
        if grounded_secs:  # red ticks along the top edge: the grounding's keyframes
            ax.plot(grounded_secs, [1.0] * len(grounded_secs), marker="v", ls="none", color=HIGHLIGHT, ms=5,
                    transform=ax.get_xaxis_transform(), clip_on=False, zorder=5)
    for i, b in enumerate(bars):
        ax_act.barh(i, max(b["end_s"] - b["start_s"], 0.05), left=b["start_s"], height=0.6,
                    color="#8da0cb", edgecolor=HIGHLIGHT if b["highlight"] else "#4b5d8a",
                    linewidth=2.2 if b["highlight"] else 0.6, zorder=2)
    ax_act.set_yticks(range(len(bars)), [f"{b['phrase']} ({b['instance']})" for b in bars], fontsize=7)
    ax_act.set_ylim(len(bars) - 0.4, -0.6)
    ax_act.set_title("action instances", fontsize=8, loc="left")
    _draw_relations(ax_rel, data, extent)
    ax_rel.legend(handles=_legend(data["legend"]), fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return png_bytes(fig)


def _title(data: dict) -> str:
    q, ev = data["question"], data["evidence"]
    title = (f"video {data['video_id']} ({data['split']}): {len(data['bars'])} action instances, "
             f"{len(data['ticks'])} keyframes")
    if q:
        wrap = lambda s: "\n".join(textwrap.wrap(s, 150))  # noqa: E731
        title += f"\n{q['question_id']} [{q['template']}]  {wrap(q['text'])}\nanswer: {q['answer']}"
        if ev["relation"]:
            title += f"    asked relation: {ev['relation_name']} ({ev['relation']})"
        title += f"\nprogram: {wrap(q['program'])}"
    return title


def _draw_relations(ax_rel, data: dict, extent: dict) -> None:
    """The relation grid: one row per object, a striped cell per annotated keyframe."""
    from matplotlib.patches import Rectangle

    objects, cells, ev = data["objects"], data["cells"], data["evidence"]
    row = {o: i for i, o in enumerate(objects)}
    answer, named = (ev["answer_object"], set(ev["question_objects"])) if ev else (None, set())
    if answer in row:
        ax_rel.axhspan(row[answer] - 0.5, row[answer] + 0.5, color=ANSWER, zorder=0.2)
    stripe = 0.8 / len(KIND_ORDER)
    for c in cells:
        (left, right), y = extent[c["frame"]], row[c["object"]]
        for k, kind in enumerate(KIND_ORDER):
            colour = KIND_COLOURS[kind] if kind in c["kinds"] else KIND_COLOURS[NO_RELATION]
            ax_rel.add_patch(Rectangle((left, y - 0.4 + k * stripe), right - left, stripe, facecolor=colour,
                                       edgecolor="none", zorder=2))
        lit = c["highlight"] or c["grounded"]
        ax_rel.add_patch(Rectangle((left, y - 0.4), right - left, 0.8, facecolor="none",
                                   edgecolor=HIGHLIGHT if lit else "white", linewidth=2.2 if lit else 0.4, zorder=3))
    asked = [c for c in cells if c["asked"]]
    if asked:
        ax_rel.plot([sum(extent[c["frame"]]) / 2 for c in asked], [row[c["object"]] for c in asked], ls="none",
                    marker="o", ms=7, color="black", markeredgecolor="white", markeredgewidth=1.2, zorder=4)

    def label(o: str) -> str:
        return f"{_object_name(o)} ({o})" + ("  ◀ answer" if o == answer else "") + (
            "  · in the question" if o in named and o != answer else "")

    ax_rel.set_yticks(range(len(objects)), [label(o) for o in objects], fontsize=7)
    for tick, o in zip(ax_rel.get_yticklabels(), objects):
        if o == answer:
            tick.set_color(ANSWER_TEXT)
            tick.set_fontweight("bold")
    ax_rel.set_ylim(len(objects) - 0.4, -0.6)
    ax_rel.set_xlim(min([0.0] + [lo for lo, _ in extent.values()]) - 0.2, max(data["duration_s"], 1.0) + 0.5)
    ax_rel.set_xlabel("seconds (vertical lines: keyframes"
                      + ("; red ▼: the grounding's keyframes)" if data["question"] else ")"), fontsize=8)
    ax_rel.set_title("person–object relations per keyframe (each cell: one stripe per relation kind, top to bottom "
                     + ", ".join(KIND_ORDER) + ")", fontsize=8, loc="left")


def _legend(entries: list[dict]) -> list:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = []
    for e in entries:
        key = e["key"]
        if key.startswith("kind:"):
            handles.append(Patch(color=KIND_COLOURS[key[5:]], label=e["label"]))
        elif key == "window":
            handles.append(Patch(color=WINDOW, label=e["label"]))
        elif key == "asked":
            handles.append(Line2D([], [], ls="none", marker="o", ms=7, color="black", markeredgecolor="white",
                                  label=e["label"]))
        elif key == "answer":
            handles.append(Patch(color=ANSWER, label=e["label"]))
        elif key == "grounding":
            handles.append(Patch(facecolor="white", edgecolor=HIGHLIGHT, linewidth=2, label=e["label"]))
    return handles
