"""The pool folder in the Hugging Face layout: shard and done-marker names, resuming a run, the
pool-level facts the done markers record, the dataset card, and reading a pool back as one table.

    OUT/README.md                                   dataset card with a ``configs`` block
    OUT/data/<split>-<i:05d>-of-<K:05d>.parquet     shard i of K, one file per split
    OUT/data/.done-<i:05d>-of-<K:05d>.json          written last: shard i is complete
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tensorqa.errors import TensorQAError
from tensorqa.writers.schema import NULLABLE_COLUMNS, RECORD_SCHEMA, SPLITS

RECORD_COLUMNS = frozenset(RECORD_SCHEMA.names)  # a split pool's added columns may hold nulls

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


SHARD_FILE = re.compile(r"-(\d{5})-of-(\d{5})\.(?:parquet|json)$")


def resume_shard(out: str | os.PathLike, index: int, count: int, params: dict) -> bool:
    """Whether shard ``index`` of ``count`` is already complete in ``out`` (a restart skips it).

    Refuses (TensorQAError) a folder that holds another run's records, which a restart would
    otherwise mix with this run's or keep in place of them: shard files of another shard count,
    or done markers that record other ``params`` (the values that decide the records: store,
    seed, templates, ...; markers of older versions record fewer, and only those are compared)."""
    out = Path(out)
    for folder in (out / "data", out / "agqa"):
        for path in sorted(folder.glob("*-of-*")) if folder.is_dir() else ():
            m = SHARD_FILE.search(path.name)
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
                    what = f"with {key} {brief(recorded[key])} (this run: {brief(value)})"
                raise TensorQAError(f"{out}: holds shards generated {what}: write to another --out, "
                                    "or remove the old pool")
    return done_marker(out, index, count).exists()


def brief(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value[:3])) + (f", ... {len(value)} in all]" if len(value) > 3 else "]")
    return repr(value)


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
    files = list(Path(out, "data").glob("*.parquet"))
    for f in files:  # a shard of another split (validation-*) is not this pool's
        if f.name.split("-")[0] not in SPLITS:
            raise TensorQAError(f"{f}: unknown split {f.name.split('-')[0]!r}; expected one of {list(SPLITS)}")
    files.sort(key=lambda p: (SPLITS.index(p.name.split("-")[0]), p.name))
    if not files:
        raise TensorQAError(f"{out}: no Parquet shards under data/")
    tables = []
    for f in files:
        try:
            table = pq.read_table(f, columns=columns)
        except (OSError, pa.ArrowException) as e:
            what = "the columns " + ", ".join(columns) if columns else "it"
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]  # pyarrow appends the whole schema
            missing = [c for c in columns or () if c not in file_columns(f)]
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
        nulls = [c for c in table.column_names
                 if c in RECORD_COLUMNS and c not in NULLABLE_COLUMNS and table.column(c).null_count]
        if nulls:  # readers compute on every value (a log of a null answer's share, ...)
            raise TensorQAError(f"{f}: column {nulls[0]!r} holds {table.column(nulls[0]).null_count} null value(s); "
                                "only sg_grounding may be null")
        if tables and table.schema != tables[0].schema:  # nullability or metadata only: the first file's
            table = table.cast(tables[0].schema)
        tables.append(table)
    return pa.concat_tables(tables)


def file_columns(path: Path) -> list[str]:
    try:
        return pq.ParquetFile(path).schema_arrow.names
    except (OSError, pa.ArrowException):
        return []
