"""Writing a pool in the Hugging Face layout from a stream of filtered record batches.

:class:`PoolOutput` knows each split's row count in advance, picks the shard count (at most
``shard_rows`` rows per split per shard) and writes fixed-size row groups, so the same rows in the
same order give byte-identical files, whatever the input batches."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pyarrow as pa

from tensorqa.errors import TensorQAError
from tensorqa.outputs import output_folder
from tensorqa.writers import RECORD_SCHEMA, SPLITS, ParquetShardWriter

ROW_GROUP_ROWS = 1 << 18


def prepare_output(out: str | os.PathLike, pool: str | os.PathLike) -> Path:
    """Create ``out``; refuse the input pool itself or a folder that already holds shards."""
    out = Path(out)
    if out.resolve() == Path(pool).resolve():
        raise TensorQAError(f"--out {out}: must differ from the input pool")
    data = out / "data"
    if data.is_dir() and any(data.glob("*.parquet")):
        raise TensorQAError(f"--out {out}: already holds a pool (data/*.parquet); choose an empty folder")
    output_folder(data, out)  # a link planted at data/ is refused
    return out


class PoolOutput:
    """Route rows of each split into K shards, ``rows[split] / K`` rows (rounded up) per shard."""

    def __init__(self, out: Path, rows: dict[str, int], schema: pa.Schema = RECORD_SCHEMA,
                 shard_rows: int = 2_000_000, row_group_rows: int = ROW_GROUP_ROWS):
        if shard_rows < 1:
            raise TensorQAError(f"shard_rows must be at least 1, got {shard_rows}")
        self.count = max(1, max(math.ceil(rows.get(s, 0) / shard_rows) for s in SPLITS))
        self.per_shard = {s: max(1, math.ceil(rows.get(s, 0) / self.count)) for s in SPLITS}
        self.schema, self.row_group_rows = schema, row_group_rows
        self.writers = [ParquetShardWriter(out, i, self.count, row_group_rows, schema) for i in range(self.count)]
        self.written = {s: 0 for s in SPLITS}
        self.buffer: dict[str, list[pa.Table]] = {s: [] for s in SPLITS}
        self.buffered = {s: 0 for s in SPLITS}

    def add(self, split: str, table: pa.Table) -> None:
        """Append rows (all of ``split``) in order."""
        if table.num_rows == 0:
            return
        self.buffer[split].append(table)
        self.buffered[split] += table.num_rows
        self._drain(split, final=False)

    def _drain(self, split: str, final: bool) -> None:
        while self.buffered[split] and (final or self.buffered[split] >= self.row_group_rows):
            data = pa.concat_tables(self.buffer[split])
            shard = min(self.written[split] // self.per_shard[split], self.count - 1)
            room = (shard + 1) * self.per_shard[split] - self.written[split]
            size = min(self.row_group_rows, data.num_rows)
            if shard < self.count - 1:  # the last shard takes whatever is left
                size = min(size, room)
            try:
                self.writers[shard].write_split(split, data.slice(0, size))
            except OSError as e:  # a full disk: one line naming the file
                raise self.writers[shard].write_error(e) from None
            self.written[split] += size
            rest = data.slice(size)
            self.buffer[split] = [rest] if rest.num_rows else []
            self.buffered[split] = rest.num_rows

    def close(self, stats: dict | None = None) -> None:
        for split in SPLITS:
            self._drain(split, final=True)
        for w in self.writers:  # every shard's files complete before any is renamed into place
            try:
                w.finish()
            except OSError as e:
                raise w.write_error(e) from None
        for w in self.writers:
            w.publish(stats)

    def abort(self) -> None:
        for w in self.writers:
            w.abort()
