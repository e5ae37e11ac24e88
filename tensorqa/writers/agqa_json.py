"""AGQA's JSON dict of question records (``{question_id: record}``, reference §2.3 fields), one file
per split and shard, with the same protocol and done marker as the Parquet shards.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa

from tensorqa.errors import TensorQAError
from tensorqa.outputs import new_file, output_folder, publish
from tensorqa.writers.layout import done_marker, write_done_marker
from tensorqa.outputs import write_error
from tensorqa.writers.schema import SPLITS

class AgqaJsonShardWriter:
    """AGQA's JSON dict ``{question_id: record}`` (reference §2.3 fields), one file per split for
    shard ``index`` of ``count``: ``OUT/agqa/<split>-<i:05d>-of-<K:05d>.json``; the same
    ``write`` / ``close`` / ``abort`` protocol and ``.done`` marker as :class:`ParquetShardWriter`."""

    FIELDS = ("question", "answer", "video_id", "global", "local", "ans_type", "steps", "semantic",
              "structural", "program", "sg_grounding", "indirect", "i_obj", "i_rel", "i_act", "i_temp")

    def __init__(self, out: str | os.PathLike, index: int, count: int):
        self.out, self.index, self.count = Path(out), index, count
        output_folder(self.out / "agqa", self.out)
        self.paths = {s: self.out / "agqa" / f"{s}-{index:05d}-of-{count:05d}.json" for s in SPLITS}
        self.files = {}
        for s in SPLITS:  # new files: a link planted at a partial name is removed, not written through
            self.files[s] = open(new_file(self._partial(s)), "w")
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
        return write_error(getattr(self, "_current", None) or self.paths["train"], e,
                           outcome="this shard's partial files were removed")

    def close(self, stats: dict | None = None) -> None:
        for split, f in self.files.items():
            self._current = self.paths[split]
            f.write("\n}\n")
            f.close()
        for split in self.files:
            publish(self._partial(split), self.paths[split])
        output_folder(self.out / "data", self.out)
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
