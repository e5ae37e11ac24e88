"""Answer-distribution figures per category: size, entropy ``-sum p_a log2 p_a`` (bits) and the
majority baseline ``max_a p_a``, the accuracy of always giving the most frequent answer."""

from __future__ import annotations

import numpy as np


def distribution_stats(counts: np.ndarray) -> dict:
    """{questions, answers, entropy (bits), majority (baseline accuracy)} of one answer histogram."""
    counts = np.asarray(counts, np.int64)
    n = int(counts.sum())
    if n == 0:
        return {"questions": 0, "answers": 0, "entropy": 0.0, "majority": 0.0}
    p = counts[counts > 0] / n
    return {"questions": n, "answers": int((counts > 0).sum()), "entropy": round(float(-(p * np.log2(p)).sum()), 4),
            "majority": round(float(p.max()), 4)}


def category_histograms(category_of_key: np.ndarray, key: np.ndarray, answer: np.ndarray, n_categories: int,
                        n_answers: int, mask: np.ndarray | None = None, chunk: int = 1 << 22) -> np.ndarray:
    """int64[C, A] questions per (category, answer) over the rows where ``mask`` (all if None):
    category_of_key int64[W], key int[n] per question, answer int[n]."""
    out = np.zeros(n_categories * n_answers, np.int64)
    for a in range(0, len(answer), chunk):
        code = category_of_key[key[a:a + chunk]].astype(np.int64) * n_answers + answer[a:a + chunk]
        if mask is not None:
            code = code[mask[a:a + chunk]]
        out += np.bincount(code, minlength=n_categories * n_answers)
    return out.reshape(n_categories, n_answers)


def format_balance_report(report: dict, paths: bool = True) -> str:
    """A plain-text rendering of the report ``tensorqa.agqa.balancing.balance.balance_pool`` returns."""
    where = f"{report['pool']} -> {report['out']}  " if paths else ""
    lines = [f"balanced {where}(preset {report['preset']}, seed {report['config']['seed']})"]
    for split, r in report["splits"].items():
        rows = r["rows"]
        lines.append(f"[{split}] " + "  ".join(f"{k} {v:,}" for k, v in rows.items()))
        if not rows.get("input"):
            continue
        lines.append(f"  {'category':<22}{'questions':>12}{'->':>3}{'kept':>11}  {'entropy (bits)':>16}  "
                     f"{'majority baseline':>19}")
        for cat, c in r["categories"].items():
            b, a = c["before"], c["after"]
            lines.append(f"  {cat:<22}{b['questions']:>12,}{'->':>3}{a['questions']:>11,}  "
                         f"{b['entropy']:>7.3f} -> {a['entropy']:<6.3f}  {b['majority']:>8.3f} -> {a['majority']:<6.3f}")
        mix = r["structural_mix"]
        lines.append("  structural mix: " + ", ".join(
            f"{s} {mix['before'].get(s, 0):.3f}->{mix['after'].get(s, 0):.3f}" for s in mix["before"]))
    return "\n".join(lines)
