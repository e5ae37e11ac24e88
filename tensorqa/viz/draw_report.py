"""The figures of ``tensorqa report`` from :func:`summary.pool_summary` dicts (one pool, or a pool
and the one it is compared with): each function returns PNG bytes."""

from __future__ import annotations

import numpy as np

from tensorqa.viz.plotting import png_bytes, pyplot
from tensorqa.viz.summary import agqa_table14

COLOURS = ("#1f77b4", "#ff7f0e")
AGQA = "#7f7f7f"


def _label(s: dict) -> str:
    return f"{s['kind']} ({s['pool']})"


def _grouped_barh(ax, names: list[str], series: list[tuple[str, list[float], str]], log: bool = False) -> None:
    """Horizontal grouped bars: one group per name [T], one bar per series."""
    y = np.arange(len(names))
    h = 0.8 / max(len(series), 1)
    for k, (label, values, colour) in enumerate(series):
        ax.barh(y - 0.4 + h * (k + 0.5), values, height=h, label=label, color=colour)
    ax.set_yticks(y, names, fontsize=7)
    ax.set_ylim(len(names) - 0.5, -0.5)
    if log:
        ax.set_xscale("log")
    ax.legend(fontsize=7, loc="lower right")


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
    fig, ax = plt.subplots(figsize=(10, 0.12 * len(names) * len(series) + 1.5), layout="constrained")
    _grouped_barh(ax, names, series, log=True)
    ax.set_xlabel("questions (log scale)", fontsize=8)
    ax.set_title("questions per template", fontsize=9, loc="left")
    return png_bytes(fig)


def answers_figure(summary: dict) -> bytes:
    """Per template [T]: the shares of its top answers (stacked, labelled) and the answer entropy."""
    plt = pyplot("report")
    rows = [r for r in summary["stats"]["templates"] if r["questions"]]
    names = [r["template"] for r in rows]
    fig, (ax, ax_h) = plt.subplots(1, 2, figsize=(13, 0.3 * len(names) + 1.5), sharey=True, layout="constrained",
                                   gridspec_kw={"width_ratios": [3, 1]})
    shades = plt.get_cmap("Blues_r")(np.linspace(0.1, 0.75, 5))
    for i, r in enumerate(rows):
        left = 0.0
        for k, (answer, share) in enumerate(r["top_answers"]):
            ax.barh(i, share, left=left, color=shades[k], edgecolor="white", height=0.7)
            if share >= 0.07:
                ax.text(left + share / 2, i, answer[:18], ha="center", va="center", fontsize=6,
                        color="white" if k < 2 else "black")
            left += share
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the template's questions (top 5 answers)", fontsize=8)
    ax.set_title(f"answer distributions: {_label(summary)}", fontsize=9, loc="left")
    ax_h.barh(range(len(rows)), [r["entropy_bits"] for r in rows], color=COLOURS[0], height=0.7)
    ax_h.set_xlabel("answer entropy (bits)", fontsize=8)
    return png_bytes(fig)


def steps_structure_figure(summaries: list[dict]) -> bytes:
    """Share of questions per number of steps, and per structural type, for each pool."""
    plt = pyplot("report")
    fig, (ax_s, ax_t) = plt.subplots(1, 2, figsize=(12, 3.6), layout="constrained")
    steps = sorted({int(k) for s in summaries for k in s["steps_share"]})
    structures = sorted({k for s in summaries for k in s["structural_share"]})
    w = 0.8 / len(summaries)
    for i, s in enumerate(summaries):
        ax_s.bar(np.arange(len(steps)) - 0.4 + w * (i + 0.5), [s["steps_share"].get(str(k), 0) for k in steps],
                 width=w, color=COLOURS[i], label=_label(s))
        ax_t.bar(np.arange(len(structures)) - 0.4 + w * (i + 0.5),
                 [s["structural_share"].get(k, 0) for k in structures], width=w, color=COLOURS[i], label=_label(s))
    ax_s.set_xticks(range(len(steps)), steps)
    ax_s.set_xlabel("steps", fontsize=8)
    ax_s.set_ylabel("share of questions", fontsize=8)
    ax_s.set_title("reasoning steps", fontsize=9, loc="left")
    ax_t.set_xticks(range(len(structures)), structures)
    ax_t.set_title("structural mix", fontsize=9, loc="left")
    for ax in (ax_s, ax_t):
        ax.legend(fontsize=7)
    return png_bytes(fig)


def binary_figure(summaries: list[dict]) -> bytes:
    """Per binary template [T_b]: the share of its most common answer (0.5 = balanced)."""
    plt = pyplot("report")
    names = sorted({b["template"] for s in summaries for b in s["binary"]})
    series = [(_label(s), [dict((b["template"], b["top_share"]) for b in s["binary"]).get(n, 0) for n in names],
               COLOURS[i]) for i, s in enumerate(summaries)]
    fig, ax = plt.subplots(figsize=(10, 0.3 * len(names) * len(series) + 1.5), layout="constrained")
    _grouped_barh(ax, names, series)
    ax.axvline(0.5, color="black", lw=0.8, ls="--")
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the most common answer (dashed: 50/50)", fontsize=8)
    ax.set_title("binary balance", fontsize=9, loc="left")
    return png_bytes(fig)
