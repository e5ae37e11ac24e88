"""64-bit hashes of string columns, vectorized (no Python call per string).

``hash_strings`` NUL-pads the strings of a batch to one byte width (``utf8_rpad``), reads the buffer
as a ``uint64[n, W / 8]`` word matrix and folds it column by column (non-ASCII batches build the same
matrix by a byte scatter). The hashes stand in for strings when grouping (``direct_group``) and for
seeded priorities (``question_id``): they depend only on the string and the seed, never on the batch,
so nothing built on them depends on how the pool is sharded or batched."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.engine import rng
from tensorqa.engine.rng import mix64

_U64 = np.uint64


def _constants(seed: int, count: int) -> np.ndarray:
    """``count`` odd uint64 multipliers derived from ``seed``."""
    return rng.sequence(seed, "balance.strings", count) | _U64(1)


def _as_string_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_null(values.type):
        values = pa.array([""] * len(values), pa.string())
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    if pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type):
        values = values.cast(pa.string())
    if values.null_count:
        values = pc.fill_null(values, "")
    return values


def hash_strings(values: pa.Array | pa.ChunkedArray, seed: int = 0) -> np.ndarray:
    """uint64[n] hash of each string (nulls hash like ""), a function of its bytes and the seed only:
    word j is folded in only if the string has bytes there. Collisions: about 2^-64 per pair."""
    arr = _as_string_array(values)
    n = len(arr)
    if n == 0:
        return np.zeros(0, _U64)
    lengths = pc.binary_length(arr).to_numpy(zero_copy_only=False).astype(np.int64)
    width = max(8, int(-(-int(lengths.max()) // 8) * 8))
    words = _padded_words(arr, lengths, width)
    k = _constants(seed, width // 8 + 1)
    h = mix64(lengths.astype(_U64) ^ k[0])
    for j in range(width // 8):
        step = h ^ words[:, j]
        step *= k[j + 1]
        step ^= step >> _U64(32)
        h = step if j == 0 and lengths.min() > 0 else np.where(lengths > 8 * j, step, h)
    return mix64(h)


def _padded_words(arr: pa.Array, lengths: np.ndarray, width: int) -> np.ndarray:
    """uint64[n, width / 8]: each string's bytes, NUL-padded to ``width`` bytes."""
    n = len(arr)
    padded = pc.utf8_rpad(arr, width=width, padding="\x00")
    offsets = np.frombuffer(padded.buffers()[1], dtype=np.int32, count=padded.offset + n + 1)[padded.offset:]
    if int(offsets[-1] - offsets[0]) == n * width:  # all ASCII: the padded buffer is the matrix
        data = np.frombuffer(padded.buffers()[2], dtype=np.uint8, count=int(offsets[-1]))[int(offsets[0]):]
        return data.view(_U64).reshape(n, width // 8)
    # non-ASCII (utf8_rpad pads to code points, not bytes): scatter the bytes into the matrix
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=arr.offset + n + 1)[arr.offset:].astype(np.int64)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
    starts = offsets[:-1] - offsets[0]
    row = np.repeat(np.arange(n, dtype=np.int64), lengths)
    pos = np.arange(len(data), dtype=np.int64) - np.repeat(starts, lengths)
    mat = np.zeros((n, width), np.uint8)
    mat[row, pos] = data
    return mat.view(_U64)
