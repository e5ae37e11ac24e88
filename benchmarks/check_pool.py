"""Scan a whole pool: no unfilled placeholder in any question or program, and per video the
question ids run <video>-0 .. <video>-(n-1) with no duplicate or gap (ids in file order).

    python benchmarks/check_pool.py POOL
"""
import glob
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

t0 = time.perf_counter()
files = sorted(glob.glob(f"{sys.argv[1]}/data/*.parquet"))
n = bad_q = bad_p = bad_seq = 0
videos_seen = set()
for f in files:
    pf = pq.ParquetFile(f)
    prev_v, prev_n = None, -1
    for g in range(pf.num_row_groups):
        t = pf.read_row_group(g, columns=["question_id", "video_id", "question", "program"])
        n += t.num_rows
        for pat in ("{", "<", "}", ">"):
            bad_q += pc.sum(pc.match_substring(t["question"], pat)).as_py() or 0
        for pat in ("<", ">"):
            bad_p += pc.sum(pc.match_substring(t["program"], pat)).as_py() or 0
        parts = pc.extract_regex(t["question_id"].combine_chunks(), r"^(?P<v>.*)-(?P<n>\d+)$")
        v = parts.field("v").to_numpy(zero_copy_only=False); k = parts.field("n").cast(pa.int64()).to_numpy()
        assert (v == t["video_id"].to_numpy(zero_copy_only=False)).all()
        pv = np.concatenate([[prev_v], v[:-1]]); pk = np.concatenate([[prev_n], k[:-1]])
        same = pv == v
        ok = np.where(same, k == pk + 1, k == 0)
        bad_seq += int((~ok).sum())
        starts = v[~same]
        for s in starts:
            if s in videos_seen: bad_seq += 1
            videos_seen.add(s)
        prev_v, prev_n = v[-1], k[-1]
print("rows", n, "videos", len(videos_seen), "| unfilled placeholders: questions", bad_q, "programs", bad_p,
      "| id sequence breaks (duplicate or gap):", bad_seq, "|", round(time.perf_counter() - t0, 1), "s")
sys.exit(1 if bad_q or bad_p or bad_seq else 0)
