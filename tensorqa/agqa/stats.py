"""``stats``: what a pool holds — questions per template beside AGQA's Table 14 counts, answer
distributions per template, steps histogram. Computed with pyarrow group-bys over the columns."""

from __future__ import annotations

import math


from tensorqa.agqa.templates import TEMPLATES
from tensorqa.writers import read_pool


def pool_stats(pool: str, top: int = 5) -> dict:
    t = read_pool(pool, columns=["template", "answer", "steps", "split", "structural"])
    per_template = {r["template"]: r["count"] for r in
                    t.group_by("template").aggregate([("template", "count")]).rename_columns(["template", "count"]).to_pylist()}
    answers = t.group_by(["template", "answer"]).aggregate([("answer", "count")]).to_pylist()
    dist: dict[str, list] = {}
    for r in sorted(answers, key=lambda r: (r["template"], -r["answer_count"], r["answer"])):
        dist.setdefault(r["template"], []).append((r["answer"], r["answer_count"]))
    steps = {int(r["steps"]): r["steps_count"] for r in t.group_by("steps").aggregate([("steps", "count")]).to_pylist()}
    splits = {r["split"]: r["split_count"] for r in t.group_by("split").aggregate([("split", "count")]).to_pylist()}
    structural = {r["structural"]: r["structural_count"] for r in t.group_by("structural").aggregate([("structural", "count")]).to_pylist()}
    rows = []
    for name, spec in TEMPLATES.items():
        n = per_template.get(name, 0)
        d = dist.get(name, [])
        total = sum(c for _, c in d) or 1
        entropy = -sum(c / total * math.log2(c / total) for _, c in d)
        rows.append({"template": name, "questions": n, "agqa_unbalanced": int(spec.table14_unbalanced_k * 1000),
                     "answers": len(d), "entropy_bits": round(entropy, 2),
                     "top_answers": [(a, round(c / total, 3)) for a, c in d[:top]]})
    return {"questions": t.num_rows, "splits": splits, "structural": structural, "steps": dict(sorted(steps.items())),
            "templates": rows}


def format_stats(s: dict) -> str:
    lines = [f"questions {s['questions']:,}  " + "  ".join(f"{k} {v:,}" for k, v in sorted(s["splits"].items())),
             "structural: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s["structural"].items())),
             "steps: " + ", ".join(f"{k}: {v:,}" for k, v in s["steps"].items()),
             "",
             f"{'template':26s} {'questions':>12s} {'AGQA (Table 14)':>16s} {'answers':>8s} {'H bits':>7s}  top answers"]
    for r in s["templates"]:
        top = ", ".join(f"{a} {p:.0%}" for a, p in r["top_answers"])
        lines.append(f"{r['template']:26s} {r['questions']:12,d} {r['agqa_unbalanced']:16,d} {r['answers']:8d} "
                     f"{r['entropy_bits']:7.2f}  {top}")
    return "\n".join(lines)
