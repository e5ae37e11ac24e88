"""Foil-set records on disk: VALSE's JSON layout (``valse/<instrument>.json``, ``{id: record}``) and one
Parquet table (``pairs.parquet``), both with the caption's and foil's programs.

VALSE's fields keep their meaning; where a proof replaces annotators, ``mturk`` is ``{"caption": 3,
"foil": 0, "other": 0}`` (so VALSE's and ViLMA's validity filters keep every record) and
``validation`` says the labels come from execution. A static (CLEVR) record has ``image_file``, a
video's ``video_file``; ids are ``<instrument>:tensorqa:<video>`` and
``<instrument>:tensorqa-clevr:<image>``, so video and static ids never meet.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tensorqa.errors import TensorQAError
from tensorqa.outputs import check_not_input, file_name, output_folder, publish, remove_tree, write_error
from tensorqa.foils.pair import Pair

VALSE_DIR = "valse"
PARQUET = "pairs.parquet"
DATASET = "tensorqa"
STATIC_DATASET = "tensorqa-clevr"


def valse_record(p: Pair) -> dict:
    r = {
        "dataset": STATIC_DATASET if p.scene_kind == "static" else DATASET, "original_split": p.split, "dataset_idx": p.video_id,
        "linguistic_phenomena": p.phenomenon,
        "image_file": p.media_file if p.scene_kind == "static" else None,
        "video_file": None if p.scene_kind == "static" else p.media_file or f"{p.video_id}.mp4",
        "caption": p.caption, "classes": p.classes, "classes_foil": p.classes_foil,
    }
    if p.instrument in ("plurals", "relations"):  # VALSE's spelling differs by file
        r["foil_method"] = p.foil_method
    else:
        r["foiling_method"] = p.foil_method
    if p.instrument == "existence":
        r["declarative_statement"] = p.caption
        r["declarative_statement_foils"] = [p.foil]
        r["provenance_of_foils"] = p.foil_method
    if p.instrument == "existence" or p.instrument.startswith("counting"):
        r["answer"] = p.caption_text.answer
        r["split"] = p.split
    if p.instrument == "relations":
        r["key"] = p.id
    r["mturk"] = {"foil": 0, "caption": 3, "other": 0}
    r["validation"] = "execution: caption true, foil false on the scene graph"
    r["foil"] = p.foil
    program = json.loads if p.scene_kind == "static" else str  # CLEVR's program JSON as JSON, not a string
    r["caption_program"], r["caption_answer"] = program(p.caption_text.program), p.caption_text.answer
    r["foil_program"], r["foil_answer"] = program(p.foil_text.program), p.foil_text.answer
    r["scene_id"] = p.video_id
    r["scene_kind"] = p.scene_kind
    r["grounding"] = {"keyframes": p.keyframes, "objects": p.objects, "object_indices": p.object_indices}
    return r


def pairs_table(pairs: list[Pair]) -> pa.Table:
    col = lambda f: [f(p) for p in pairs]
    return pa.table({
        "id": col(lambda p: p.id), "instrument": col(lambda p: p.instrument),
        "phenomenon": col(lambda p: p.phenomenon), "video_id": col(lambda p: p.video_id),
        "split": col(lambda p: p.split), "caption": col(lambda p: p.caption), "foil": col(lambda p: p.foil),
        "caption_program": col(lambda p: p.caption_text.program), "caption_answer": col(lambda p: p.caption_text.answer),
        "foil_program": col(lambda p: p.foil_text.program), "foil_answer": col(lambda p: p.foil_text.answer),
        "classes": col(lambda p: str(p.classes)), "classes_foil": col(lambda p: str(p.classes_foil)),
        "foil_method": col(lambda p: p.foil_method),
        "keyframes": pa.array(col(lambda p: p.keyframes), pa.list_(pa.int32())),
        "objects": pa.array(col(lambda p: p.objects), pa.list_(pa.string())),
        "object_indices": pa.array(col(lambda p: p.object_indices), pa.list_(pa.int32())),
        "scene_kind": col(lambda p: p.scene_kind), "media_file": col(lambda p: p.media_file),
    })


def write_foil_set(pairs: list[Pair], out: str | os.PathLike, meta: dict, progress: bool = False) -> None:
    """Write into a temporary folder beside ``out``, then move the files in: an earlier set stays whole
    until the new one is complete. ``progress``: a bar over the files on stderr."""
    from tqdm import tqdm

    out = output_folder(Path(out))
    tmp = Path(tempfile.mkdtemp(dir=out, prefix=".partial-"))  # a new folder: nothing planted in it
    target = out / VALSE_DIR
    try:
        (tmp / VALSE_DIR).mkdir()
        by_instrument: dict[str, dict] = {}
        for p in pairs:
            by_instrument.setdefault(p.instrument, {})[p.id] = valse_record(p)
        bar = tqdm(total=len(by_instrument) + 1, desc="foils: write", unit="file", disable=not progress,
                   dynamic_ncols=True)
        for name, records in by_instrument.items():
            target = out / VALSE_DIR / f"{file_name(name, out, 'instrument')}.json"  # valse/ is replaced whole
            with open(tmp / VALSE_DIR / target.name, "w", encoding="utf-8") as f:
                json.dump(records, f, indent=1)
            bar.update()
        target = out / PARQUET
        pq.write_table(pairs_table(pairs), tmp / PARQUET)
        bar.update()
        bar.close()
        target = out / "meta.json"
        with open(tmp / "meta.json", "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)
        for target in (out / VALSE_DIR, out / PARQUET, out / "meta.json"):  # before any is replaced
            check_not_input(target)
        target = out / VALSE_DIR
        remove_tree(out / VALSE_DIR)  # a link there is removed, not followed
        publish(tmp / VALSE_DIR, out / VALSE_DIR)
        target = out / PARQUET
        publish(tmp / PARQUET, out / PARQUET)
        target = out / "meta.json"
        publish(tmp / "meta.json", out / "meta.json")
    except OSError as e:  # a full disk: one line naming the file
        raise write_error(target, e) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_pairs_table(folder: str | os.PathLike) -> pa.Table:
    path = Path(folder) / PARQUET
    if not path.is_file():
        raise TensorQAError(f"foil set {folder}: no {PARQUET} (write one with tensorqa foils STORE --out DIR)")
    try:
        return pq.read_table(path)
    except (OSError, pa.ArrowException) as err:
        raise TensorQAError(f"foil set {folder}: {PARQUET} is not readable Parquet ({str(err).splitlines()[0]})") from None


def read_instruments(folder: str | os.PathLike) -> dict[str, tuple[str, str]]:
    """id -> (phenomenon, instrument) of every pair of a foil set."""
    t = read_pairs_table(folder)
    if not {"id", "phenomenon", "instrument"} <= set(t.column_names):
        raise TensorQAError(f"foil set {folder}: {PARQUET} lacks the id / phenomenon / instrument columns")
    return dict(zip(t.column("id").to_pylist(),
                    zip(t.column("phenomenon").to_pylist(), t.column("instrument").to_pylist())))
