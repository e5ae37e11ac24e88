"""``stats``: questions per template beside AGQA's Table 14 (ratio scaled to AGQA's 9,601 videos by
the pool's ``pool_videos``, or its distinct video ids), answer distributions, steps histogram;
pyarrow group-bys batch by batch."""

from __future__ import annotations

import math

from tensorqa.agqa.templates import TEMPLATES
from tensorqa.writers import iter_pool, pool_fact

COLUMNS = ["template", "answer", "steps", "split", "structural"]
AGQA_VIDEOS = 9601  # the videos Table 14 counts questions over (7,787 train + 1,814 test)
BATCH_ROWS = 1 << 20  # rows counted at a time


def _count(counts: dict, batch, keys: list[str]) -> None:
    """Add the batch's row counts per value of ``keys`` to ``counts`` (keys in order of first appearance)."""
    import pyarrow as pa

    table = pa.Table.from_batches([batch]).select(keys)
    groups = table.group_by(keys, use_threads=False).aggregate([([], "count_all")])
    values = [groups[k].to_pylist() for k in keys]
    for key, n in zip(zip(*values), groups["count_all"].to_pylist()):
        key = key if len(keys) > 1 else key[0]
        counts[key] = counts.get(key, 0) + n


def pool_stats(pool: str, top: int = 5) -> dict:
    keys = {"template": ["template"], "answer": ["template", "answer"], "steps": ["steps"], "split": ["split"],
            "structural": ["structural"]}
    counts: dict[str, dict] = {name: {} for name in keys}
    questions = 0
    recorded = pool_fact(pool, "pool_videos")
    video_ids: set = set()
    columns = COLUMNS if recorded else COLUMNS + ["video_id"]
    for batch in iter_pool(pool, columns, dictionary=("template", "answer", "split", "structural", "video_id"),
                           batch_rows=BATCH_ROWS):
        questions += batch.num_rows
        if not recorded:
            ids = batch.column("video_id")
            video_ids.update(ids.dictionary.take(ids.indices.unique()).to_pylist())
        for name, by in keys.items():
            _count(counts[name], batch, by)
    videos = int(recorded) if recorded else len(video_ids)
    dist: dict[str, list] = {}
    for (template, answer), n in sorted(counts["answer"].items(), key=lambda r: (r[0][0], -r[1], r[0][1])):
        dist.setdefault(template, []).append((answer, n))
    steps = {int(k): n for k, n in counts["steps"].items()}
    rows = []
    scale = AGQA_VIDEOS / videos if videos else 0.0
    for name, spec in TEMPLATES.items():
        n = counts["template"].get(name, 0)
        unbalanced, balanced = int(spec.table14_unbalanced_k * 1000), int(spec.table14_balanced_k * 1000)
        d = dist.get(name, [])
        total = sum(c for _, c in d) or 1
        entropy = -sum(c / total * math.log2(c / total) for _, c in d)
        rows.append({"template": name, "questions": n, "agqa_unbalanced": unbalanced,
                     "ratio": round(n * scale / unbalanced, 3) if videos else None,
                     "ratio_balanced": round(n * scale / balanced, 3) if videos else None,
                     "answers": len(d), "entropy_bits": round(entropy, 2),
                     "top_answers": [(a, round(c / total, 3)) for a, c in d[:top]]})
    return {"questions": questions, "videos": videos, "splits": counts["split"], "structural": counts["structural"],
            "steps": dict(sorted(steps.items())), "templates": rows}


def format_stats(s: dict) -> str:
    lines = [f"questions {s['questions']:,}  " + "  ".join(f"{k} {v:,}" for k, v in sorted(s["splits"].items()))
             + f"  videos {s['videos']:,}",
             "structural: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s["structural"].items())),
             "steps: " + ", ".join(f"{k}: {v:,}" for k, v in s["steps"].items()),
             "",
             f"{'template':26s} {'questions':>12s} {'AGQA (Table 14)':>16s} {'ratio':>6s} {'answers':>8s} {'H bits':>7s}"
             "  top answers"]
    for r in s["templates"]:
        top = ", ".join(f"{a} {p:.0%}" for a, p in r["top_answers"])
        ratio = f"{r['ratio']:6.2f}" if r["ratio"] is not None else f"{'-':>6s}"
        lines.append(f"{r['template']:26s} {r['questions']:12,d} {r['agqa_unbalanced']:16,d} {ratio} {r['answers']:8d} "
                     f"{r['entropy_bits']:7.2f}  {top}")
    return "\n".join(lines)
