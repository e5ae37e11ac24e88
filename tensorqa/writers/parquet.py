"""Parquet shards of question records: the one Parquet writer set-up of every tensorqa table and
:class:`ParquetShardWriter` (rows to their split's file, fixed row groups so that a shard's bytes do
not depend on the caller's batch size, ``*.partial`` files published on ``close``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tensorqa.errors import TensorQAError
from tensorqa.outputs import new_partial, output_folder, publish, write_error
from tensorqa.writers.layout import done_marker, shard_name, write_done_marker
from tensorqa.writers.schema import (PLAIN_COLUMNS, RECORD_SCHEMA, SPLITS, STATISTICS_COLUMNS, TEXT_COLUMNS, cast_records,
                                     coded_schema)

# values the Parquet writer encodes per batch (pyarrow's default is 1,024; larger writes faster)
WRITE_BATCH_ROWS = 8192


def parquet_writer(path: str | os.PathLike, schema: pa.Schema, **options) -> pq.ParquetWriter:
    """The Parquet writer of every tensorqa table; no Arrow schema is stored, so every reader sees the
    plain Parquet types :data:`RECORD_SCHEMA` spells."""
    options.setdefault("write_batch_size", WRITE_BATCH_ROWS)
    return pq.ParquetWriter(path, schema, compression="zstd", store_schema=False,
                            use_dictionary=[c for c in schema.names if c not in TEXT_COLUMNS | PLAIN_COLUMNS] or False,
                            write_statistics=[c for c in STATISTICS_COLUMNS if c in schema.names] or False, **options)


def rows_where(table: pa.Table, mask: pa.Array) -> pa.Table:
    """table.filter(mask) without copying: the kept rows come in runs (a video's questions share
    a split), so they are zero-copy slices of the table, one per run."""
    keep = np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)
    if keep.all():
        return table
    edges = np.flatnonzero(np.diff(np.concatenate([[False], keep, [False]]).astype(np.int8)))
    return pa.concat_tables([table.slice(a, b - a) for a, b in zip(edges[::2], edges[1::2])]) if len(edges) \
        else table.slice(0, 0)


# rows per chunk handed to the Parquet writer: a multiple of its write batch (WRITE_BATCH_ROWS),
# so the pages come out as if the row group were one chunk (the files are the same bytes)
CHUNK_ROWS = 1 << 16
assert CHUNK_ROWS % WRITE_BATCH_ROWS == 0


def fixed_chunks(table: pa.Table, rows: int = CHUNK_ROWS) -> pa.Table:
    """``table`` with every column in chunks of ``rows`` rows: the writer cuts pages within chunks, so
    boundaries by row position keep a shard's bytes independent of the batch size (only chunks that
    straddle two blocks are copied)."""
    columns = {}
    for name, column in zip(table.column_names, table.columns):
        pieces = [column.slice(a, rows) for a in range(0, len(column), rows)]
        columns[name] = pa.chunked_array([p.chunk(0) if p.num_chunks == 1 else p.combine_chunks() for p in pieces]
                                         or [pa.array([], column.type)], column.type)
    return pa.table(columns, schema=table.schema)


class ParquetShardWriter:
    """Append record tables for shard ``index`` of ``count``; ``close()`` publishes the shard."""

    def __init__(self, out: str | os.PathLike, index: int, count: int, row_group_size: int = 1 << 18,
                 schema: pa.Schema | None = None):
        """``schema``: the shard's columns; None: RECORD_SCHEMA, dictionary-coded if the first table is."""
        if not 0 <= index < count:
            raise TensorQAError(f"shard index {index} is not in 0..{count - 1}")
        self.out, self.index, self.count = Path(out), index, count
        self.data = output_folder(self.out / "data", self.out)  # a planted link there is refused
        self.row_group_size = row_group_size
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._pending: dict[str, list[pa.Table]] = {s: [] for s in SPLITS}
        self._pending_rows = {s: 0 for s in SPLITS}
        self.rows = {s: 0 for s in SPLITS}
        self.schema: pa.Schema | None = schema  # None until the first write when not given

    def _final(self, split: str) -> Path:
        return self.data / shard_name(split, self.index, self.count)

    def _partial(self, split: str) -> Path:
        return self.data / (shard_name(split, self.index, self.count) + ".partial")

    def write(self, table: pa.Table) -> None:
        """Write records (RECORD_SCHEMA) to their split's file, in row groups of exactly
        ``row_group_size`` rows (a shard's bytes do not depend on the batch size)."""
        import pyarrow.compute as pc

        table = table.select(RECORD_SCHEMA.names)
        if self.schema is None:
            coded = any(pa.types.is_dictionary(f.type) for f in table.schema)
            self.schema = coded_schema(RECORD_SCHEMA) if coded else RECORD_SCHEMA
        if table.schema != self.schema:
            table = cast_records(table, self.schema, self.data)
        for split in SPLITS:
            part = rows_where(table, pc.equal(table["split"], split))
            if part.num_rows == 0:
                continue
            self._pending[split].append(part)
            self._pending_rows[split] += part.num_rows
            self.rows[split] += part.num_rows
            if self._pending_rows[split] >= self.row_group_size:
                self._flush(split, final=False)

    def write_split(self, split: str, table: pa.Table) -> None:
        """Write rows of ``split`` only, as they come (no filter copy, no re-chunking)."""
        schema = self.schema or RECORD_SCHEMA
        table = cast_records(table.select(schema.names), schema, self.data)
        self._current = self._final(split)
        if split not in self._writers:
            self._writers[split] = parquet_writer(new_partial(self._final(split)), schema)
        self._writers[split].write_table(table, row_group_size=self.row_group_size)
        self.rows[split] += table.num_rows

    def _flush(self, split: str, final: bool) -> None:
        schema = self.schema or RECORD_SCHEMA
        self._current = self.data / shard_name(split, self.index, self.count)
        if split not in self._writers:
            self._writers[split] = parquet_writer(new_partial(self._final(split)), schema)
        pending = pa.concat_tables(self._pending[split]) if self._pending[split] else schema.empty_table()
        n = self.row_group_size
        full = pending.num_rows // n * n
        for a in range(0, full, n):
            self._writers[split].write_table(fixed_chunks(pending.slice(a, n)), row_group_size=n)
        rest = pending.slice(full)
        if final and rest.num_rows:
            self._writers[split].write_table(fixed_chunks(rest), row_group_size=n)
            rest = rest.slice(rest.num_rows)
        self._pending[split] = [rest] if rest.num_rows else []
        self._pending_rows[split] = rest.num_rows

    def close(self, stats: dict | None = None) -> None:
        self.finish()
        self.publish(stats)

    def _has_rows(self, split: str) -> bool:
        return split in self._writers or self._pending_rows[split] > 0

    def finish(self) -> None:
        """Write the rest and close the partial files; a split without rows gets no file (``datasets``
        refuses a split of empty files)."""
        for split in SPLITS:
            if self._has_rows(split):
                self._flush(split, final=True)
                self._current = self._final(split)
                self._writers[split].close()

    def publish(self, stats: dict | None = None) -> None:
        """Rename the finished files into place, then write the done marker."""
        for split in SPLITS:  # renamed once all are complete: a failure leaves no final-named file
            if self._has_rows(split):
                publish(self._partial(split), self._final(split))
            else:  # an earlier run's file of this shard and split (a link is removed, not followed)
                self._final(split).unlink(missing_ok=True)
        marker = done_marker(self.out, self.index, self.count)
        write_done_marker(marker, {"rows": self.rows, **(stats or {})})

    def abort(self) -> None:
        """Remove the shard's partial files (closing a writer can fail again on a full disk)."""
        for w in self._writers.values():
            try:
                w.close()
            except Exception:  # noqa: BLE001 - the file is removed anyway
                pass
        self._writers.clear()
        for split in SPLITS:
            self._partial(split).unlink(missing_ok=True)
        marker = done_marker(self.out, self.index, self.count)
        marker.with_name(marker.name + ".partial").unlink(missing_ok=True)

    def write_error(self, e: OSError) -> TensorQAError:
        """One line for a write the file system refused, naming the file (pyarrow's errors do not)."""
        return write_error(getattr(self, "_current", None) or self.data / shard_name("train", self.index, self.count), e,
                           outcome="this shard's partial files were removed")
