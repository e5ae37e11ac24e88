"""AGQA-Decomp predictions: the official ``[{csv_q_id, prediction}]`` list or a ``{key: prediction}`` map,
read once into distinct string keys and values (:class:`Predictions`), and the two special codes
(``NONE``, ``MISSING``) the metrics give a null and an absent prediction.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.errors import TensorQAError
from tensorqa.decomp.hierarchy_files import answer_column, key_column, read_json

NONE = -1      # code of a JSON null answer / prediction
MISSING = -2   # code of "no prediction for this key"; equal to nothing, itself included


@dataclass(frozen=True)
class Predictions:
    """Predictions keyed by question id: keys string[P], distinct (a repeated key: the last entry
    wins, as in the official ``preprocess.py``); values string[P] (null: a JSON null); entries read
    before deduplication; source: file name or "<object>"."""

    keys: pa.Array
    values: pa.Array
    entries: int
    source: str

    @property
    def duplicates(self) -> int:
        return self.entries - len(self.keys)


def load_predictions(source) -> Predictions:
    """Predictions from a file or object: the official list ``[{"csv_q_id": id, "prediction": answer},
    ...]`` (HCRN's ``validate.py``) or a ``{key: prediction}`` map; ids compared as strings, non-string
    predictions through their JSON text."""
    if isinstance(source, Predictions):
        return source
    path = isinstance(source, (str, os.PathLike))
    name, data = (str(source), read_json(Path(source))) if path else ("<predictions>", source)
    if isinstance(data, dict):
        keys, values = list(data.keys()), list(data.values())
    elif isinstance(data, list):
        try:
            keys = list(map(itemgetter("csv_q_id"), data))
            values = list(map(itemgetter("prediction"), data))
        except (KeyError, TypeError):
            i, bad = next((i, d) for i, d in enumerate(data)
                          if not isinstance(d, dict) or "csv_q_id" not in d or "prediction" not in d)
            raise TensorQAError(f"{name}: entry {i} is not an object with 'csv_q_id' and 'prediction' "
                                f"({repr(bad)[:60]})") from None
    else:
        raise TensorQAError(f"{name}: expected a list of {{csv_q_id, prediction}} or a {{key: prediction}} "
                            f"object, got {type(data).__name__}")
    try:
        k, v = key_column(keys), answer_column(values)
    except RecursionError:  # a key or prediction nested past what JSON text is made of
        raise TensorQAError(f"{name}: a key or prediction nests too deeply") from None
    entries = len(k)
    if entries and pc.count_distinct(k, mode="all").as_py() < entries:
        # a repeated key: the last entry wins (keep the first occurrence in the reversed order)
        rk, rv = k[::-1], v[::-1]
        codes = np.asarray(pc.index_in(rk, value_set=pc.unique(rk)).to_numpy(zero_copy_only=False))
        _, first = np.unique(codes, return_index=True)
        keep = pa.array(np.sort(first))
        k, v = rk.take(keep), rv.take(keep)
    if pc.any(pc.is_null(k)).as_py():
        raise TensorQAError(f"{name}: a prediction has a null question id")
    return Predictions(keys=k, values=v, entries=entries, source=name)
