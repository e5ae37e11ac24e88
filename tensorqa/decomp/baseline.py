"""Reference predictions that use no video: "most-likely" (the group's most frequent answer, ties
alphabetical) or "random" (a seeded draw among the group's seen answers); groups are collapsed
types, or templates for a pool. ``fit`` gives the statistics (default: the questions predicted,
which peeks at their answers; fit on train for a fair reference); an unseen group falls back to
all of ``fit``'s answers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.errors import TensorQAError
from tensorqa.outputs import atomic_file
from tensorqa.decomp.hierarchies import Hierarchies, as_hierarchies
from tensorqa.decomp.encoding import dictionary_codes, first_rows
from tensorqa.decomp.predictions import Predictions

KINDS = ("most-likely", "random")


def _question_groups(h: Hierarchies) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(key, collapsed type, answer) of each distinct question key (first occurrence), nodes then isolated."""
    key, group, answer = (pa.chunked_array([*h.nodes[c].chunks, *h.isolated[c].chunks], type=pa.string())
                          for c in ("key", "collapsed", "answer"))
    has_key = pc.is_valid(key)
    key, group, answer = key.filter(has_key), group.filter(has_key), answer.filter(has_key)
    codes, _ = dictionary_codes(key)
    rows = pa.array(first_rows(np.ones(len(codes), bool), codes))
    return key.take(rows), group.take(rows), answer.take(rows)


def _predict(groups: pa.Array, fit_groups: pa.Array, fit_answers: pa.Array, kind: str, seed: int,
             fit_source: str = "") -> pa.Array:
    """One answer per entry of ``groups`` from the answer statistics of (fit_groups, fit_answers)
    (``fit_source``: where they come from, for the error that none has an answer)."""
    if kind not in KINDS:
        raise TensorQAError(f"unknown baseline kind {kind!r} (choose from {', '.join(KINDS)})")
    answered = pc.is_valid(fit_answers)
    t = pa.table({"g": fit_groups, "a": fit_answers}).filter(answered)
    if t.num_rows == 0:
        raise TensorQAError(f"{fit_source + ': ' if fit_source else ''}no ground-truth answers to fit the baseline on")
    t = t.append_column("g0", pc.fill_null(t["g"], ""))
    counts = t.group_by(["g0", "a"]).aggregate([("a", "count")]).sort_by([("g0", "ascending"), ("a_count", "descending"),
                                                                          ("a", "ascending")])
    glob = t.group_by(["a"]).aggregate([("a", "count")]).sort_by([("a_count", "descending"), ("a", "ascending")])
    # per group: the answers seen (most frequent first), a few hundred at most
    seen: dict[str, list] = {}
    for g, a in zip(counts["g0"].to_pylist(), counts["a"].to_pylist()):
        seen.setdefault(g, []).append(a)
    seen["\0fallback"] = glob["a"].to_pylist()
    names = list(seen)
    target = pc.index_in(pc.fill_null(groups, ""), value_set=pa.array(names[:-1], pa.string()))
    gi = np.asarray(pc.fill_null(target, len(names) - 1).to_numpy(), np.int64) if len(groups) else np.zeros(0, np.int64)
    if kind == "most-likely":
        return pa.array([seen[n][0] for n in names], pa.string()).take(pa.array(gi))
    flat = pa.array([a for n in names for a in seen[n]], pa.string())
    size = np.array([len(seen[n]) for n in names], np.int64)
    start = np.cumsum(size) - size
    rng = np.random.default_rng(seed)
    pick = start[gi] + np.floor(rng.random(len(gi)) * size[gi]).astype(np.int64)
    return flat.take(pa.array(pick))


def baseline_predictions(hierarchies, kind: str = "most-likely", seed: int = 0, fit=None) -> Predictions:
    """Predictions for every question key of ``hierarchies``: kind "most-likely" or "random"; fit:
    the hierarchies giving the statistics (default: the same ones)."""
    h = as_hierarchies(hierarchies)
    f = h if fit is None else as_hierarchies(fit)
    keys, groups, _ = _question_groups(h)
    if len(keys) == 0:
        raise TensorQAError(f"{_name(hierarchies)}: no questions to predict (no hierarchy and no isolated question)")
    _, fit_groups, fit_answers = _question_groups(f)
    values = _predict(groups, fit_groups, fit_answers, kind, seed, _name(hierarchies if fit is None else fit))
    return Predictions(keys=keys, values=values, entries=len(keys), source=f"baseline:{kind}")


def _name(hierarchies) -> str:
    """A folder's name for a message, or what stands for in-memory hierarchies."""
    return str(hierarchies) if isinstance(hierarchies, (str, os.PathLike)) else "the hierarchies"


def _pool_files(pool: Path) -> list[Path]:
    from tensorqa.writers import pool_shards

    if not pool.exists():
        raise TensorQAError(f"{pool}: no such directory")
    return [f for files in pool_shards(pool).values() for f in files]  # a complete pool only


def pool_baseline_predictions(pool: str | os.PathLike, kind: str = "most-likely", seed: int = 0,
                              fit_split: str | None = None) -> Predictions:
    """Predictions keyed by ``question_id`` for every question of a Parquet pool, grouped by template; fit_split:
    fit the answer statistics on rows of this split only (e.g. "train"), default all rows."""
    import pyarrow.parquet as pq

    cols = ["question_id", "template", "answer", "split"]
    parts = []
    for p in _pool_files(Path(pool)):
        try:
            t = pq.read_table(p, columns=cols)
        except (pa.ArrowInvalid, OSError, KeyError) as e:
            raise TensorQAError(f"{p}: cannot read the pool columns {', '.join(cols)} ({str(e).splitlines()[0]})") from None
        parts.append(t.select(cols).cast(pa.schema([(c, pa.string()) for c in cols])))
    t = pa.concat_tables(parts)
    if t.num_rows == 0:
        raise TensorQAError(f"{pool}: no questions to predict")
    fit = t if fit_split is None else t.filter(pc.equal(t["split"], fit_split))
    if fit_split is not None and fit.num_rows == 0:
        raise TensorQAError(f"{pool}: no rows of split {fit_split!r} to fit the baseline on")
    values = _predict(t["template"], fit["template"], fit["answer"], kind, seed, str(pool))
    keys = t["question_id"].combine_chunks()
    return Predictions(keys=keys, values=values, entries=len(keys), source=f"baseline:{kind}")


def write_predictions(preds: Predictions, path: str | os.PathLike) -> Path:
    """Write predictions in the official list format ``[{"csv_q_id": key, "prediction": answer}]``."""
    path = Path(path)
    rows = [{"csv_q_id": k, "prediction": v} for k, v in zip(preds.keys.to_pylist(), preds.values.to_pylist())]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TensorQAError(f"{path}: cannot write ({e.strerror or e})") from None
    with atomic_file(path, "w") as f:  # a failure removes the partial file and names ``path``
        json.dump(rows, f)
    return path
