"""Re-derive the answers of a random sample of a pool's records with the scalar reference executor.

    python benchmarks/rederive_sample.py STORE POOL [--n 10000] [--seed 0]

Reads only the sampled rows (Parquet row groups), runs each record's program string on its video
with ``tensorqa.agqa.executor.run_program`` and prints the number of disagreements per template.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from tensorqa.agqa.executor import run_program
from tensorqa.scenes.store import open_store


def _template_codes(path) -> np.ndarray:
    """int codes of a shard's template column, equal for equal names across shards."""
    col = pq.read_table(path, columns=["template"], read_dictionary=["template"])["template"].combine_chunks()
    names = np.array([_TEMPLATE_INDEX.setdefault(t, len(_TEMPLATE_INDEX)) for t in col.dictionary.to_pylist()])
    return names[col.indices.to_numpy()]


_TEMPLATE_INDEX: dict = {}


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("store")
    p.add_argument("pool")
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--per-template", type=int, default=0,
                   help="instead of --n uniform rows, K random rows of every template (rare ones included)")
    a = p.parse_args(argv)
    files = sorted(Path(a.pool, "data").glob("*.parquet"))
    sizes = [pq.ParquetFile(f).metadata.num_rows for f in files]
    total = sum(sizes)
    rng = np.random.default_rng(a.seed)
    if a.per_template:
        codes = np.concatenate([_template_codes(f) for f in files])
        picks = np.sort(np.concatenate([rng.choice(np.flatnonzero(codes == c), size=min(a.per_template, int((codes == c).sum())),
                                                   replace=False) for c in np.unique(codes)]))
    else:
        picks = np.sort(rng.choice(total, size=min(a.n, total), replace=False))
    offsets = np.cumsum([0] + sizes)
    rows = []
    cols = ["question_id", "video_id", "template", "program", "answer"]
    for f, lo, hi in zip(files, offsets[:-1], offsets[1:]):
        mine = picks[(picks >= lo) & (picks < hi)] - lo
        pf = pq.ParquetFile(f)
        start = 0
        for g in range(pf.num_row_groups):  # read only the row groups holding sampled rows
            n = pf.metadata.row_group(g).num_rows
            here = mine[(mine >= start) & (mine < start + n)] - start
            if len(here):
                rows += pf.read_row_group(g, columns=cols).take(here).to_pylist()
            start += n
    t0 = time.perf_counter()
    wrong = collections.Counter()
    seen = collections.Counter()
    examples = []
    with open_store(a.store) as s:
        scenes = {}
        for r in rows:
            scene = scenes.get(r["video_id"]) or scenes.setdefault(r["video_id"], s.scene(r["video_id"]))
            got = run_program(r["program"], scene)
            seen[r["template"]] += 1
            if got != r["answer"]:
                wrong[r["template"]] += 1
                examples.append((r["question_id"], r["program"], r["answer"], got))
    print(f"{len(rows):,} records of {total:,} re-derived in {time.perf_counter() - t0:.1f} s: "
          f"{sum(wrong.values())} disagreements; templates sampled: {len(seen)}")
    for name in sorted(seen):
        print(f"  {name:26s} {seen[name]:6d} sampled  {wrong[name]} wrong")
    for e in examples[:10]:
        print("  ", e)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
