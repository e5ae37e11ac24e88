"""The numbers of ``tensorqa report``: ``tensorqa stats``'s (:func:`pool_stats`, as they are) and what
the figures derive from them: ``pool_summary(pool)`` -> pool, kind, stats, binary (per yes/no or
before/after template: top answer and its share), structural_share, steps_share;
``agqa_table14()`` -> AGQA's counts per template.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tensorqa.agqa.stats import pool_stats
from tensorqa.agqa.templates import TEMPLATES


# binary templates whose two answers are fixed words: their balance is the share of one of them.
# The choose templates (answer: one of the question's two options) are binary too, but which
# option the answer is is not a column, so their answer shares say nothing about that balance.
FIXED_PAIRS = ("yes-no", "before-after")


def pool_kind(pool: str | os.PathLike) -> str:
    """"balanced" when the pool's done markers record a ``tensorqa balance`` run, else "unbalanced"."""
    for marker in sorted(Path(pool, "data").glob(".done-*.json")):
        try:
            if "balance" in json.loads(marker.read_text()):
                return "balanced"
        except (OSError, ValueError):
            continue
    return "unbalanced"


def _shares(counts: dict) -> dict:
    total = sum(counts.values()) or 1
    return {k: round(v / total, 4) for k, v in counts.items()}


def pool_summary(pool: str | os.PathLike) -> dict:
    """The report's numbers for one pool (see the module docstring)."""
    stats = json.loads(json.dumps(pool_stats(str(pool))))  # as `tensorqa stats --json` prints it
    binary = [{"template": r["template"], "questions": r["questions"],
               "top_answer": r["top_answers"][0][0] if r["top_answers"] else None,
               "top_share": r["top_answers"][0][1] if r["top_answers"] else None}
              for r in stats["templates"] if TEMPLATES[r["template"]].answer_space in FIXED_PAIRS and r["questions"]]
    return {"pool": str(pool), "kind": pool_kind(pool), "stats": stats, "binary": binary,
            "structural_share": _shares(stats["structural"]), "steps_share": _shares(stats["steps"])}


def agqa_table14() -> list[dict]:
    """AGQA's Table 14 question counts per template (unbalanced and balanced), in thousands x 1000."""
    return [{"template": name, "unbalanced": int(spec.table14_unbalanced_k * 1000),
             "balanced": int(spec.table14_balanced_k * 1000), "retired": spec.retired}
            for name, spec in TEMPLATES.items()]
