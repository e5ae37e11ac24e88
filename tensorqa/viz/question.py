"""One question record of a pool, found without reading the pool: question ids are
``<video>-<n>`` and shards keep row-group statistics on ``video_id``, so only the row groups that
may hold the video are read."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tensorqa.agqa.balancing.scan import pool_files
from tensorqa.errors import TensorQAError


def find_record(pool: str | os.PathLike, question_id: str) -> dict:
    """The record (a RECORD_SCHEMA row as a dict) whose question_id is ``question_id``; a
    TensorQAError naming the pool when it holds none."""
    video = question_id.rsplit("-", 1)[0]
    for files in pool_files(pool).values():
        for f in files:
            try:
                t = pq.read_table(f, filters=[("video_id", "=", video)])
            except (OSError, pa.ArrowException) as err:
                raise TensorQAError(f"{f}: cannot read as Parquet ({err})") from None
            hit = t.filter(pc.equal(t["question_id"], question_id))
            if hit.num_rows:
                return hit.slice(0, 1).to_pylist()[0]
    raise TensorQAError(f"--question {question_id}: not in the pool {pool}")
