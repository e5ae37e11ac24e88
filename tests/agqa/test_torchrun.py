"""Beyond one process: ``torchrun -m tensorqa generate`` shards the videos across ranks.

Each rank runs the CLI once and takes shard RANK of WORLD_SIZE (torchrun sets both); no process
group is needed because shards share nothing. The pool the ranks write together must hold the
same rows, in the same order once read back, as a single-process run: question ids number each
video's questions on their own, and shard i holds the i-th contiguous range of videos.
"""

import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from tensorqa.agqa import generate
from tensorqa.scenes.pack import pack_default
from tensorqa.scenes.store import open_store
from tensorqa.writers import read_pool, shard_complete

pytest.importorskip("torch.distributed.run")

RANKS = 2
# direct cells, object references (objFirstChoose), indirect-object actions and localizations
# (actTime, relTime): every kind of row; the full catalogue only costs time here
TEMPLATES = ["objRelExists", "objWhat", "objFirstChoose", "actTime", "relTime"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return pack_default(tmp_path_factory.mktemp("torchrun") / "s.h5", videos=30, seed=5, progress=False)


def _clean_env() -> dict:
    # a test run itself launched by torchrun must not leak its rank into the children or the oracle
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.mark.slow  # three interpreters start (about 20 s on 2 idle cores)
def test_torchrun_ranks_write_the_single_process_pool(tmp_path, store, monkeypatch):
    for k in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(k, raising=False)
    single = tmp_path / "single"
    stats = generate(store, single, templates=TEMPLATES, batch_videos=8, progress=False)
    assert stats["num_shards"] == 1 and stats["videos"] == 30

    out = tmp_path / "ranks"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={RANKS}",
           "-m", "tensorqa", "generate", str(store), "--out", str(out), "--batch-videos", "4", "--quiet",
           "--templates", *TEMPLATES]
    r = subprocess.run(cmd, capture_output=True, text=True, env=_clean_env(), timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]

    # one shard per rank, 15 videos each (30 * i // 2 .. 30 * (i + 1) // 2), each marked complete
    assert all(shard_complete(out, i, RANKS) for i in range(RANKS))
    # one file per split the rank's videos hold (the store lists its test videos last: rank 0 has none)
    with open_store(store) as s:
        ids, splits = list(s.video_ids), list(s.splits)
    assert sorted(p.name for p in (out / "data").glob("*.parquet")) == sorted(
        f"{split}-{i:05d}-of-{RANKS:05d}.parquet" for i in range(RANKS) for split in set(splits[15 * i:15 * (i + 1)]))
    # rank i wrote exactly the videos of the i-th contiguous half of the store
    for i in range(RANKS):
        mine = set()
        for f in (out / "data").glob(f"*-{i:05d}-of-{RANKS:05d}.parquet"):
            mine |= set(pq.read_table(f, columns=["video_id"])["video_id"].to_pylist())
        assert mine <= set(ids[15 * i:15 * (i + 1)]) and len(mine) >= 10, (i, sorted(mine))

    expected, got = read_pool(single), read_pool(out)
    assert got.num_rows == expected.num_rows == stats["questions"]
    assert got.equals(expected)
    assert (out / "README.md").read_text() == (single / "README.md").read_text()
