"""CLEVR's Parquet shard (``clevr.parquet``): the one writer of both backends."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq

from tensorqa.clevr.parquet import PARQUET_COLUMNS, string_buffers, write_columns
from tensorqa.clevr.templates import Template


def test_string_buffers_are_utf8_bytes_and_offsets():
    data, off = string_buffers(["a", "", "héllo", "□"])
    assert data[:off[-1]].tobytes() == "ahéllo□".encode()
    assert off.tolist() == [0, 1, 1, 7, 10]
    data, off = string_buffers([])
    assert off.tolist() == [0]


def _templates():
    return [Template("zero_hop.json", i, ("?",), ({"type": "scene", "inputs": []},), (), ()) for i in range(3)]


def test_columns_are_written_split_by_split_with_clevrs_answer_strings(tmp_path):
    cols = {"split": np.array(["val", "train", "val"], object),
            "image_filename": np.array(["CLEVR_val_000001.png", "CLEVR_train_000000.png", "CLEVR_val_000002.png"], object),
            "image_index": np.array([1, 0, 2]),
            "image": np.array(["CLEVR_val_000001", "CLEVR_train_000000", "CLEVR_val_000002"], object),
            "question": np.array(["Is there a cube?", "How many spheres?", "What color is it?"], object),
            "answer": np.array([True, 3, "red"], object),
            "program": np.array(['[{"type":"scene"}]', "[]", "[]"], object),
            "template_filename": np.array(["zero_hop.json"] * 3, object),
            "question_family_index": np.array([2, 0, 1])}
    files = write_columns(tmp_path / "out", cols, _templates(), shard=1, num_shards=4)
    assert [f.name for f in files] == ["train-00001-of-00004.parquet", "val-00001-of-00004.parquet"]
    train, val = (pq.read_table(f).to_pylist() for f in files)
    assert tuple(train[0]) == PARQUET_COLUMNS
    assert [r["question_index"] for r in val] == [0, 2] and train[0]["question_index"] == 1
    assert [r["answer"] for r in val] == ["yes", "red"] and train[0]["answer"] == "3"
    assert [r["question_family_index"] for r in val] == [2, 1]
    assert val[0]["image"] == "CLEVR_val_000001" and val[0]["program"] == '[{"type":"scene"}]'
    assert not list((tmp_path / "out" / "data").glob("*.partial"))
