"""Content digests of a pool's shards: one SHA-256 per Parquet file over its records (column
names, then each column's values in row order), not over the file's bytes.

    python benchmarks/pool_digest.py POOL [--jobs N] [--out digests.txt]
    diff digests_cpu.txt digests_gpu.txt          # the same pool from two machines?

Parquet files carry the writer's library version (``created_by``), so two machines with different
pyarrow versions write different bytes for the same records; these digests are equal exactly when
the records are (``tensorqa.writers.content_digest``). Lines are "<digest> <file name>", sorted
by file name. About 2 us per question per process (reading dominates): ~6 CPU-minutes for the
146M-question default pool, split over ``--jobs`` processes.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tensorqa.errors import TensorQAError
from tensorqa.writers import content_digest


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pool", type=Path)
    p.add_argument("--jobs", type=int, default=1, help="files digested side by side (default 1)")
    p.add_argument("--out", type=Path, help="also write the lines here")
    a = p.parse_args(argv)
    files = sorted(Path(a.pool, "data").glob("*.parquet"))
    if not files:
        print(f"pool_digest.py: {a.pool}: no Parquet shards under data/", file=sys.stderr)
        return 2
    try:
        with ProcessPoolExecutor(max(1, a.jobs)) as ex:
            lines = [f"{d} {f.name}" for f, d in zip(files, ex.map(content_digest, files))]
    except TensorQAError as e:
        print(f"pool_digest.py: {e}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    if a.out:
        a.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
