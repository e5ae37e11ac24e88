"""Reading AGQA-Decomp hierarchy files: the JSON of one video's hierarchies and of the isolated
questions, checked field by field (a bad file is named with the place of its first error), read
in parallel for a folder; ``hierarchies.load_hierarchies`` builds the tables from them."""

from __future__ import annotations

import json
import os
from itertools import chain, count, repeat
from operator import itemgetter
from pathlib import Path

import numpy as np
import pyarrow as pa

from tensorqa.errors import TensorQAError


try:
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency; the standard library still works
    _loads = json.loads


def read_json(path: Path):
    """Parse one JSON file (orjson, about 3x the standard library's speed on hierarchy folders, when
    installed); a missing, unreadable or malformed file is a one-line TensorQAError."""
    try:
        with open(path, "rb") as f:
            text = f.read()
        return _loads(text)
    except FileNotFoundError:
        raise TensorQAError(f"{path}: no such file") from None
    except OSError as e:
        raise TensorQAError(f"{path}: cannot read ({e.strerror or e})") from None
    except (ValueError, UnicodeDecodeError) as e:  # json.JSONDecodeError and orjson.JSONDecodeError are ValueErrors
        raise TensorQAError(f"{path}: not valid JSON ({e})") from None


def string_column(values: list, path: Path, field: str) -> pa.Array:
    """A list of JSON strings as pa.string; anything else (null included) is an error naming the field."""
    try:
        out = pa.array(values, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        out = None
    if out is None or out.null_count:
        bad = next(v for v in values if not isinstance(v, str))
        raise TensorQAError(f"{path}: {field} must be a string, got {bad!r}")
    return out


def answer_column(values: list) -> pa.Array:
    """Answers: strings and nulls as they are, other JSON values as their JSON text."""
    try:
        return pa.array(values, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([v if v is None or isinstance(v, str) else json.dumps(v, sort_keys=True) for v in values],
                        type=pa.string())


def key_column(values: list) -> pa.Array:
    """Question keys as strings (ints become their decimal text, as a JSON round trip makes them)."""
    try:
        return pa.array(values, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    try:
        return pa.array(values, type=pa.int64()).cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([None if v is None else v if isinstance(v, str) else json.dumps(v) for v in values],
                        type=pa.string())


def fields(infos: list, path: Path, where: str, strict: bool = True) -> tuple[list, list, list, list]:
    """(type, answer, key, program) lists of question dicts; a missing field is an error
    (a TensorQAError naming it when ``strict``, else the KeyError / TypeError itself)."""
    try:
        types = list(map(itemgetter("type"), infos))
        answers = list(map(itemgetter("answer"), infos))
        keys = list(map(itemgetter("key"), infos))
    except (KeyError, TypeError):
        if not strict:
            raise
        for i, info in enumerate(infos):
            if not isinstance(info, dict):
                raise TensorQAError(f"{path}: {where} entry {i} is not an object") from None
            for f in ("type", "answer", "key"):
                if f not in info:
                    raise TensorQAError(f"{path}: {where} entry {i} has no {f!r} field") from None
        raise
    programs = list(map(dict.get, infos, repeat("program")))
    return types, answers, keys, programs


def _flatten(data: dict) -> dict:
    """Fast path: flatten a parsed video file with C-level iteration only (map / chain), no checks
    beyond what these calls enforce. Raises KeyError / TypeError / ValueError on a malformed file."""
    values = list(data.values())
    subs = list(map(itemgetter("subquestion"), values))
    hiers = list(map(itemgetter("hierarchy"), values))
    infos = list(chain.from_iterable(map(dict.values, subs)))      # dict.values rejects non-objects
    rule_dicts = list(chain.from_iterable(map(dict.values, hiers)))
    kid_lists = list(chain.from_iterable(map(dict.values, rule_dicts)))
    if not set(map(type, kid_lists)) <= {list}:
        raise TypeError("children must be lists")
    return dict(
        main_keys=list(data), n_sub=list(map(len, subs)), n_par=list(map(len, hiers)),
        n_rule=list(map(len, rule_dicts)), n_child=list(map(len, kid_lists)),
        texts=list(chain.from_iterable(subs)), infos=infos, parents=list(chain.from_iterable(hiers)),
        rule_names=list(chain.from_iterable(rule_dicts)), children=list(chain.from_iterable(kid_lists)),
    )


def _locate_error(path: Path, data: dict) -> None:
    """Slow path, run only when the fast path failed: raise a TensorQAError naming the bad entry."""
    for main_key, value in data.items():
        try:
            sub, hier = value["subquestion"], value["hierarchy"]
        except (KeyError, TypeError):
            raise TensorQAError(f"{path}: main question {main_key!r} needs 'subquestion' and 'hierarchy' objects") from None
        if not isinstance(sub, dict) or not isinstance(hier, dict):
            raise TensorQAError(f"{path}: main question {main_key!r}: 'subquestion' and 'hierarchy' must be objects")
        fields(list(sub.values()), path, f"main question {main_key!r}: subquestion")
        for parent, rules in hier.items():
            if not isinstance(rules, dict):
                raise TensorQAError(f"{path}: main question {main_key!r}: hierarchy of {parent!r} must be "
                                    f"an object {{rule: [child questions]}}")
            for kids in rules.values():
                if not isinstance(kids, list):
                    raise TensorQAError(f"{path}: main question {main_key!r}: children of {parent!r} must be a list")
    raise TensorQAError(f"{path}: malformed AGQA-Decomp hierarchy file")


def _read_video(path: Path) -> dict:
    """Flatten one ``<video_id>.json`` into per-file Arrow columns and count lists (no cross-file state)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise TensorQAError(f"{path}: expected an object {{main question key: {{subquestion, hierarchy}}}}, "
                            f"got {type(data).__name__}")
    try:
        flat = _flatten(data)
        types, answers, keys, programs = fields(flat["infos"], path, "subquestion", strict=False)
    except (KeyError, TypeError, AttributeError):
        _locate_error(path, data)
        raise
    if not set(map(type, flat["children"])) <= {str}:
        bad = next(c for c in flat["children"] if not isinstance(c, str))
        raise TensorQAError(f"{path}: a child question must be a question text, got {bad!r}")
    counts = {k: np.asarray(flat[k], np.int64) for k in ("n_sub", "n_par", "n_rule", "n_child")}
    # texts -> ids local to this file (first appearance order), with a small per-file dict: the
    # global tables never hash question strings. -1 marks a text that no subquestion of the file has.
    texts = flat["texts"]
    ids, text_id = _local_ids(texts, np.int32)
    parent_id = np.array(list(map(ids.get, flat["parents"], repeat(-1))), np.int32)
    child_id = np.array(list(map(ids.get, flat["children"], repeat(-1))), np.int32)
    # question keys -> distinct keys of this file (their predictions are looked up once each)
    key_col = key_column(keys)
    try:
        kids, key_id = _local_ids(keys, np.int64)
        key_values = key_column(list(kids))
    except TypeError:  # an unhashable key (a list, ...): go through its string form
        kids, key_id = _local_ids(key_col.to_pylist(), np.int64)
        key_values = pa.array(list(kids), pa.string())
    return dict(
        main_keys=pa.array(flat["main_keys"], pa.string()), **counts,
        text=string_column(texts, path, "question text"), type=string_column(types, path, "type"),
        answer=answer_column(answers), key=key_col, program=answer_column(programs),
        rules=string_column(flat["rule_names"], path, "composition rule"),
        text_id=text_id, parent_id=parent_id, child_id=child_id, n_text=len(ids),
        key_id=key_id, key_values=key_values,
        # the first text missing from the file, kept for the error message
        parents_missing=[flat["parents"][i] for i in np.flatnonzero(parent_id < 0)[:1]],
        children_missing=[flat["children"][i] for i in np.flatnonzero(child_id < 0)[:1]],
    )


def _local_ids(values: list, dtype) -> tuple[dict, np.ndarray]:
    """({value: id}, id of each value): ids in order of first appearance."""
    ids = dict(zip(dict.fromkeys(values), count()))
    return ids, np.array(list(map(ids.__getitem__, values)), dtype)


def read_videos(files: list[Path], workers: int | None, progress: bool) -> list[dict]:
    """Read video files in ``workers`` processes (results in file order); None: the usable CPUs, but
    only for a folder big enough (>= 16 files and > 64 MiB) to repay starting them."""
    if workers is None:
        big = len(files) >= 16 and sum(p.stat().st_size for p in files) > 64 * 2**20
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        workers = cpus if big else 1
    workers = max(1, min(workers, len(files)))
    from tqdm import tqdm

    out = []
    with tqdm(total=len(files), desc="reading hierarchies", unit="file", disable=not progress) as bar:
        if workers <= 1:
            for p in files:
                out.append(_read_video(p))
                bar.update()
            return out
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            for part in pool.map(_read_video, files, chunksize=4):
                out.append(part)
                bar.update()
    return out
