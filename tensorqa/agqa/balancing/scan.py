"""Reading a Parquet pool (``POOL/data/<split>-<i>-of-<K>``) column by column, in a fixed order
(splits, shard index, rows), and dense codes for strings (:class:`Codebook`), renumbered in sorted
string order so that no decision depends on the order the pool was written in."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tensorqa.errors import TensorQAError
from tensorqa.writers import SPLITS
from tensorqa.writers.layout import check_nulls as check_nulls, record_shards as record_shards

_SHARD = re.compile(r"^(?P<split>[A-Za-z0-9_]+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.parquet$")
BATCH_ROWS = 1 << 20        # rows per batch of a pass reading a few columns
RECORD_BATCH_ROWS = 1 << 18  # rows per batch of a pass reading whole records (wide: smaller batches)


def pool_files(pool: str | os.PathLike) -> dict[str, list[Path]]:
    """{split: shard files in index order} of a pool; raises if the pool is missing or incomplete, or
    holds a shard of another split, as every pool reader does (``tensorqa.writers.layout``)."""
    data = Path(pool) / "data"
    found: dict[str, dict[int, Path]] = {}
    counts: dict[str, set[int]] = {}
    for path in record_shards(pool):  # complete (every shard's done marker), train / test only
        m = _SHARD.match(path.name)
        split = m["split"]
        found.setdefault(split, {})[int(m["index"])] = path
        counts.setdefault(split, set()).add(int(m["count"]))
    if not found:
        raise TensorQAError(f"{pool}: no Parquet shards under data/")
    files = {}
    for split in SPLITS:
        if split not in found:
            files[split] = []
            continue
        if len(counts[split]) != 1:
            raise TensorQAError(f"{data}: {split} shards disagree on the shard count {sorted(counts[split])}")
        (count,) = counts[split]
        missing = [i for i in range(count) if i not in found[split] and not _no_rows(data, split, i, count)]
        if missing:
            raise TensorQAError(f"{data}: {split} shard {missing[0]:05d} of {count:05d} is missing (pool incomplete)")
        files[split] = [found[split][i] for i in range(count) if i in found[split]]
    return files


def _no_rows(data: Path, split: str, index: int, count: int) -> bool:
    """Whether shard ``index`` is complete with no rows of ``split`` (the writers write no file for
    it), as its done marker records."""
    from tensorqa.writers import done_marker

    try:
        import json

        return json.loads(done_marker(data.parent, index, count).read_text())["rows"].get(split, 0) == 0
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def open_shard(f: Path, **options) -> pq.ParquetFile:
    """A pool shard opened for reading; a file that is not Parquet, or is cut short, raises
    :class:`TensorQAError` naming it."""
    try:
        return pq.ParquetFile(f, **options)
    except (OSError, pa.ArrowException) as err:
        raise TensorQAError(f"{f}: not a readable Parquet file ({err})") from None


def check_columns(files: Sequence[Path], columns: Sequence[str]) -> None:
    """Raise naming the file and column if a shard lacks one of ``columns`` (or is not Parquet)."""
    for f in files:
        names = set(open_shard(f).schema_arrow.names)
        for c in columns:
            if c not in names:
                raise TensorQAError(f"{f}: column {c!r} is missing (expected tensorqa.writers.RECORD_SCHEMA)")


def check_split_rows(split_column, split: str, where) -> None:
    """Refuse a ``split`` shard (of the pool folder ``where``) holding a row of another split."""
    if not pc.all(pc.equal(split_column, split)).as_py():
        raise TensorQAError(f"{where}: a {split} shard holds rows whose 'split' is not {split!r}")


def count_rows(files: Sequence[Path]) -> int:
    return sum(open_shard(f).metadata.num_rows for f in files)


def iter_batches(files: Sequence[Path], columns: Sequence[str] | None, batch_rows: int = BATCH_ROWS,
                 dictionary: Sequence[str] = ()) -> Iterator[pa.RecordBatch]:
    """Record batches of the given columns over ``files`` in order; ``dictionary`` columns come as
    dictionary arrays (cheap for low-cardinality strings such as template, window, answer)."""
    for f in files:
        pf = open_shard(f, read_dictionary=list(dictionary) or None)
        try:
            for batch in pf.iter_batches(batch_size=batch_rows, columns=list(columns) if columns else None):
                check_nulls(f, batch)  # as read_pool: a null answer would reach a log, a count, a hash
                yield batch
        except (OSError, pa.ArrowInvalid) as err:
            raise TensorQAError(f"{f}: cannot read Parquet data ({err})") from None


def as_numpy(column: pa.Array | pa.ChunkedArray, fill=0) -> np.ndarray:
    """A numeric column as numpy, nulls replaced by ``fill``."""
    if column.null_count:
        column = pc.fill_null(column, fill)
    return column.to_numpy(zero_copy_only=False)


def used_words(values: pa.DictionaryArray) -> tuple[list, np.ndarray, np.ndarray]:
    """(the dictionary's words, each row's index into them, the indices some row uses, ascending).

    A Parquet dictionary page, and so a column read with ``read_dictionary``, may list words that
    no row holds: ``tensorqa generate`` writes each vocabulary column's whole vocabulary, "" included."""
    codes = values.indices.to_numpy(zero_copy_only=False)
    words = values.dictionary.to_pylist()
    return words, codes, np.flatnonzero(np.bincount(codes, minlength=len(words)))


class Codebook:
    """Dense int32 codes for low-cardinality strings (answers, template names): ``encode`` numbers
    them by first appearance (a dictionary lookup per distinct string of a batch; high-cardinality
    keys go through ``hashindex``); ``finish`` renumbers them in sorted order."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.index)

    def encode(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if values.null_count:
            if pa.types.is_dictionary(values.type):
                values = values.cast(values.type.value_type)
            values = pc.fill_null(values, "")
        enc = values if pa.types.is_dictionary(values.type) else pc.dictionary_encode(values)
        index = self.index
        words, codes, used = used_words(enc)
        lut = np.zeros(len(words), np.int32)
        for i in used:  # only the words some row holds: a dictionary may list others
            lut[i] = index.setdefault(words[i], len(index))
        return lut[codes]

    def finish(self) -> tuple[list[str], np.ndarray]:
        """(strings in sorted order, int32 lookup table from first-appearance code to sorted code)."""
        words = sorted(self.index)
        lut = np.empty(len(words), np.int32)
        for new, w in enumerate(words):
            lut[self.index[w]] = new
        return words, lut
