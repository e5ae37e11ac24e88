"""Writers for question records: Parquet shards in the Hugging Face layout, and AGQA's JSON dict.

Hugging Face layout::

    OUT/README.md                                   dataset card with a ``configs`` block
    OUT/data/<split>-<i:05d>-of-<K:05d>.parquet     shard i of K, one file per split
    OUT/data/.done-<i:05d>-of-<K:05d>.json          written last: shard i is complete

A shard is written to ``*.partial`` files renamed at the end, then its ``.done`` marker, which
records what decided the records (store, seed, templates, ...). On restart a shard whose marker
exists is complete and is skipped, a half-written one is redone, and a folder that holds another
run's shards (other parameters, another shard count) is refused (:func:`resume_shard`).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tensorqa.errors import TensorQAError

# One row per question. AGQA's released fields (reference §2.3) plus the ingredients that balancing
# and the splits need, so that those passes never re-parse programs or question text. Every column
# but sg_grounding is never null ("" marks an unused slot) and is declared so: Parquet then stores
# no definition levels for it (writing is ~10 % faster) and readers see non-nullable fields.
_FIELDS = [
    ("question_id", pa.string()),      # "<video>-<n>", n = rank of the question within its video
    ("video_id", pa.string()),
    ("split", pa.string()),            # train / test (the store's video split)
    ("template", pa.string()),         # AGQA template name (Table 14 spelling)
    ("frame", pa.int8()),              # question frame variant (index into the template's frames)
    ("question", pa.string()),
    ("answer", pa.string()),           # lowercase, as AGQA 2.0 releases it
    ("global", pa.list_(pa.field("element", pa.string()))),  # Parquet's name for list items
    ("local", pa.string()),            # released balancing key, e.g. "yes-no-o4-while-c076"
    ("ans_type", pa.string()),         # open / binary
    ("steps", pa.int8()),
    ("semantic", pa.string()),
    ("structural", pa.string()),
    ("program", pa.string()),          # AGQA syntax, parseable by tensorqa.parse_program
    # -- ingredients (AGQA ids: oN, rN / vNNN, cNNN; "" when the slot is unused) -----------------
    ("window", pa.string()),           # time kind: video / before / after / while / between
    ("window_action", pa.string()),    # X of the localization ("" for the whole video)
    ("window_action2", pa.string()),   # Y of between
    ("window_action_ref", pa.string()),  # "" direct, or first / last / whole: X as an indirect-object action
    ("window_action2_ref", pa.string()),  # the same for Y
    ("relation", pa.string()),
    ("object", pa.string()),           # the object the slot denotes (a reference's referent)
    ("object_ref", pa.string()),       # "" direct, or first / last / whole reference ...
    ("object_ref_relation", pa.string()),  # ... through this relation
    ("object2", pa.string()),
    ("object2_ref", pa.string()),
    ("object2_ref_relation", pa.string()),
    ("action", pa.string()),
    ("action_ref", pa.string()),       # "" direct, or the object reference kind of an indirect-object action
    ("action2", pa.string()),
    ("action2_ref", pa.string()),      # the same for action2
    ("direct_group", pa.string()),     # video|template|reference-free arguments: AGQA's direct-equivalent group
    ("is_direct", pa.int8()),          # no reference and no localization: the group's direct question
    ("indirect", pa.int8()),
    ("i_obj", pa.int8()),
    ("i_rel", pa.int8()),
    ("i_act", pa.int8()),
    ("i_temp", pa.int8()),
    ("sg_grounding", pa.string()),     # JSON {"start-end": [vertex ids]}, or null when not computed
]
NULLABLE_COLUMNS = frozenset({"sg_grounding"})
RECORD_SCHEMA = pa.schema([pa.field(name, kind, nullable=name in NULLABLE_COLUMNS) for name, kind in _FIELDS])

SPLITS = ("train", "test")


def shard_name(split: str, index: int, count: int) -> str:
    return f"{split}-{index:05d}-of-{count:05d}.parquet"


def done_marker(out: Path, index: int, count: int) -> Path:
    return Path(out) / "data" / f".done-{index:05d}-of-{count:05d}.json"


def write_done_marker(path: Path, stats: dict) -> None:
    """The marker, whole or not at all (written aside and renamed): other shards read it when they start."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(stats, sort_keys=True))
    os.replace(partial, path)


def shard_complete(out: str | os.PathLike, index: int, count: int) -> bool:
    return done_marker(Path(out), index, count).exists()


_SHARD_FILE = re.compile(r"-(\d{5})-of-(\d{5})\.(?:parquet|json)$")


def resume_shard(out: str | os.PathLike, index: int, count: int, params: dict) -> bool:
    """Whether shard ``index`` of ``count`` is already complete in ``out`` (a restart skips it).

    Refuses (TensorQAError) a folder that holds another run's records, which a restart would
    otherwise mix with this run's or keep in place of them: shard files of another shard count,
    or done markers that record other ``params`` (the values that decide the records: store,
    seed, templates, ...; markers of older versions record fewer, and only those are compared)."""
    out = Path(out)
    for folder in (out / "data", out / "agqa"):
        for path in sorted(folder.glob("*-of-*")) if folder.is_dir() else ():
            m = _SHARD_FILE.search(path.name)
            if m and int(m.group(2)) != count:
                raise TensorQAError(f"{out}: holds {path.name}, a shard of a {int(m.group(2))}-shard run, and this run "
                                    f"writes {count} shard(s): write to another --out, or remove the old files")
    for marker in sorted((out / "data").glob(f".done-*-of-{count:05d}.json")):
        try:
            recorded = json.loads(marker.read_text())
        except (OSError, ValueError) as e:
            raise TensorQAError(f"{marker}: unreadable done marker ({e}); remove it to redo its shard") from None
        for key, value in params.items():
            if key in recorded and recorded[key] != value:
                if key == "store_id":
                    what = "from another scene store"
                elif key == "pool_videos":
                    what = f"for {recorded[key]:,} videos (this run: {value:,})"
                else:
                    what = f"with {key} {_brief(recorded[key])} (this run: {_brief(value)})"
                raise TensorQAError(f"{out}: holds shards generated {what}: write to another --out, "
                                    "or remove the old pool")
    return done_marker(out, index, count).exists()


def _brief(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value[:3])) + (f", ... {len(value)} in all]" if len(value) > 3 else "]")
    return repr(value)


# Long, mostly distinct text columns are written plain (dictionary encoding them falls back
# anyway); the rest are small vocabularies that dictionary-encode well.
TEXT_COLUMNS = frozenset(("question_id", "question", "program", "local", "direct_group", "sg_grounding"))
# Columns whose values come from a fixed vocabulary (catalogue names, AGQA ids, answers). Writers take
# them as dictionary arrays over the whole vocabulary (``records.render`` builds them so), which
# Parquet writes as dictionary pages without hashing every value; on disk and when read back they
# are plain strings. Tables that hold them as strings (balancing's) are written as strings.
VOCABULARY_COLUMNS = frozenset(("template", "answer", "ans_type", "semantic", "structural", "window", "window_action",
                                "window_action2", "window_action_ref", "window_action2_ref", "relation", "object",
                                "object_ref", "object_ref_relation", "object2", "object2_ref", "object2_ref_relation",
                                "action", "action_ref", "action2", "action2_ref"))
# Small integer columns that Parquet writes faster plain (zstd then squeezes their runs) than
# dictionary-encoded: the seven take 18-26 ms per 1M rows instead of 39-62 ms, for 15 KB more
# (benchmarks/RESULTS.md, session 6). ``frame`` (up to 64 values) stays dictionary-encoded.
PLAIN_COLUMNS = frozenset(("steps", "is_direct", "indirect", "i_obj", "i_rel", "i_act", "i_temp"))
# Page statistics (min / max, for readers' row-group pruning) only where a reader filters: they
# cost as much as the encoding itself on the small columns.
STATISTICS_COLUMNS = ["video_id", "split", "template"]


def pool_fact(pool: str | os.PathLike, key: str):
    """A pool-level fact (``store``, ``seed``, ``semantics``, ...) as its shards' done markers
    record it (``tensorqa generate`` writes them; ``balance`` and ``split`` pass on their input's),
    or None."""
    for marker in sorted(Path(pool, "data").glob(".done-*.json")):
        try:
            value = json.loads(marker.read_text()).get(key)
        except (OSError, ValueError):
            continue
        if value is not None and value != "":
            return value
    return None


def pool_store(pool: str | os.PathLike) -> str | None:
    """The scene store a pool was generated from (:func:`pool_fact`), or None."""
    return pool_fact(pool, "store")


def cast_records(table: pa.Table, schema: pa.Schema, where: str | os.PathLike) -> pa.Table:
    """``table.cast(schema)``, with a null in a non-nullable column reported as a
    :class:`TensorQAError` naming ``where`` (the shard being written) and the column."""
    try:
        return table.cast(schema)
    except (ValueError, pa.ArrowInvalid):
        bad = [f.name for f in schema if not f.nullable and f.name in table.column_names
               and table.column(f.name).null_count]
        if not bad:
            raise
        raise TensorQAError(f"{where}: column {bad[0]!r} holds {table.column(bad[0]).null_count} null value(s); "
                            "only sg_grounding may be null (\"\" marks an unused slot)") from None


def coded_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its :data:`VOCABULARY_COLUMNS` as dictionary<int32, string> (what writers take)."""
    return pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), pa.string()), nullable=f.nullable)
                      if f.name in VOCABULARY_COLUMNS and f.type == pa.string() else f for f in schema])


# values the Parquet writer encodes per batch (pyarrow's default is 1,024): 7-10 % less writing
# time on a rendered block of 1M records (benchmarks/RESULTS.md, session 5), the same records
WRITE_BATCH_ROWS = 8192


def parquet_writer(path: str | os.PathLike, schema: pa.Schema, **options) -> pq.ParquetWriter:
    """The Parquet writer of every tensorqa table (a record schema, or its :func:`coded_schema`).

    No Arrow schema is stored in the file, so any reader (and pyarrow) sees the plain Parquet
    types, which :data:`RECORD_SCHEMA` spells: strings, int8, list<element: string>."""
    options.setdefault("write_batch_size", WRITE_BATCH_ROWS)
    return pq.ParquetWriter(path, schema, compression="zstd", store_schema=False,
                            use_dictionary=[c for c in schema.names if c not in TEXT_COLUMNS | PLAIN_COLUMNS] or False,
                            write_statistics=[c for c in STATISTICS_COLUMNS if c in schema.names] or False, **options)


def _rows_where(table: pa.Table, mask: pa.Array) -> pa.Table:
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
    """``table`` (one row group) with every column in chunks of ``rows`` rows, the last shorter.

    The Parquet writer cuts pages within each chunk it is handed, so chunk boundaries must depend
    on row positions alone, not on where the caller's blocks ended, for a shard's bytes not to
    depend on the batch size. A chunk inside one block is a zero-copy slice; only the chunks that
    straddle two blocks are copied (combining the whole row group copied every row)."""
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
        """``schema``: the shard's columns (``balance`` and ``split`` write RECORD_SCHEMA plus their
        own fields); None: RECORD_SCHEMA, dictionary-coded when the first table is (generate's
        vocabulary columns)."""
        if not 0 <= index < count:
            raise TensorQAError(f"shard index {index} is not in 0..{count - 1}")
        self.out, self.index, self.count = Path(out), index, count
        self.data = self.out / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.row_group_size = row_group_size
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._pending: dict[str, list[pa.Table]] = {s: [] for s in SPLITS}
        self._pending_rows = {s: 0 for s in SPLITS}
        self.rows = {s: 0 for s in SPLITS}
        self.schema: pa.Schema | None = schema  # None until the first write when not given

    def _partial(self, split: str) -> Path:
        return self.data / (shard_name(split, self.index, self.count) + ".partial")

    def write(self, table: pa.Table) -> None:
        """Write a block of records (RECORD_SCHEMA); rows go to the file of their ``split``.

        Rows are buffered and written in row groups of exactly ``row_group_size`` rows, so the
        bytes of a shard do not depend on how the caller cut its blocks (batch size)."""
        import pyarrow.compute as pc

        table = table.select(RECORD_SCHEMA.names)
        if self.schema is None:
            coded = any(pa.types.is_dictionary(f.type) for f in table.schema)
            self.schema = coded_schema(RECORD_SCHEMA) if coded else RECORD_SCHEMA
        if table.schema != self.schema:
            table = cast_records(table, self.schema, self.data)
        for split in SPLITS:
            part = _rows_where(table, pc.equal(table["split"], split))
            if part.num_rows == 0:
                continue
            self._pending[split].append(part)
            self._pending_rows[split] += part.num_rows
            self.rows[split] += part.num_rows
            if self._pending_rows[split] >= self.row_group_size:
                self._flush(split, final=False)

    def write_split(self, split: str, table: pa.Table) -> None:
        """Write a table known to hold rows of ``split`` only, as it comes (no filtering: a filter
        copies every string column; no re-chunking: the caller sizes its row groups)."""
        schema = self.schema or RECORD_SCHEMA
        table = cast_records(table.select(schema.names), schema, self.data)
        if split not in self._writers:
            self._writers[split] = parquet_writer(self._partial(split), schema)
        self._writers[split].write_table(table, row_group_size=self.row_group_size)
        self.rows[split] += table.num_rows

    def _flush(self, split: str, final: bool) -> None:
        schema = self.schema or RECORD_SCHEMA
        self._current = self.data / shard_name(split, self.index, self.count)
        if split not in self._writers:
            self._writers[split] = parquet_writer(self._partial(split), schema)
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
        for split in SPLITS:  # every shard has one file per split, even if empty
            self._flush(split, final=True)
            self._writers[split].close()
            os.replace(self._partial(split), self.data / shard_name(split, self.index, self.count))
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
        return _write_error(e, getattr(self, "_current", None) or self.data / shard_name("train", self.index, self.count))


def _write_error(e: OSError, path: Path) -> TensorQAError:
    if e.filename:
        path = Path(str(e.filename).removesuffix(".partial"))
    reason = e.strerror or (str(e).strip().splitlines() or [type(e).__name__])[0]
    if True:  # pyarrow: "Error writing bytes ... [errno 28] No space left on device" -> the reason only
        for code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EACCES, errno.EROFS):
            if os.strerror(code) in str(e):
                reason = os.strerror(code)
    return TensorQAError(f"{path}: cannot write ({reason}); this shard's partial files were removed")


def write_dataset_card(out: str | os.PathLike, title: str, body: str = "") -> Path:
    """``OUT/README.md`` with the ``configs`` block that Hugging Face ``datasets`` reads.

    Only the splits that have rows are declared (:func:`splits_with_rows`): ``datasets.load_dataset``
    refuses a declared split whose files hold no rows ("corresponds to no data"), and a small store
    or a range of train videos gives an empty test split. The empty split's shard files stay (every
    shard has one file per split), undeclared."""
    card = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split in splits_with_rows(out) or SPLITS:
        card += [f"  - split: {split}", f"    path: data/{split}-*"]
    card += ["---", "", f"# {title}", "", body.strip(), ""]
    path = Path(out) / "README.md"
    path.write_text("\n".join(card))
    return path


def splits_with_rows(out: str | os.PathLike) -> list[str]:
    """The splits whose Parquet shards in ``OUT/data`` hold at least one row (row counts from the
    files' footers: nothing is read but metadata)."""
    found = []
    for split in SPLITS:
        for f in sorted(Path(out, "data").glob(f"{split}-*.parquet")):
            try:
                rows = pq.ParquetFile(f).metadata.num_rows
            except (OSError, pa.ArrowException):
                rows = 1  # unreadable here: declared, and the reader names the file
            if rows:
                found.append(split)
                break
    return found


def read_pool(out: str | os.PathLike, columns: list[str] | None = None) -> pa.Table:
    """All shards of a pool written in the Hugging Face layout, as one table (train then test)."""
    files = sorted(Path(out, "data").glob("*.parquet"), key=lambda p: (SPLITS.index(p.name.split("-")[0]), p.name))
    if not files:
        raise TensorQAError(f"{out}: no Parquet shards under data/")
    tables = []
    for f in files:
        try:
            table = pq.read_table(f, columns=columns)
        except (OSError, pa.ArrowException) as e:
            what = "the columns " + ", ".join(columns) if columns else "it"
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]  # pyarrow appends the whole schema
            missing = [c for c in columns or () if c not in _file_columns(f)]
            if missing:
                raise TensorQAError(f"{f}: no column {missing[0]!r} (a pool shard has the columns of "
                                    "tensorqa.writers.RECORD_SCHEMA)") from None
            raise TensorQAError(f"{f}: cannot read {what} as Parquet ({first})") from None
        if tables and [(f.name, f.type) for f in table.schema] != [(f.name, f.type) for f in tables[0].schema]:
            for field in table.schema:
                want = tables[0].schema.field(field.name).type if field.name in tables[0].schema.names else None
                if want is not None and field.type != want:
                    raise TensorQAError(f"{f}: column {field.name!r} is {field.type}, but {files[0].name} has it as "
                                        f"{want}: the shards are not one pool")
            if set(table.schema.names) != set(tables[0].schema.names):
                raise TensorQAError(f"{f}: its columns differ from {files[0].name}'s: the shards are not one pool")
            table = table.select(tables[0].schema.names)
        if tables and table.schema != tables[0].schema:  # nullability or metadata only: the first file's
            table = table.cast(tables[0].schema)
        tables.append(table)
    return pa.concat_tables(tables)


def _file_columns(path: Path) -> list[str]:
    try:
        return pq.ParquetFile(path).schema_arrow.names
    except (OSError, pa.ArrowException):
        return []


def string_offsets(arr: pa.Array) -> np.ndarray:
    """int32[len + 1]: the value offsets of a string array into its data buffer (a view; a slice's
    own offsets, so they need not start at 0)."""
    return np.frombuffer(arr.buffers()[1], np.int32, count=len(arr) + 1, offset=4 * arr.offset)


def _feed(streams: dict, key: str, column: pa.ChunkedArray | pa.Array) -> None:
    """Append ``column``'s values to the hash streams of ``key``: validity (a byte per row), value
    lengths and value bytes for strings, lengths and the items' streams for lists, int64 values
    otherwise. Each stream is a row-order sequence, so how rows are cut into row groups, chunks or
    pages does not change it."""
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
        _feed(streams, key + "/item", arr.flatten())
    else:  # booleans, integers, floats
        filled = arr.fill_null(pa.scalar(0, pa.int64()).cast(arr.type)) if arr.null_count else arr
        values = filled.to_numpy(zero_copy_only=False)
        stream("data").update(values.astype(np.float64 if values.dtype.kind == "f" else np.int64).tobytes())


def content_digest(path: str | os.PathLike) -> str:
    """SHA-256 of the records of one Parquet shard (column names, then each column's values in
    row order): equal for equal records, whatever wrote the file and however it cut row groups.
    File bytes also carry the writer's version (``created_by``), so two machines with different
    pyarrow versions write different bytes for the same pool; this digest compares the pools."""
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
            _feed(streams, name, column)
    h = hashlib.sha256("\0".join(names).encode())
    for key in sorted(streams):
        h.update(key.encode() + b"\0" + streams[key].digest())
    return h.hexdigest()


class AgqaJsonShardWriter:
    """AGQA's JSON dict ``{question_id: record}`` (reference §2.3 fields), one file per split for
    shard ``index`` of ``count``: ``OUT/agqa/<split>-<i:05d>-of-<K:05d>.json``; the same
    ``write`` / ``close`` / ``abort`` protocol and ``.done`` marker as :class:`ParquetShardWriter`."""

    FIELDS = ("question", "answer", "video_id", "global", "local", "ans_type", "steps", "semantic",
              "structural", "program", "sg_grounding", "indirect", "i_obj", "i_rel", "i_act", "i_temp")

    def __init__(self, out: str | os.PathLike, index: int, count: int):
        self.out, self.index, self.count = Path(out), index, count
        (self.out / "agqa").mkdir(parents=True, exist_ok=True)
        self.paths = {s: self.out / "agqa" / f"{s}-{index:05d}-of-{count:05d}.json" for s in SPLITS}
        self.files = {s: open(self._partial(s), "w") for s in SPLITS}
        for f in self.files.values():
            f.write("{")
        self.rows = {s: 0 for s in SPLITS}

    def _partial(self, split: str) -> Path:
        return self.paths[split].with_name(self.paths[split].name + ".partial")

    def write(self, table: pa.Table) -> None:
        for row in table.select(["question_id", "split", *self.FIELDS]).to_pylist():
            split, qid = row.pop("split"), row.pop("question_id")
            row["sg_grounding"] = json.loads(row["sg_grounding"]) if row["sg_grounding"] else {}
            row["novel_comp"] = row["more_steps"] = 0  # set by ``tensorqa split``
            self.files[split].write(("," if self.rows[split] else "") + "\n" + json.dumps(qid) + ": " + json.dumps(row))
            self.rows[split] += 1

    def write_error(self, e: OSError) -> TensorQAError:
        return _write_error(e, self.paths["train"])

    def close(self, stats: dict | None = None) -> None:
        for split, f in self.files.items():
            f.write("\n}\n")
            f.close()
            os.replace(self._partial(split), self.paths[split])
        (self.out / "data").mkdir(exist_ok=True)
        write_done_marker(done_marker(self.out, self.index, self.count), {"rows": self.rows, **(stats or {})})

    def abort(self) -> None:
        for split, f in self.files.items():
            try:
                f.close()
            except OSError:  # a full disk fails the last flush: the file is removed anyway
                pass
            self._partial(split).unlink(missing_ok=True)
        marker = done_marker(self.out, self.index, self.count)
        marker.with_name(marker.name + ".partial").unlink(missing_ok=True)
