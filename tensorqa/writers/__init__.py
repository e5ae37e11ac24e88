"""Writers for question records: Parquet shards in the Hugging Face layout, and AGQA's JSON dict::

    OUT/README.md                                   dataset card with a ``configs`` block
    OUT/data/<split>-<i:05d>-of-<K:05d>.parquet     shard i of K, one file per split with rows
    OUT/data/.done-<i:05d>-of-<K:05d>.json          written last: shard i is complete

A shard's ``.done`` marker records what decided its records; on restart a complete shard is skipped,
a half-written one redone, another run's folder refused (:func:`resume_shard`). Every name of
:mod:`.schema`, :mod:`.layout`, :mod:`.parquet`, :mod:`.agqa_json` and :mod:`.digest` is importable here.
"""

from tensorqa.writers.schema import (NULLABLE_COLUMNS, PLAIN_COLUMNS, RECORD_SCHEMA, SPLITS, STATISTICS_COLUMNS,
                                     TEXT_COLUMNS, VOCABULARY_COLUMNS, cast_records, coded_schema)
from tensorqa.writers.layout import (done_marker, iter_pool, pool_fact, pool_shards, pool_store, read_pool,
                                     resume_shard, shard_complete, shard_name, splits_with_rows, write_dataset_card,
                                     write_done_marker)
from tensorqa.writers.parquet import (CHUNK_ROWS, WRITE_BATCH_ROWS, ParquetShardWriter,
                                      fixed_chunks, parquet_writer)
from tensorqa.writers.agqa_json import AgqaJsonShardWriter
from tensorqa.writers.digest import content_digest, string_offsets

__all__ = [
    "RECORD_SCHEMA", "NULLABLE_COLUMNS", "SPLITS", "TEXT_COLUMNS", "VOCABULARY_COLUMNS", "PLAIN_COLUMNS",
    "STATISTICS_COLUMNS", "cast_records", "coded_schema",
    "shard_name", "done_marker", "write_done_marker", "shard_complete", "resume_shard", "pool_fact", "pool_store",
    "write_dataset_card", "splits_with_rows", "read_pool", "iter_pool", "pool_shards",
    "WRITE_BATCH_ROWS", "CHUNK_ROWS", "parquet_writer", "fixed_chunks", "ParquetShardWriter",
    "AgqaJsonShardWriter", "content_digest", "string_offsets",
]
