"""The pool folder in the Hugging Face layout (:mod:`tensorqa.writers`): shard and done-marker names,
resuming a run, the pool-level facts the markers record, the dataset card, reading a pool back.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tensorqa.errors import TensorQAError
from tensorqa.outputs import write_atomic
from tensorqa.writers.schema import NULLABLE_COLUMNS, RECORD_SCHEMA, SPLITS

RECORD_COLUMNS = frozenset(RECORD_SCHEMA.names)  # a split pool's added columns may hold nulls

def shard_name(split: str, index: int, count: int) -> str:
    return f"{split}-{index:05d}-of-{count:05d}.parquet"


def done_marker(out: Path, index: int, count: int) -> Path:
    return Path(out) / "data" / f".done-{index:05d}-of-{count:05d}.json"


def write_done_marker(path: Path, stats: dict) -> None:
    """The marker, whole or not at all (written aside and renamed): other shards read it when they start."""
    write_atomic(path, json.dumps(stats, sort_keys=True))


def shard_complete(out: str | os.PathLike, index: int, count: int) -> bool:
    return done_marker(Path(out), index, count).exists()


SHARD_FILE = re.compile(r"-(\d{5})-of-(\d{5})\.(?:parquet|json)$")


def resume_shard(out: str | os.PathLike, index: int, count: int, params: dict) -> bool:
    """Whether shard ``index`` of ``count`` is complete in ``out`` (a restart skips it). A folder of
    another run (another shard count, or markers with other ``params``: store, seed, templates, ...;
    older markers record fewer, only those are compared) is refused rather than mixed with this one."""
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
    """``OUT/README.md`` with the ``configs`` block Hugging Face ``datasets`` reads; only splits with rows
    are declared (``load_dataset`` refuses a declared split without data)."""
    card = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split in splits_with_rows(out) or SPLITS:
        card += [f"  - split: {split}", f"    path: data/{split}-*"]
    card += ["---", "", f"# {title}", "", body.strip(), ""]
    path = Path(out) / "README.md"
    write_atomic(path, "\n".join(card))
    return path


# the order splits are declared in: CLEVR's train / val / test and AGQA's train / test, others after
_SPLIT_ORDER = ("train", "val", "validation", "test")


def splits_with_rows(out: str | os.PathLike) -> list[str]:
    """The splits whose Parquet shards ``OUT/data/<split>-<i>-of-<K>.parquet`` hold at least one row
    (row counts from the files' footers: nothing is read but metadata), train, val, test first."""
    found = set()
    for f in sorted(Path(out, "data").glob("*.parquet")):
        m = re.fullmatch(r"(\w+)-\d{5}-of-\d{5}\.parquet", f.name)
        if not m or m.group(1) in found:
            continue
        try:
            rows = pq.ParquetFile(f).metadata.num_rows
        except (OSError, pa.ArrowException):
            rows = 1  # unreadable here: declared, and the reader names the file
        if rows:
            found.add(m.group(1))
    return sorted(found, key=lambda s: (_SPLIT_ORDER.index(s) if s in _SPLIT_ORDER else len(_SPLIT_ORDER), s))


def _read_error(f: Path, columns: list[str] | None, e: Exception) -> TensorQAError:
    """The one line for a shard that cannot give ``columns``: the column it lacks, or pyarrow's reason."""
    what = "the columns " + ", ".join(columns) if columns else "it"
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]  # pyarrow appends the whole schema
    missing = [c for c in columns or () if c not in file_columns(f)]
    if missing:
        return TensorQAError(f"{f}: no column {missing[0]!r} (a pool shard has the columns of "
                             "tensorqa.writers.RECORD_SCHEMA)")
    return TensorQAError(f"{f}: cannot read {what} as Parquet ({first})")


def iter_pool(out: str | os.PathLike, columns: list[str], dictionary: tuple[str, ...] = (),
              batch_rows: int = 1 << 20):
    """Record batches of ``columns`` over a pool's shards in :func:`read_pool`'s order, at most
    ``batch_rows`` rows each, so that memory holds a batch and not the pool; the ``dictionary``
    columns come as dictionary arrays (a low-cardinality string column costs its codes)."""
    files = record_shards(out)
    first = None
    for f in files:
        try:
            pf = pq.ParquetFile(f, read_dictionary=list(dictionary) or None)
            types = {c: pf.schema_arrow.field(c).type for c in columns if c in pf.schema_arrow.names}
            for c, t in types.items():  # as read_pool refuses them: shards that are not one pool
                if first is not None and first[c] != t:
                    raise TensorQAError(f"{f}: column {c!r} is {t}, but {files[0].name} has it as {first[c]}: "
                                        "the shards are not one pool")
            first = first or types
            for batch in pf.iter_batches(batch_size=batch_rows, columns=columns, use_threads=False):
                check_nulls(f, batch)
                yield batch
        except (OSError, pa.ArrowException, KeyError) as e:
            raise _read_error(f, columns, e) from None


def record_shards(out: str | os.PathLike) -> list[Path]:
    """A complete record pool's shard files, train then test (:func:`pool_shards`); a shard of another
    split (validation-*) is not this pool's."""
    shards = pool_shards(out)
    for split, fs in shards.items():
        if split not in SPLITS:
            raise TensorQAError(f"{fs[0]}: unknown split {split!r}; expected one of {list(SPLITS)}")
    return [f for fs in shards.values() for f in fs]


def check_nulls(f: Path, table: pa.Table | pa.RecordBatch) -> None:
    """Readers compute on every value (a log of a null answer's share, ...): only sg_grounding (and the
    columns a split pool adds) may hold nulls."""
    names = table.schema.names
    nulls = [c for c in names if c in RECORD_COLUMNS and c not in NULLABLE_COLUMNS
             and table.column(names.index(c)).null_count]
    if nulls:
        raise TensorQAError(f"{f}: column {nulls[0]!r} holds {table.column(names.index(nulls[0])).null_count} null "
                            "value(s); only sg_grounding may be null")


POOL_SHARD = re.compile(r"^(?P<split>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.parquet$")


def pool_shards(pool: str | os.PathLike) -> dict[str, list[Path]]:
    """{split: shard files in index order} of a pool (AGQA's or CLEVR's), refused unless complete: a
    killed run leaves shards without files or markers, and reading on would drop questions silently.
    Every file must be a shard of one count K, and each of the K shards have its done marker (or,
    without markers: CLEVR's Parquet, at least one file); a split may lack a shard's file."""
    data = Path(pool, "data")
    if not data.is_dir():
        raise TensorQAError(f"{pool}: not a pool (no data/ folder with Parquet shards)")
    found: dict[str, dict[int, Path]] = {}
    counts: set[int] = set()
    for path in sorted(data.glob("*.parquet")):
        m = POOL_SHARD.match(path.name)
        if m is None:
            raise TensorQAError(f"{path}: not a shard name like train-00000-of-00004.parquet")
        found.setdefault(m["split"], {})[int(m["index"])] = path
        counts.add(int(m["count"]))
    if not found:
        raise TensorQAError(f"{pool}: no Parquet shards under data/")
    if len(counts) != 1:
        raise TensorQAError(f"{data}: the shards disagree on the shard count {sorted(counts)}: not one pool")
    (count,) = counts
    markers = list(data.glob(".done-*-of-*.json"))
    if markers:
        missing = [i for i in range(count) if not done_marker(Path(pool), i, count).is_file()]
        if missing:
            raise TensorQAError(f"{pool}: incomplete pool: shard {missing[0]:05d} of {count:05d} has no done marker "
                                f"({done_marker(Path(pool), missing[0], count).name}); its run did not finish: rerun "
                                "it, or write the pool again")
    else:
        present = set().union(*(set(s) for s in found.values()))
        missing = [i for i in range(count) if i not in present]
        if missing:
            raise TensorQAError(f"{pool}: incomplete pool: shard {missing[0]:05d} of {count:05d} has no files; its "
                                "run did not finish: rerun it, or write the pool again")
    order = sorted(found, key=lambda s: (SPLITS.index(s) if s in SPLITS else len(SPLITS), s))
    return {split: [found[split][i] for i in sorted(found[split])] for split in order}


def read_pool(out: str | os.PathLike, columns: list[str] | None = None) -> pa.Table:
    """All shards of a pool written in the Hugging Face layout, as one table (train then test);
    an incomplete pool is refused (:func:`pool_shards`), and so is a shard of another split."""
    files = record_shards(out)
    tables = []
    for f in files:
        try:
            table = pq.read_table(f, columns=columns)
        except (OSError, pa.ArrowException) as e:
            raise _read_error(f, columns, e) from None
        if tables and [(f.name, f.type) for f in table.schema] != [(f.name, f.type) for f in tables[0].schema]:
            for field in table.schema:
                want = tables[0].schema.field(field.name).type if field.name in tables[0].schema.names else None
                if want is not None and field.type != want:
                    raise TensorQAError(f"{f}: column {field.name!r} is {field.type}, but {files[0].name} has it as "
                                        f"{want}: the shards are not one pool")
            if set(table.schema.names) != set(tables[0].schema.names):
                raise TensorQAError(f"{f}: its columns differ from {files[0].name}'s: the shards are not one pool")
            table = table.select(tables[0].schema.names)
        check_nulls(f, table)
        if tables and table.schema != tables[0].schema:  # nullability or metadata only: the first file's
            table = table.cast(tables[0].schema)
        tables.append(table)
    return pa.concat_tables(tables)


def file_columns(path: Path) -> list[str]:
    try:
        return pq.ParquetFile(path).schema_arrow.names
    except (OSError, pa.ArrowException):
        return []
