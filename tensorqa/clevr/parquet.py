"""CLEVR's Parquet shard, the one writer of both backends: the Hugging Face layout of the AGQA pools
(``<folder>/data/<split>-<shard>-of-<count>.parquet``), CLEVR's question fields with answers as
strings as in released CLEVR v1.0 ("yes", "3") and programs as JSON strings (``PARQUET_COLUMNS``).
Written block by block as the blocks are generated: one writer per split on a ``.partial`` file,
renamed into place when the shard is complete (removed if it fails), rows in row groups of exactly
``row_group`` rows whatever the block size (the files' bytes depend neither on ``--batch-scenes``
nor on the backend), so memory holds at most a row group per split, not the shard.

Strings come as (bytes, offsets) (the numba writer's; :func:`string_buffers` of the torch
backend's columns) and go to Arrow without a Python string per question.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tensorqa.errors import TensorQAError
from tensorqa.outputs import file_name, new_partial, output_folder, output_path, publish, write_error
from tensorqa.writers.parquet import fixed_chunks

PARQUET_COLUMNS = ("question_index", "split", "image_filename", "image_index", "image", "question", "answer",
                   "program", "template_filename", "question_family_index")
ROW_GROUP = 1 << 18  # rows per row group (~180 MB of columns at CLEVR's ~700 bytes a question)
# dictionary pages only for the columns whose values repeat (programs and texts rarely do)
DICTIONARY = ["split", "image_filename", "image", "answer", "template_filename"]


def arrow_strings(data: np.ndarray, off: np.ndarray) -> pa.Array:
    """(bytes, offsets int64[n + 1]) as an Arrow string array, without copying the bytes."""
    n = len(off) - 1
    if off[-1] >= 2**31:
        raise ValueError("a block's strings exceed 2 GiB: use smaller --batch-scenes")
    return pa.StringArray.from_buffers(n, pa.py_buffer(off.astype(np.int32)), pa.py_buffer(data))


def string_buffers(values: list) -> tuple[np.ndarray, np.ndarray]:
    """Python strings as (UTF-8 bytes, offsets int64[n + 1])."""
    a = pa.array(values, pa.large_string())
    data = a.buffers()[2]
    return (np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8),
            np.frombuffer(a.buffers()[1], np.int64)[:len(a) + 1])


def write_columns(folder, columns: dict, templates: list, shard: int = 0, num_shards: int = 1) -> list[Path]:
    """The torch backend's columns (``columns.COLUMNS``) as the Parquet shard the numba backend
    writes, byte for byte (``question_index`` their position)."""
    from tensorqa.clevr.records import answer_text

    index = {(t.filename, t.index): i for i, t in enumerate(templates)}
    cols = {c: v.tolist() for c, v in columns.items()}
    n = len(cols["question"])
    # the scenes' strings as the store holds them (compiled_driver.stored_bytes, which imports this module)
    scenes = SceneColumns(np.array([s.encode() for s in cols["split"]] or [b""], "S")[:n],
                          np.array([s.encode() for s in cols["image_filename"]] or [b""], "S")[:n],
                          columns["image_index"])
    w = ParquetShard(folder, templates, shard, num_shards)
    try:
        for a in range(0, n, w.row_group):  # blocks of a row group: each block's strings under 2 GiB
            z = min(a + w.row_group, n)
            answers = [answer_text(v) for v in cols["answer"][a:z]]
            keys = zip(cols["template_filename"][a:z], cols["question_family_index"][a:z])
            programs = [p if isinstance(p, str) else orjson.dumps(p).decode() for p in cols["program"][a:z]]
            w.write({"question": string_buffers(cols["question"][a:z]), "answer": string_buffers(answers),
                     "program": string_buffers(programs),
                     "template": np.array([index[k] for k in keys], np.int64)}, scenes, np.arange(a, z))
        return w.close()
    except BaseException as e:
        w.abort()
        if isinstance(e, OSError):  # a full disk: one line naming the file
            raise write_error(w.current, e) from None
        raise


class SceneColumns:
    """Per scene: its split (the store's bytes), image file name and stem (Arrow strings) and image
    index, for the rows that refer to these scenes by position."""

    def __init__(self, split: np.ndarray, image_filename: np.ndarray, image_index: np.ndarray):
        self.split = split
        names = pa.array(image_filename, pa.binary()).cast(pa.string())  # (UTF-8 checked)
        self.names = names
        self.images = pc.replace_substring_regex(names, pattern=r"\.[^.]*$", replacement="", max_replacements=1)
        self.splits = pa.array(split, pa.binary()).cast(pa.string())
        self.image_index = np.asarray(image_index, np.int64)
        # byte order = str order (UTF-8): each scene's split as a code into ``distinct``
        distinct, code = np.unique(split, return_inverse=True)
        self.distinct = [v.decode() for v in distinct]
        self.code = code.reshape(-1)


class ParquetShard:
    """Blocks of questions -> ``<folder>/data/<split>-<shard>-of-<count>.parquet``: :meth:`write`
    per block, :meth:`close` publishes the files, :meth:`abort` removes them."""

    def __init__(self, folder, templates: list, shard: int = 0, num_shards: int = 1, row_group: int | None = None):
        self.data = output_folder(Path(folder) / "data", Path(folder))  # a planted link there is refused
        self.shard, self.num_shards, self.row_group = shard, num_shards, row_group or ROW_GROUP
        self.template_filename = pa.array([t.filename for t in templates], pa.string())
        self.family = np.array([t.index for t in templates], np.int64)
        self.rows = 0  # questions written (the next question_index)
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._pending: dict[str, list[pa.Table]] = {}
        self._pending_rows: dict[str, int] = {}
        self.current = self.data  # the file being written, for a write error's message

    def path(self, split: str) -> Path:
        """The split's file; a split comes from the scenes, so it must be a plain file name and the
        file must lie inside ``data/``."""
        return output_path(self.data, f"{file_name(split, self.data, 'split')}-{self.shard:05d}-of-"
                                      f"{self.num_shards:05d}.parquet")

    def write(self, block: dict, scenes: SceneColumns, scene: np.ndarray) -> None:
        """One block's questions: ``block`` as ``compiled_driver.stream_parquet`` or :func:`write_columns` gives it
        (question, program, answer as (bytes, offsets); template), ``scene`` each question's scene
        as a position in ``scenes``."""
        n = len(scene)
        if not n:
            return
        at = pa.array(scene)
        tmpl = block["template"]
        table = pa.table({
            "question_index": pa.array(np.arange(self.rows, self.rows + n, dtype=np.int64)),
            "split": scenes.splits.take(at),
            "image_filename": scenes.names.take(at),
            "image_index": pa.array(scenes.image_index[scene]),
            "image": scenes.images.take(at),
            "question": arrow_strings(*block["question"]),
            "answer": arrow_strings(*block["answer"]),
            "program": arrow_strings(*block["program"]),
            "template_filename": self.template_filename.take(pa.array(tmpl)),
            "question_family_index": pa.array(self.family[tmpl]),
        })
        assert tuple(table.column_names) == PARQUET_COLUMNS
        self.rows += n
        code = scenes.code[scene]
        for c, name in enumerate(scenes.distinct):
            rows = np.flatnonzero(code == c)
            if len(rows):
                self._add(name, table if len(rows) == n else table.take(pa.array(rows)))

    def _add(self, split: str, part: pa.Table) -> None:
        self._pending.setdefault(split, []).append(part)
        self._pending_rows[split] = self._pending_rows.get(split, 0) + part.num_rows
        if self._pending_rows[split] >= self.row_group:
            self._flush(split, final=False)

    def _flush(self, split: str, final: bool) -> None:
        """Whole row groups of the split's pending rows (and the rest if ``final``), each handed to
        the writer in fixed chunks (``writers.parquet.fixed_chunks``: pages cut by row position)."""
        pending = pa.concat_tables(self._pending[split])
        self.current = self.path(split)
        if split not in self._writers:
            self._writers[split] = pq.ParquetWriter(new_partial(self.path(split)), pending.schema,
                                                    use_dictionary=DICTIONARY)
        n = self.row_group
        end = pending.num_rows if final else pending.num_rows // n * n
        for a in range(0, end, n):
            part = pending.slice(a, min(n, end - a))
            self._writers[split].write_table(fixed_chunks(part), row_group_size=n)
        rest = pending.slice(end)
        self._pending[split] = [rest] if rest.num_rows else []
        self._pending_rows[split] = rest.num_rows

    def _partial(self, split: str) -> Path:
        p = self.path(split)
        return p.with_name(p.name + ".partial")

    def close(self) -> list[Path]:
        """Write the rest, close the files and rename them into place; returns their paths."""
        for split in list(self._pending):
            if self._pending_rows[split] or split not in self._writers:
                self._flush(split, final=True)
        for split, w in sorted(self._writers.items()):
            self.current = self.path(split)
            w.close()
        out = []
        for split in sorted(self._writers):  # renamed once all are complete
            out.append(publish(self._partial(split), self.path(split)))
        self._writers.clear()
        return out

    def abort(self) -> None:
        """Close and remove the partial files (a failed run leaves no file of this shard)."""
        for w in self._writers.values():
            with contextlib.suppress(Exception):
                w.close()
        for split in list(self._writers) + list(self._pending):
            with contextlib.suppress(TensorQAError):  # a split that names no file made none
                self._partial(split).unlink(missing_ok=True)
        self._writers.clear()
