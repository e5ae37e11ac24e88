"""``tensorqa report POOL [--compare POOL2] --out DIR``: ``DIR/report.html`` (one self-contained
page, figures inlined as PNG data URIs) and ``DIR/summary.json`` (the same numbers, for scripts).

With ``--compare``, every figure shows both pools on the same rows: POOL2 is the other side (before
balancing, when POOL is a balanced pool and POOL2 its unbalanced input)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tensorqa.errors import TensorQAError
from tensorqa.outputs import output_folder
from tensorqa.viz import draw_report
from tensorqa.viz.html import esc, image, page, table, write_atomic
from tensorqa.viz.summary import agqa_table14, pool_summary


def check_out_dir(out: str | os.PathLike) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise TensorQAError(f"--out {out}: is a file; expected a folder")
    if not out.parent.is_dir():
        raise TensorQAError(f"--out {out}: its parent folder does not exist")
    return out


def report(pool: str, out: str, compare: str | None = None) -> dict:
    """Write the report of ``pool`` (beside ``compare``) into ``out``; returns summary.json's object:
    {"pool": summary, "compare": summary or None, "agqa_table14": [...], "seconds": {...}}."""
    out_dir = check_out_dir(out)
    t0 = time.perf_counter()
    main = pool_summary(pool)
    other = pool_summary(compare) if compare else None
    t1 = time.perf_counter()
    summaries = [main] + ([other] if other else [])
    figures = {"templates": draw_report.templates_figure(summaries),
               "answers": draw_report.answers_figure(summaries),
               "steps_structure": draw_report.steps_structure_figure(summaries),
               "binary": draw_report.binary_figure(summaries)}
    t2 = time.perf_counter()
    result = {"pool": main, "compare": other, "agqa_table14": agqa_table14(),
              "seconds": {"scan": round(t1 - t0, 2), "figures": round(t2 - t1, 2)}}
    output_folder(out_dir)  # not a planted link
    write_atomic(out_dir / "summary.json", json.dumps(result, indent=1))
    write_atomic(out_dir / "report.html", report_page(result, figures))
    return result


def _template_rows(result: dict) -> list[list]:
    main, other = result["pool"], result["compare"]
    agqa = {r["template"]: r for r in result["agqa_table14"]}
    theirs = {r["template"]: r for r in other["stats"]["templates"]} if other else {}
    rows = []
    for r in main["stats"]["templates"]:
        a = agqa[r["template"]]
        row = [r["template"], r["questions"]]
        if other:
            row.append(theirs[r["template"]]["questions"])
        # a balanced pool is compared with Table 14's balanced column, any other with the unbalanced one
        ratio = r.get("ratio_balanced" if main["kind"] == "balanced" else "ratio")
        row += [a["unbalanced"], a["balanced"], "" if ratio is None else f"{ratio:.2f}", r["answers"], r["entropy_bits"],
                ", ".join(f"{x} {p:.0%}" for x, p in r["top_answers"])]
        rows.append(row)
    return rows


def _overview(s: dict) -> str:
    st = s["stats"]
    return (f"<p><b>{esc(s['pool'])}</b> ({esc(s['kind'])}): {st['questions']:,} questions; "
            + ", ".join(f"{esc(k)} {v:,}" for k, v in sorted(st["splits"].items())) + "; structural: "
            + ", ".join(f"{esc(k)} {v:,}" for k, v in sorted(st["structural"].items())) + "; steps: "
            + ", ".join(f"{esc(k)}: {v:,}" for k, v in st["steps"].items()) + "</p>")


def report_page(result: dict, figures: dict[str, bytes]) -> str:
    main, other = result["pool"], result["compare"]
    header = ["template", f"questions ({main['kind']})"] + ([f"questions ({other['kind']})"] if other else []) + \
             ["AGQA unbalanced", "AGQA balanced", f"ratio ({main['kind']}, per 9,601 videos)", "answers",
              "entropy bits", "top answers"]
    numeric = set(range(1, len(header) - 1))
    parts = [_overview(main)] + ([_overview(other)] if other else [])
    parts += ['<h2 id="templates">Questions per template beside AGQA\'s Table 14</h2>',
              image(figures["templates"], "questions per template"),
              table(header, _template_rows(result), numeric),
              '<h2 id="answers">Answer distributions per template</h2>', image(figures["answers"], "answer distributions")]
    parts += ['<h2 id="steps">Steps and structural mix</h2>', image(figures["steps_structure"], "steps and structural mix"),
              '<h2 id="binary">Binary balance</h2>', image(figures["binary"], "binary balance"),
              table(["template", "questions", "top answer", "share"] + (["share (compared)"] if other else []),
                    [[b["template"], b["questions"], b["top_answer"], b["top_share"]]
                     + ([next((c["top_share"] for c in other["binary"] if c["template"] == b["template"]), "")]
                        if other else []) for b in main["binary"]], {1, 3, 4}),
              f'<p class="note">numbers: those of <code>tensorqa stats</code> (summary.json beside this page); '
              f"scan {result['seconds']['scan']} s, figures {result['seconds']['figures']} s</p>"]
    title = f"tensorqa report: {main['pool']}" + (f" beside {other['pool']}" if other else "")
    return page(title, "\n".join(parts))
