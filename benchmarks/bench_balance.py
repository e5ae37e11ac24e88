"""Time and peak memory of ``balance`` + ``split`` on a large synthetic pool.

    python benchmarks/bench_balance.py                      # ~10M rows, built in a temp folder
    python benchmarks/bench_balance.py --rows 1000000 --rows 5000000   # several scales
    python benchmarks/bench_balance.py --pool POOL           # an existing pool

Each measurement runs in a fresh child process and prints wall time, CPU time (user + system; on a
shared machine the better guide to what an idle one takes), throughput and peak RSS (the child's own
VmHWM); the script ends with a linear extrapolation to 100M and 200M rows (time and memory grow
linearly in rows: every per-question array is a fixed number of bytes; memory is fitted as fixed +
per row over the sizes measured). By default split is timed on the balanced pool (the pipeline:
balance, then split); ``--split-unbalanced`` also times it on the whole unbalanced pool.

The synthetic pool (:func:`write_synthetic_pool`) has the structure balancing cares about, built
with numpy and pyarrow string kernels: 9,601 videos (7,787 train), question groups
(video, template, arguments) drawn with Table 14's unbalanced template weights, each with a direct
whole-video question (missing for 15 % of groups) and localized / reference variants whose answer
agrees with the direct one 55 % of the time; skewed yes/no per key, Zipf-distributed open answers,
released-style local keys, question and program strings of realistic length.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.agqa.templates.catalogue import ACTIVE_TEMPLATES, TEMPLATES
from tensorqa.scenes.vocab import vocab
from tensorqa.writers import RECORD_SCHEMA, ParquetShardWriter, write_dataset_card

VIDEOS, TRAIN_VIDEOS = 9601, 7787


def _take(words: list[str], codes: np.ndarray) -> pa.Array:
    return pa.array(words, pa.string()).take(pa.array(codes))


def _video_ids(n: int) -> list[str]:
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = []
    for i in range(n):
        x, s = i * 7919 + 104729, ""
        for _ in range(5):
            x, r = divmod(x, 36)
            s += alphabet[r]
        out.append(s)
    return out


def _template_locals(specs, tmpl: np.ndarray, ids: dict[str, pa.Array]) -> pa.Array:
    """Each row's template local from its template's ``local_format`` ({relation}-{object} ...)."""
    import re

    n = len(tmpl)
    out = pa.array([""] * n, pa.string())
    for t, spec in enumerate(specs):
        rows = tmpl == t
        if not rows.any():
            continue
        parts = re.split(r"(\{[a-z_0-9]+\})", spec.local_format)
        pieces = [ids[p[1:-1]] if p.startswith("{") else pa.array([p] * n, pa.string()) for p in parts if p]
        value = pc.binary_join_element_wise(*pieces, "") if len(pieces) > 1 else pieces[0]
        out = pc.if_else(pa.array(rows), value, out)
    return out


def synthetic_block(rng: np.random.Generator, videos: np.ndarray, video_ids: list[str], rows_per_video: float) -> pa.Table:
    """Records (RECORD_SCHEMA) for a block of videos (int array of video indices)."""
    v = vocab()
    names = list(ACTIVE_TEMPLATES)
    specs = [TEMPLATES[t] for t in names]
    weights = np.array([s.table14_unbalanced_k for s in specs])
    weights /= weights.sum()
    members_mean = 5.0
    groups_per_video = rng.poisson(rows_per_video / members_mean, len(videos))
    g_video = np.repeat(videos, groups_per_video)
    G = len(g_video)
    g_tmpl = rng.choice(len(names), G, p=weights)
    g_rel = rng.integers(0, 26, G)
    g_obj = rng.integers(1, 36, G)
    g_obj2 = (g_obj + rng.integers(1, 35, G)) % 36
    g_act = rng.integers(0, 157, G)
    g_act2 = (g_act + rng.integers(1, 156, G)) % 157
    has_windows = np.array([len(s.windows) > 1 for s in specs])[g_tmpl]
    g_members = 1 + rng.poisson(np.where(has_windows, members_mean - 1, 1.0))
    g_has_direct = rng.random(G) < 0.85
    space = np.array([{"yes-no": 0, "before-after": 1, "object": 2, "action": 3}.get(s.answer_space, 4) for s in specs])[g_tmpl]
    # per-group direct answer: skewed yes/no (key-specific), Zipf open answers, choose between two objects
    g_pyes = rng.beta(2, 1, G)
    zipf_obj = np.minimum(rng.zipf(1.6, G), 35)
    zipf_act = np.minimum(rng.zipf(1.4, G) - 1, 156)
    g_choice = np.where(rng.random(G) < 0.7, g_obj, g_obj2)
    g_answer = np.select([space == 0, space == 1, space == 2, space == 3],
                         [rng.random(G) < g_pyes, rng.random(G) < 0.6, zipf_obj, zipf_act], g_choice)
    # rows
    n = int(g_members.sum())
    g = np.repeat(np.arange(G), g_members)
    first = np.r_[0, np.cumsum(g_members)[:-1]]
    j = np.arange(n) - np.repeat(first, g_members)
    tmpl, sp, vid = g_tmpl[g], space[g], g_video[g]
    localized = (j > 0) & has_windows[g]
    is_direct = (j == 0) & g_has_direct[g]
    window = np.where(localized, rng.integers(1, 5, n), 0)
    wact = np.where(localized, rng.integers(0, 157, n), -1)
    same = rng.random(n) < 0.55
    redraw = np.select([sp == 0, sp == 1, sp == 2, sp == 3],
                       [rng.random(n) < g_pyes[g], rng.random(n) < 0.6, np.minimum(rng.zipf(1.6, n), 35),
                        np.minimum(rng.zipf(1.4, n) - 1, 156)], np.where(rng.random(n) < 0.5, g_obj[g], g_obj2[g]))
    ans = np.where(same | (j == 0), g_answer[g], redraw)
    # one answer vocabulary: yes/no, before/after, objects, actions; choose answers are objects
    offset = np.array([0, 2, 4, 4 + 36, 4])[sp]
    answer = _take(["no", "yes", "after", "before"] + list(v.object_english) + list(v.action_phrases), offset + ans)
    # ids and keys
    rel_ids, obj_ids, act_ids = list(v.relation_ids[:26]), list(v.object_ids), list(v.actions)
    r_s, o_s, o2_s, a_s, a2_s = (_take(rel_ids, g_rel[g]), _take(obj_ids, g_obj[g]), _take(obj_ids, g_obj2[g]),
                                 _take(act_ids, g_act[g]), _take(act_ids, g_act2[g]))
    wa_s = pc.if_else(pa.array(wact >= 0), _take(act_ids, np.maximum(wact, 0)), "")
    tlocal = _template_locals(specs, tmpl, {"relation": r_s, "object": o_s, "object2": o2_s, "action": a_s,
                                            "action2": a2_s, "window_action": wa_s})
    kinds = ["video", "before", "after", "while", "between"]
    time_s = _take(["all"] + kinds[1:], window)
    tag = _take(["yes-no", "before-after", "", "", "choose"], sp)
    local = pc.if_else(pa.array((sp == 2) | (sp == 3)), tlocal,
                       pc.binary_join_element_wise(tag, tlocal, time_s, wa_s, "-"))
    vids = _take(video_ids, vid)
    # question rank within video: position among the video's rows
    vstart = np.r_[0, np.flatnonzero(vid[1:] != vid[:-1]) + 1]
    vlen = np.diff(np.r_[vstart, n])
    rank = np.arange(n) - np.repeat(vstart, vlen)
    tnames = _take(names, tmpl)
    phrase = _take(list(v.action_phrases), np.maximum(wact, 0))
    has_window = pa.array(wact >= 0)
    window_word = _take(["", " before ", " after ", " while ", " between "], window)
    wphrase = pc.if_else(has_window, pc.binary_join_element_wise(window_word, phrase, ""), "")
    rel_word, obj_word = _take(list(v.relation_english[:26]), g_rel[g]), _take(list(v.object_english), g_obj[g])
    question = pc.binary_join_element_wise("Did they ", rel_word, " ", obj_word, wphrase, "?", "")
    localize = pc.binary_join_element_wise("Localize(", _take(kinds, window), ", ", phrase, ")", "")
    program = pc.binary_join_element_wise("Exists(", obj_word, ", Iterate(", pc.if_else(has_window, localize, "video"),
                                          ", Filter(frame, [relations, ", rel_word, "])))", "")
    zeros = np.zeros(n, np.int8)
    steps = np.array([s.base_steps for s in specs])[tmpl] + np.where(window == 4, 3, np.where(window > 0, 2, 0))
    ref = (j > 0) & ~has_windows[g]
    split = np.where(vid < TRAIN_VIDEOS, "train", "test")
    return pa.table({
        "question_id": pc.binary_join_element_wise(vids, pa.array(rank).cast(pa.string()), "-"),
        "video_id": vids, "split": pa.array(split), "template": tnames, "frame": pa.array(zeros),
        "question": question, "answer": answer,
        "global": pa.array([list(s.global_) for s in specs], pa.list_(pa.string())).take(pa.array(tmpl)),
        "local": local, "ans_type": _take([s.ans_type for s in specs], tmpl),
        "steps": pa.array((steps + ref).astype(np.int8)), "semantic": _take([s.semantic for s in specs], tmpl),
        "structural": _take([s.structural for s in specs], tmpl), "program": program,
        "window": _take(kinds, window), "window_action": wa_s, "window_action2": pa.array([""] * n),
        "relation": r_s, "object": o_s, "object_ref": pc.if_else(pa.array(ref), "first", ""),
        "object_ref_relation": pc.if_else(pa.array(ref), r_s, ""), "object2": o2_s, "object2_ref": pa.array([""] * n),
        "object2_ref_relation": pa.array([""] * n), "action": a_s, "action_ref": pa.array([""] * n), "action2": a2_s,
        "direct_group": pc.binary_join_element_wise(vids, tnames, tlocal, "|"),
        "is_direct": pa.array(is_direct.astype(np.int8)), "indirect": pa.array((~is_direct).astype(np.int8)),
        "i_obj": pa.array(ref.astype(np.int8)), "i_rel": pa.array(zeros), "i_act": pa.array(zeros),
        "i_temp": pa.array(localized.astype(np.int8)), "sg_grounding": pa.nulls(n, pa.string()),
    }).cast(RECORD_SCHEMA)


def write_synthetic_pool(out: str | os.PathLike, rows: int, seed: int = 0, shards: int = 4, videos_per_block: int = 200) -> int:
    """Write a pool of about ``rows`` questions; returns the exact row count."""
    video_ids = _video_ids(VIDEOS)
    per_video = rows / VIDEOS
    total = 0
    bounds = np.linspace(0, VIDEOS, shards + 1).astype(int)
    for s in range(shards):
        w = ParquetShardWriter(out, s, shards)
        for a in range(bounds[s], bounds[s + 1], videos_per_block):
            rng = np.random.default_rng([seed, a])
            table = synthetic_block(rng, np.arange(a, min(a + videos_per_block, bounds[s + 1])), video_ids, per_video)
            w.write(table)
            total += table.num_rows
        w.close({"synthetic": True})
    write_dataset_card(out, "synthetic benchmark pool", f"{total:,} synthetic questions (bench_balance.py, seed {seed}).")
    return total


# -- measurement ------------------------------------------------------------------------------------
_CHILD = r"""
import json, resource, sys, time
from tensorqa.agqa.balancing.balance import balance_pool
from tensorqa.agqa.splits import split_pool
step, pool, out = sys.argv[1:4]
t0 = time.perf_counter()
if step == "balance":
    r = balance_pool(pool, out)
    rows = sum(s["rows"]["input"] for s in r["splits"].values())
    kept = sum(s["rows"]["output"] for s in r["splits"].values())
elif step == "split":
    r = split_pool(pool, out)
    rows, kept = r["rows_in"], sum(r["rows_out"].values())
else:  # baseline: the imports alone
    rows = kept = 0
dt = time.perf_counter() - t0
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across execve, so a child would report its parent's peak
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"step": step, "seconds": dt, "cpu_seconds": use.ru_utime + use.ru_stime, "rows": rows,
                  "kept": kept, "peak_rss_mb": hwm / 1024}))
"""

_BUILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from bench_balance import write_synthetic_pool
print(write_synthetic_pool(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
"""


def measure(step: str, pool: Path, out: Path) -> dict:
    res = subprocess.run([sys.executable, "-c", _CHILD, step, str(pool), str(out)], capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"{step} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(fixed, per row) of a least-squares line through (rows, value) points (one point: fixed 0)."""
    if len(points) == 1:
        return 0.0, points[0][1] / points[0][0]
    x, y = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    slope, fixed = np.polyfit(x, y, 1)
    return float(fixed), float(slope)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pool", help="benchmark this pool instead of a synthetic one")
    p.add_argument("--rows", type=int, action="append", help="synthetic pool size (repeatable; default 10,000,000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split-unbalanced", action="store_true",
                   help="also time split on the unbalanced pool (a full rewrite: the worst case)")
    p.add_argument("--workdir", help="where to build pools (default: a temporary folder)")
    a = p.parse_args(argv)
    base = measure("baseline", Path("."), Path("."))
    print(f"baseline (imports): peak RSS {base['peak_rss_mb']:,.0f} MiB", flush=True)
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(dir=a.workdir) as tmp:
        tmp = Path(tmp)
        pools = [(Path(a.pool), None)] if a.pool else [(tmp / f"pool{r}", r) for r in (a.rows or [10_000_000])]
        for pool, rows in pools:
            if rows is not None:  # built in a child, so that this process stays small
                t0 = time.perf_counter()
                res = subprocess.run([sys.executable, "-c", _BUILD, str(Path(__file__).parent), str(pool), str(rows),
                                      str(a.seed)], capture_output=True, text=True, check=True)
                n = int(res.stdout.split()[-1])
                print(f"built synthetic pool: {n:,} rows in {time.perf_counter() - t0:.1f} s "
                      f"({sum(f.stat().st_size for f in pool.rglob('*.parquet')) / 2**20:.0f} MiB)", flush=True)
            balanced = tmp / f"{pool.name}-balanced"
            results = [measure("balance", pool, balanced)]
            split = measure("split", balanced, tmp / f"{pool.name}-split")
            split["step"] = "split (balanced pool)"
            split["pool_rows"] = results[0]["rows"]
            results.append(split)
            if a.split_unbalanced:
                worst = measure("split", pool, tmp / f"{pool.name}-split-all")
                worst["step"] = "split (unbalanced pool)"
                results.append(worst)
            for r in results:
                r.setdefault("pool_rows", r["rows"])
                runs.setdefault(r["step"], []).append(r)
                print(f"{r['step']:>24}: {r['rows']:>12,} rows -> {r['kept']:>11,}  {r['seconds']:7.1f} s wall "
                      f"({r['cpu_seconds']:6.1f} s CPU)  {r['rows'] / max(r['seconds'], 1e-9) / 1e6:5.2f} M rows/s  "
                      f"peak RSS {r['peak_rss_mb']:,.0f} MiB", flush=True)
            shutil.rmtree(balanced, ignore_errors=True)
    print("\nextrapolation, linear in the unbalanced pool's rows (time: per-row cost of the largest run;"
          " memory: fixed + per-row fitted over the runs, baseline imports included):")
    for step, rs in runs.items():
        largest = max(rs, key=lambda r: r["pool_rows"])
        per_row_s = largest["seconds"] / largest["pool_rows"]
        per_row_cpu = largest["cpu_seconds"] / largest["pool_rows"]
        fixed_mb, per_row_mb = _fit([(r["pool_rows"], r["peak_rss_mb"]) for r in rs])
        if len(rs) == 1:
            fixed_mb, per_row_mb = base["peak_rss_mb"], (largest["peak_rss_mb"] - base["peak_rss_mb"]) / largest["pool_rows"]
        line = [f"{step}: {per_row_mb * 2**20:.0f} B/row over {fixed_mb:,.0f} MiB fixed"]
        for target in (100_000_000, 200_000_000):
            line.append(f"{target / 1e6:.0f}M rows -> {per_row_s * target / 60:.1f} min wall "
                        f"({per_row_cpu * target / 60:.1f} min CPU), {(fixed_mb + per_row_mb * target) / 1024:.1f} GiB")
            if a.pool:
                break
        print("  " + "; ".join(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
