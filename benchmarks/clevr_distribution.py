"""Is tensorqa's default CLEVR generation distributed as CLEVR's depth-first search? Chi-square tests
on the same scenes.

    OMP_NUM_THREADS=1 python benchmarks/clevr_distribution.py --scenes 500 5000 [--dfs-cache FILE] [--json OUT]

Samples scenes with a seed no test uses (``--scene-seed``), writes them to a store, runs the default
``tensorqa generate`` (``Options()``: the compiled engine, default draws) and the DFS reference
(``clevr_dfs_reference.py``: CLEVR's search, options and early stopping restated) on them, and for each
size N (the first N scenes; 10 questions a scene) prints chi-square tests of homogeneity (2 x k tables,
the two generators as rows):

* per question type (the program's final function: count, exist, query_color, ...): its answers;
* families: how many questions each of the 90 templates gets.

Bins are pooled, rarest first, until every expected count is at least 5. p-values from the chi-square
survival function (torch.special.gammaincc). With both sides random, a true match still fails one of
the 14 tests per size at p <= 0.05 about half the time (1 - 0.95^14): read the p-values together.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

import orjson
import torch

from clevr_dfs_reference import FINAL, _run_dfs
from tensorqa.clevr.generate import Options, generate_store
from tensorqa.clevr.templates import DEFAULT_TEMPLATES_DIR, load_templates
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_store import write_static_store

SCENE_SEED = 777  # no test samples scenes with it


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X ~ chi-square(df): the regularized upper incomplete gamma Q(df / 2, x / 2)."""
    if df <= 0:
        return 1.0
    return float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64), torch.tensor(x / 2, dtype=torch.float64)))


def homogeneity(a: Counter, b: Counter) -> dict:
    """Chi-square test that samples ``a`` and ``b`` (bin -> count) come from one distribution. Bins whose
    expected count in the smaller sample is under 5 are pooled into one (itself joined to the rarest kept
    bin while still under 5). Returns chi2, df, p, the bins kept and the counts pooled."""
    na, nb = sum(a.values()), sum(b.values())
    n = na + nb
    if not na or not nb:
        return {"chi2": 0.0, "df": 0, "p": 1.0, "bins": 0, "pooled": 0}
    small = min(na, nb)
    cols, pool, pooled = [], [0, 0], 0
    for k in sorted(set(a) | set(b), key=lambda k: (a[k] + b[k], str(k))):
        col = [a[k], b[k]]
        if small * sum(col) / n < 5:
            pool = [pool[0] + col[0], pool[1] + col[1]]
            pooled += 1
        else:
            cols.append(col)
    if sum(pool):
        if small * sum(pool) / n >= 5 or not cols:
            cols.append(pool)
        else:
            cols[0] = [cols[0][0] + pool[0], cols[0][1] + pool[1]]
    chi2 = 0.0
    for ca, cb in cols:
        t = ca + cb
        for o, row in ((ca, na), (cb, nb)):
            e = row * t / n
            chi2 += (o - e) ** 2 / e
    df = len(cols) - 1
    return {"chi2": round(chi2, 2), "df": df, "p": round(chi2_sf(chi2, df), 4), "bins": len(cols), "pooled": pooled}


def grid_questions(store: Path, out: Path) -> list[tuple]:
    """(scene, family, question type, answer) of the default ``tensorqa generate`` on ``store``."""
    generate_store(store, out, opt=Options())
    qs = orjson.loads(out.read_bytes())["questions"]
    return [(q["image_index"], f"{q['template_filename']}#{q['question_family_index']}", q["program"][-1]["type"],
             str(q["answer"])) for q in qs]


def dfs_questions(templates, scenes, seed: int, cache: Path | None) -> tuple[list[tuple], float]:
    """The DFS reference's (scene, family, question type, answer), and its seconds (saved in / read from
    ``cache`` for the same scenes and seed)."""
    tag = {"scenes": len(scenes), "seed": seed}
    if cache and cache.exists():
        saved = json.loads(cache.read_text())
        if saved["tag"] == tag | {"scene_hash": _scene_hash(scenes)}:
            return [tuple(q) for q in saved["questions"]], saved["seconds"]
    t0 = time.perf_counter()
    qs = [(g, fam, FINAL.get(final, final), str(ans)) for fam, final, ans, g in _run_dfs(templates, scenes, random.Random(seed))]
    secs = time.perf_counter() - t0
    if cache:
        cache.write_text(json.dumps({"tag": tag | {"scene_hash": _scene_hash(scenes)}, "seconds": secs, "questions": qs}))
    return qs, secs


def _scene_hash(scenes) -> str:
    import hashlib

    return hashlib.sha256(json.dumps([s.to_json() for s in scenes]).encode()).hexdigest()[:16]


def tests(grid: list[tuple], dfs: list[tuple]) -> dict:
    """Per question type (answers) and the families (counts): name -> homogeneity test."""
    out = {}
    for qt in sorted({q[2] for q in grid} | {q[2] for q in dfs}):
        out[qt] = homogeneity(Counter(q[3] for q in grid if q[2] == qt), Counter(q[3] for q in dfs if q[2] == qt))
    out["families"] = homogeneity(Counter(q[1] for q in grid), Counter(q[1] for q in dfs))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", type=int, nargs="+", default=[500, 5000], help="sizes: the first N scenes each")
    ap.add_argument("--scene-seed", type=int, default=SCENE_SEED)
    ap.add_argument("--dfs-seed", type=int, default=0)
    ap.add_argument("--dfs-cache", metavar="FILE", help="save the DFS questions here, or reuse them for the same scenes")
    ap.add_argument("--json", help="also write the results to this file")
    a = ap.parse_args()
    templates = load_templates(DEFAULT_TEMPLATES_DIR)
    n = max(a.scenes)
    scenes = sample_scenes(n, seed=a.scene_seed)
    with tempfile.TemporaryDirectory() as d:
        store = write_static_store(Path(d) / "s.h5", scenes)
        t0 = time.perf_counter()
        grid = grid_questions(store, Path(d) / "q.json")
        grid_secs = time.perf_counter() - t0
    dfs, dfs_secs = dfs_questions(templates, scenes, a.dfs_seed, Path(a.dfs_cache) if a.dfs_cache else None)
    rows = []
    for size in a.scenes:
        g, r = [q for q in grid if q[0] < size], [q for q in dfs if q[0] < size]
        res = tests(g, r)
        rows.append({"scenes": size, "questions": [len(g), len(r)], "tests": res,
                     "failed": sorted(k for k, v in res.items() if v["p"] <= 0.05)})
        print(f"\n{size} scenes: {len(g)} questions tensorqa, {len(r)} DFS")
        print("| test | chi2 | df | p |\n|---|---|---|---|")
        for k, v in res.items():
            print(f"| {k} | {v['chi2']} | {v['df']} | {v['p']} |")
    summary = {"scene_seed": a.scene_seed, "dfs_seed": a.dfs_seed, "grid_seconds": round(grid_secs, 1),
               "dfs_seconds": round(dfs_secs, 1), "sizes": rows}
    print(json.dumps({k: v for k, v in summary.items() if k != "sizes"} | {"failed": {r["scenes"]: r["failed"] for r in rows}}))
    if a.json:
        Path(a.json).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
