"""Content digests of Parquet shards: a SHA-256 of the records themselves (column names, then each
column's values in row order), equal for equal records whatever wrote the file; and the string
offsets helper it reads strings with.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tensorqa.errors import TensorQAError

def string_offsets(arr: pa.Array) -> np.ndarray:
    """int32[len + 1]: the value offsets of a string array into its data buffer (a view; a slice's
    own offsets, so they need not start at 0)."""
    return np.frombuffer(arr.buffers()[1], np.int32, count=len(arr) + 1, offset=4 * arr.offset)


def feed(streams: dict, key: str, column: pa.ChunkedArray | pa.Array) -> None:
    """Append ``column`` to ``key``'s hash streams (validity, lengths, bytes / items / int64 values),
    each in row order, so row groups, chunks and pages do not change them."""
    def stream(name: str):
        return streams.setdefault(f"{key}/{name}", hashlib.sha256())

    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    stream("valid").update(arr.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8).tobytes())
    if pa.types.is_string(arr.type) or pa.types.is_binary(arr.type):
        offsets = string_offsets(arr)
        stream("length").update(np.diff(offsets).astype(np.int64).tobytes())
        if len(arr) and arr.buffers()[2] is not None:
            stream("data").update(memoryview(arr.buffers()[2])[offsets[0]:offsets[-1]])
    elif pa.types.is_list(arr.type):
        stream("length").update(np.diff(arr.offsets.to_numpy()).astype(np.int64).tobytes())
        feed(streams, key + "/item", arr.flatten())
    else:  # booleans, integers, floats
        filled = arr.fill_null(pa.scalar(0, pa.int64()).cast(arr.type)) if arr.null_count else arr
        values = filled.to_numpy(zero_copy_only=False)
        stream("data").update(values.astype(np.float64 if values.dtype.kind == "f" else np.int64).tobytes())


def content_digest(path: str | os.PathLike) -> str:
    """SHA-256 of one Parquet shard's records (names, then values in row order): equal for equal
    records whatever wrote the file (file bytes also carry the pyarrow version)."""
    streams: dict = {}
    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as e:
        raise TensorQAError(f"{path}: not a readable Parquet file ({e})") from None
    names = pf.schema_arrow.names
    for name in names:  # column by column, row group by row group: one column in memory at a time
        for g in range(pf.num_row_groups):
            try:
                column = pf.read_row_group(g, columns=[name]).column(0)
            except (OSError, pa.ArrowException) as e:
                raise TensorQAError(f"{path}: row group {g}, column {name!r} cannot be read ({e})") from None
            feed(streams, name, column)
    h = hashlib.sha256("\0".join(names).encode())
    for key in sorted(streams):
        h.update(key.encode() + b"\0" + streams[key].digest())
    return h.hexdigest()
