"""The figures of ``tensorqa report`` from :func:`summary.pool_summary` dicts (one pool, or a pool
and the one it is compared with): each function returns PNG bytes. Legends sit above the plots
(a tall chart's key is read first); a figure that shows both pools draws them on the same rows."""

from __future__ import annotations

import numpy as np

from tensorqa.viz.plotting import png_bytes, pyplot
from tensorqa.viz.summary import agqa_table14

COLOURS = ("#1f77b4", "#ff7f0e")
SHADES = ("Blues_r", "Oranges_r")  # the answer ranks of each pool, darkest first
OTHER = "#e0e0e0"  # the share of the answers after the top five
AGQA = "#7f7f7f"
TOP = 5
LABEL_PT = 7  # the answers written in and beside the bars


def _label(s: dict) -> str:
    return f"{s['kind']} ({s['pool']})"


def _top_legend(fig, handles, ncols: int, title: str | None = None) -> None:
    """The figure's legend above its plots, ``handles`` read row by row (matplotlib fills columns)."""
    rows = -(-len(handles) // ncols)
    handles = [handles[r * ncols + c] for c in range(ncols) for r in range(rows) if r * ncols + c < len(handles)]
    fig.legend(handles=handles, loc="outside upper left", ncols=ncols, fontsize=7, title=title,
               title_fontsize=7, alignment="left", frameon=False)


def _grouped_barh(ax, names: list[str], series: list[tuple[str, list[float], str]], log: bool = False) -> list:
    """Horizontal grouped bars: one group per name [T], one bar per series; returns the handles."""
    y = np.arange(len(names))
    h = 0.8 / max(len(series), 1)
    handles = [ax.barh(y - 0.4 + h * (k + 0.5), values, height=h, label=label, color=colour)
               for k, (label, values, colour) in enumerate(series)]
    ax.set_yticks(y, names, fontsize=7)
    ax.set_ylim(len(names) - 0.5, -0.5)
    if log:
        ax.set_xscale("log")
    ax.grid(axis="x", color="#e5e5e5", lw=0.6)
    ax.set_axisbelow(True)
    return handles


def templates_figure(summaries: list[dict]) -> bytes:
    """Questions per template [T] for each pool beside AGQA's Table 14 (log scale)."""
    plt = pyplot("report")
    rows = [r for r in agqa_table14() if not r["retired"]]
    names = [r["template"] for r in rows]
    # a template without questions gets no bar (log scale)
    series = [(_label(s), [dict((t["template"], t["questions"]) for t in s["stats"]["templates"])[n] or np.nan
                           for n in names], COLOURS[i]) for i, s in enumerate(summaries)]
    series.append(("AGQA Table 14, unbalanced", [r["unbalanced"] for r in rows], AGQA))
    if any(s["kind"] == "balanced" for s in summaries):
        series.append(("AGQA Table 14, balanced", [r["balanced"] for r in rows], "#c7c7c7"))
    fig, ax = plt.subplots(figsize=(10, 0.1 * len(names) * len(series) + 1.8), layout="constrained")
    handles = _grouped_barh(ax, names, series, log=True)
    ax.tick_params(axis="x", labeltop=True, top=True, labelsize=7)
    ax.set_xlabel("questions (log scale)", fontsize=8)
    _top_legend(fig, handles, ncols=2, title="questions per template")
    return png_bytes(fig)


def _fits(renderer, text: str, width_px: float, fontsize: float, pad_px: float = 14) -> bool:
    """Whether ``text`` at ``fontsize`` fits in ``width_px`` pixels with ``pad_px`` to spare."""
    from matplotlib.font_manager import FontProperties

    w, _, _ = renderer.get_text_width_height_descent(text, FontProperties(size=fontsize), ismath=False)
    return w + pad_px <= width_px


def _wrap(renderer, items: list[str], width_px: float, fontsize: float, sep: str = "  ·  ") -> list[str]:
    """``items`` joined by ``sep`` into lines that fit ``width_px``; an item is never split (one
    answer and its share are far narrower than the note column)."""
    lines: list[str] = []
    for item in items:
        if lines and _fits(renderer, lines[-1] + sep + item, width_px, fontsize, pad_px=0):
            lines[-1] += sep + item
        else:
            lines.append(item)
    return lines


def answer_rows(summaries: list[dict]) -> list[str]:
    """The answers figure's rows: every template with questions in any of the pools, in the
    catalogue's order, shared by all pools (a template one pool lacks is an empty bar there)."""
    asked = {t["template"] for s in summaries for t in s["stats"]["templates"] if t["questions"]}
    return [r["template"] for r in summaries[0]["stats"]["templates"] if r["template"] in asked]


def answers_figure(summaries: list[dict]) -> bytes:
    """Per template [T]: the shares of its top answers (stacked, a shade per rank, the rest in
    grey) for each pool on the same row, a note beside each bar naming the answers too narrow to
    be written in it, and the answer entropy."""
    plt = pyplot("report")
    from matplotlib.patches import Patch

    by_pool = [{r["template"]: r for r in s["stats"]["templates"]} for s in summaries]
    names = answer_rows(summaries)
    n = len(summaries)
    h = 0.8 / n
    row_h = 0.3 * n + 0.12
    fig, (ax, ax_note, ax_h) = plt.subplots(
        1, 3, figsize=(12.5, row_h * len(names) + 1.6), sharey=True, layout="constrained",
        gridspec_kw={"width_ratios": [6.4, 4.2, 1.5], "wspace": 0.01})
    shades = [plt.get_cmap(SHADES[k])(np.linspace(0.1, 0.7, TOP)) for k in range(n)]
    placed = []  # (k, y, left, share, rank, answer): segments to label once the layout is known
    for i, name in enumerate(names):
        for k, pool in enumerate(by_pool):
            r = pool[name]
            y = i - 0.4 + h * (k + 0.5)
            left = 0.0
            for rank, (answer, share) in enumerate(r["top_answers"][:TOP]):
                ax.barh(y, share, left=left, color=shades[k][rank], edgecolor="white", linewidth=0.6, height=h * 0.9)
                placed.append((k, y, left, share, rank, answer))
                left += share
            if r["questions"] and left < 0.999:
                ax.barh(y, 1 - left, left=left, color=OTHER, edgecolor="white", linewidth=0.6, height=h * 0.9)
            if not r["questions"]:
                ax.text(0.005, y, "no questions", va="center", fontsize=LABEL_PT, color="#666666")
            ax_h.barh(y, r["entropy_bits"] if r["questions"] else 0, height=h * 0.9, color=COLOURS[k])
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_ylim(max(len(names), 1) - 0.5, -0.5)
    ax.set_xlim(0, 1)
    for a in (ax, ax_h):
        a.tick_params(axis="x", labeltop=True, top=True, labelsize=7)
    ax.set_xlabel("share of the template's questions", fontsize=8)
    ax_h.set_xlabel("answer entropy (bits)", fontsize=8)
    ax_note.axis("off")
    ax_note.set_xlim(0, 1)
    for i in range(1, len(names)):  # a rule between templates
        for a in (ax, ax_h):
            a.axhline(i - 0.5, color="#d0d0d0", lw=0.5)

    fig.canvas.draw()  # the layout, hence each axis's width in pixels, is known from here
    renderer = fig.canvas.get_renderer()
    width_px = ax.get_window_extent(renderer).width
    overflow: dict[float, list[str]] = {}
    for k, y, left, share, rank, answer in placed:
        seg_px = share * width_px
        colour = "white" if rank < 2 else "black"
        if _fits(renderer, answer, seg_px, LABEL_PT):
            ax.text(left + share / 2, y, answer, ha="center", va="center", fontsize=LABEL_PT, color=colour)
            continue
        if _fits(renderer, str(rank + 1), seg_px, LABEL_PT):
            ax.text(left + share / 2, y, str(rank + 1), ha="center", va="center", fontsize=LABEL_PT, color=colour)
        overflow.setdefault(y, []).append(f"{rank + 1} {answer} {share:.0%}")
    note_px = ax_note.get_window_extent(renderer).width
    for y, notes in overflow.items():
        size = LABEL_PT
        lines = _wrap(renderer, notes, note_px, size)
        if len(lines) > 2:  # five long phrases: a smaller size keeps them within the bar's height
            size = LABEL_PT - 1
            lines = _wrap(renderer, notes, note_px, size)
        ax_note.text(0.0, y, "\n".join(lines), va="center", fontsize=size)

    handles, ordinal = [], ("1st", "2nd", "3rd", "4th", "5th")
    for k, s in enumerate(summaries):
        handles.append(Patch(color=COLOURS[k], label=f"{_label(s)}:"))
        handles += [Patch(color=shades[k][rank], label=f"{ordinal[rank]} answer") for rank in range(TOP)]
        handles.append(Patch(color=OTHER, label="all other answers"))
    _top_legend(fig, handles, ncols=TOP + 2,
                title="answer distributions per template: one shade per answer's rank in its template (1st: the most "
                      "common); an answer too narrow to write in its bar is numbered there and named beside it")
    return png_bytes(fig)


def steps_structure_figure(summaries: list[dict]) -> bytes:
    """Share of questions per number of steps, and per structural type, for each pool."""
    plt = pyplot("report")
    fig, (ax_s, ax_t) = plt.subplots(1, 2, figsize=(12, 3.8), layout="constrained")
    steps = sorted({int(k) for s in summaries for k in s["steps_share"]})
    structures = sorted({k for s in summaries for k in s["structural_share"]})
    w = 0.8 / len(summaries)
    handles = []
    for i, s in enumerate(summaries):
        handles.append(ax_s.bar(np.arange(len(steps)) - 0.4 + w * (i + 0.5),
                                [s["steps_share"].get(str(k), 0) for k in steps], width=w, color=COLOURS[i],
                                label=_label(s)))
        ax_t.bar(np.arange(len(structures)) - 0.4 + w * (i + 0.5),
                 [s["structural_share"].get(k, 0) for k in structures], width=w, color=COLOURS[i], label=_label(s))
    ax_s.set_xticks(range(len(steps)), steps)
    ax_s.set_xlabel("reasoning steps", fontsize=8)
    ax_s.set_ylabel("share of questions", fontsize=8)
    ax_t.set_xticks(range(len(structures)), structures)
    ax_t.set_xlabel("structural type", fontsize=8)
    _top_legend(fig, handles, ncols=len(handles), title="reasoning steps and structural mix")
    return png_bytes(fig)


def binary_figure(summaries: list[dict]) -> bytes:
    """Per binary template [T_b]: the share of its most common answer (0.5 = balanced)."""
    plt = pyplot("report")
    names = sorted({b["template"] for s in summaries for b in s["binary"]})
    series = [(_label(s), [dict((b["template"], b["top_share"]) for b in s["binary"]).get(n, 0) for n in names],
               COLOURS[i]) for i, s in enumerate(summaries)]
    fig, ax = plt.subplots(figsize=(10, 0.25 * len(names) * len(series) + 1.8), layout="constrained")
    handles = _grouped_barh(ax, names, series)
    ax.axvline(0.5, color="black", lw=0.8, ls="--")
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the most common answer (dashed: 50/50)", fontsize=8)
    _top_legend(fig, handles, ncols=len(handles), title="binary balance")
    return png_bytes(fig)
