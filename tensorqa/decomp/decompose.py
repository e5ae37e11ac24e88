"""``tensorqa decompose``: every question of a pool becomes a DAG of sub-questions with exact answers
(:func:`.video.decompose_video`, in one or several processes). Written to ``OUT.partial`` (a rerun resumes
it), renamed to ``OUT`` when complete: ``OUT/hierarchies/`` is exactly AGQA-Decomp's folder (``<video_id>.json``
and ``isolated.json``, nothing else: the official evaluation reads every entry);
``OUT/parquet/{nodes,edges,dags}.parquet`` (per distinct sub-question, per (parent, rule, child position), per
question); ``OUT/decompose/report.json`` (counts, rules, left-out compositions, timing)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tensorqa.errors import TensorQAError
from tensorqa.outputs import atomic_path, file_name, output_folder, remove_tree, write_atomic
from tensorqa.agqa.semantics import get_semantics
from tensorqa.scenes.vocab import vocab
from tensorqa.writers import pool_store, read_pool
from tensorqa.decomp.hierarchies import Hierarchies, as_hierarchies
from tensorqa.decomp.predictions import Predictions
# decompose_video is looked up in this module's namespace (a test replaces it here); the other two are re-exported
from tensorqa.decomp.video import VideoDecomposition, consistency_violations, decompose_video  # noqa: F401

FORMATS = ("agqa-json", "parquet", "both")
# the AGQA-Decomp folder inside a decompose output (its files only; load_hierarchies finds it)
HIERARCHIES_DIR = "hierarchies"
POOL_COLUMNS = ["question_id", "video_id", "split", "template", "question", "answer", "program"]

# answer: a list answer (collections) as its JSON text; nodes: sub-questions of the DAG, the question included
NODE_SCHEMA = pa.schema([*((c, pa.string()) for c in ("video_id", "key", "text", "type", "answer", "program")),
                         ("is_main", pa.bool_())])
EDGE_SCHEMA = pa.schema([("video_id", pa.string()), ("parent_key", pa.string()), ("rule", pa.string()),
                         ("position", pa.int32()), ("child_key", pa.string())])
DAG_SCHEMA = pa.schema([*((c, pa.string()) for c in ("video_id", "main_key", "template", "type")),
                        ("nodes", pa.int32()), ("compositions", pa.int32()), ("isolated", pa.bool_())])


# -- a pool -----------------------------------------------------------------------------------------
class _PoolQuestions:
    """The questions of a pool split grouped by video, in the pool's order; a video's rows become
    Python dicts only when asked for (the table stays columnar)."""

    def __init__(self, pool: Path, split: str, limit: int | None):
        import pyarrow.compute as pc

        if not pool.is_dir():
            raise TensorQAError(f"{pool}: no such directory (expected a question pool)")
        try:
            table = read_pool(pool, columns=POOL_COLUMNS)
        except (pa.ArrowInvalid, KeyError) as e:
            raise TensorQAError(f"{pool}: cannot read the columns {', '.join(POOL_COLUMNS)} "
                                f"({str(e).splitlines()[0]})") from None
        if split != "all":
            if not pc.any(pc.equal(table["split"], split)).as_py():
                has = table.group_by("split").aggregate([("split", "count")]).sort_by("split").to_pylist()
                raise TensorQAError(f"{pool}: no questions of split {split!r} to decompose (the pool has "
                                    + (", ".join(f"{r['split_count']:,} {r['split']}" for r in has) or "no questions")
                                    + "); choose another --split")
            table = table.filter(pc.equal(table["split"], split))
        if table.num_rows == 0:
            raise TensorQAError(f"{pool}: no questions to decompose")
        videos = pc.unique(table["video_id"])  # in order of first appearance
        if limit is not None:
            videos = videos[:limit]
        code = np.asarray(pc.fill_null(pc.index_in(table["video_id"], value_set=videos), len(videos)).to_numpy())
        self.order = np.argsort(code, kind="stable")  # rows grouped by video, pool order inside
        self.stop = np.cumsum(np.bincount(code, minlength=len(videos) + 1)[:len(videos)])
        self.videos: list[str] = videos.to_pylist()
        self.table = table

    def __len__(self) -> int:
        return len(self.videos)

    def rows(self, i: int) -> list[dict]:
        a = self.stop[i - 1] if i else 0
        return self.table.take(pa.array(self.order[a:self.stop[i]])).to_pylist()


def decompose(pool: str | os.PathLike, out: str | os.PathLike, store: str | os.PathLike | None = None,
              split: str = "all", limit: int | None = None, fmt: str = "both", semantics: str = "agqa",
              progress: bool = True, workers: int = 1) -> dict:
    """Decompose the questions of ``pool`` (``split``: train / test / all; the first ``limit`` videos)
    into ``out``; returns the report. store: default, the one the pool records; fmt: "agqa-json",
    "parquet" or "both"; a complete ``out`` is never overwritten. ``workers`` processes do not change
    the output."""
    from tensorqa.scenes.store import open_store

    t0, c0 = time.perf_counter(), cpu_seconds()
    pool, out = Path(pool), Path(out)
    if fmt not in FORMATS:
        raise TensorQAError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if split not in ("train", "test", "all"):
        raise TensorQAError(f"--split must be train, test or all, not {split!r}")
    if limit is not None and limit < 1:
        raise TensorQAError(f"--limit must be at least 1, got {limit}")
    if workers < 1:
        raise TensorQAError(f"--workers must be at least 1, got {workers}")
    sem = get_semantics(semantics)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise TensorQAError(f"{out}: already exists and is not empty; remove it or choose another folder")
    questions = _PoolQuestions(pool, split, limit)
    if store is None:
        store = pool_store(pool)
        if store is None:
            raise TensorQAError(f"{pool}: the pool does not record its scene store; pass --store STORE")
    src = open_store(store)
    try:
        known = set(src.video_ids)
        missing = [v for v in questions.videos if v not in known]
        if missing:
            raise TensorQAError(f"{src.path}: no video {missing[0]!r} ({len(missing)} of the pool's "
                                f"{len(questions)} videos are missing): is it the store the pool was generated from?")
        stage, parts, params = _stage(out, pool, store, split, limit, fmt, sem)
        write_json = fmt in ("agqa-json", "both")
        todo = [i for i, v in enumerate(questions.videos) if not (parts / f"{v}.json").exists()]
        for i in todo:
            v = questions.videos[i]
            if v.startswith("."):
                raise TensorQAError(f"{pool}: video id {v!r} cannot name a file")
            file_name(v, pool, "video id")
        _run_videos(questions, todo, src, store, sem, stage, write_json, workers, progress)
    finally:
        src.close()

    report = _finish(stage, parts, questions.videos, params, fmt, time.perf_counter() - t0, cpu_seconds() - c0)
    if out.exists():
        out.rmdir()  # empty (checked above)
    os.replace(stage, out)
    return report


def _stage(out: Path, pool: Path, store, split: str, limit, fmt: str, sem) -> tuple[Path, Path, dict]:
    """(``OUT.partial``, its parts folder, the run's parameters): a stage of a run with other
    parameters is started again; one not written by decompose is refused."""
    stage = out.with_name(out.name + ".partial")
    if stage.is_symlink():
        raise TensorQAError(f"{stage}: is a symbolic link; refusing to write through it (remove the link)")
    parts = stage / "decompose" / "parts"
    params = {"pool": str(pool.resolve()), "store": str(Path(store).resolve()), "split": split, "limit": limit,
              "format": fmt, "semantics": sem.name, "vocab": vocab().hash}
    params_file = stage / "decompose" / "params.json"
    if stage.exists():
        old = json.loads(params_file.read_text()) if params_file.exists() else None
        if old != params:
            if old is None:
                raise TensorQAError(f"{stage}: exists but was not written by tensorqa decompose; remove it")
            remove_tree(stage)  # an interrupted run with other parameters: start again
    output_folder(parts, stage)  # no link planted below the stage
    if fmt in ("agqa-json", "both"):
        output_folder(stage / HIERARCHIES_DIR, stage)
    write_atomic(params_file, json.dumps(params, sort_keys=True))
    return stage, parts, params


def _run_videos(questions: _PoolQuestions, todo: list[int], src, store, sem, stage: Path, write_json: bool,
                workers: int, progress: bool) -> None:
    """Decompose the videos ``todo`` into the stage, in this process or in ``workers`` processes."""
    from tqdm import tqdm

    bar = tqdm(total=len(questions), initial=len(questions) - len(todo), desc="decompose", unit="video",
               disable=not progress, dynamic_ncols=True)
    tasks = ((questions.videos[i], questions.rows(i)) for i in todo)
    if workers == 1:
        for v, rows in tasks:
            _decompose_one(v, rows, src.scene(v), sem, stage, stage / "decompose" / "parts", write_json)
            bar.update()
    else:
        # spawn, not fork: forking a process whose torch / Arrow thread pools hold locks can hang
        ctx = multiprocessing.get_context("spawn")
        from tensorqa.threads import torch_threads

        init = (str(store), sem.name, str(stage), write_json, torch_threads(workers))
        with ctx.Pool(workers, initializer=_worker_init, initargs=init) as mp:
            for _ in mp.imap_unordered(_worker_run, tasks, chunksize=4):
                bar.update()
            mp.close()
            mp.join()  # the workers end here, so that their CPU time counts (cpu_seconds)
    bar.close()


def cpu_seconds() -> float:
    """CPU seconds of this process and of its ended child processes (the workers) so far."""
    try:
        import resource
    except ImportError:  # no getrusage (Windows): this process only
        return time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _decompose_one(v: str, rows: list[dict], scene, sem, stage: Path, parts: Path, write_json: bool) -> None:
    res = decompose_video(v, rows, scene, sem)
    if write_json and res.hierarchies:
        write_atomic(stage / HIERARCHIES_DIR / f"{v}.json", json.dumps(res.hierarchies))
    write_atomic(parts / f"{v}.json", json.dumps({
        "isolated": res.isolated, "nodes": res.nodes, "edges": res.edges, "dags": res.dags, "stats": res.stats}))


_worker: dict = {}


def _worker_init(store: str, semantics: str, stage: str, write_json: bool, threads: int) -> None:
    from tensorqa.scenes.store import open_store
    from tensorqa.threads import set_torch_threads

    set_torch_threads(threads=threads)  # the workers share the cores (tensorqa.threads)

    _worker.update(src=open_store(store), sem=get_semantics(semantics), stage=Path(stage),
                   parts=Path(stage) / "decompose" / "parts", write_json=write_json)


def _worker_run(task: tuple[str, list[dict]]) -> None:
    v, rows = task
    w = _worker
    _decompose_one(v, rows, w["src"].scene(v), w["sem"], w["stage"], w["parts"], w["write_json"])


def _finish(stage: Path, parts: Path, videos: list[str], params: dict, fmt: str, seconds: float,
            cpu_seconds: float) -> dict:
    """Merge the per-video parts into isolated.json, the Parquet tables and the report."""
    isolated, rows = [], {"nodes": [], "edges": [], "dags": []}
    dag_nodes, rules, dropped, fallbacks, collisions = [], Counter(), Counter(), Counter(), 0
    for v in videos:
        part = json.loads((parts / f"{v}.json").read_text())
        isolated += part["isolated"]
        for k in rows:
            rows[k] += part[k]
        s = part["stats"]
        dag_nodes += s["dag_nodes"]
        rules.update(s["rules"])
        dropped.update(s["dropped"])
        fallbacks.update(s["fallbacks"])
        collisions += s["text_collisions"]
    if fmt in ("agqa-json", "both"):
        write_atomic(stage / HIERARCHIES_DIR / "isolated.json", json.dumps(isolated))
    if fmt in ("parquet", "both"):
        output_folder(stage / "parquet", stage)
        for name, schema in (("nodes", NODE_SCHEMA), ("edges", EDGE_SCHEMA), ("dags", DAG_SCHEMA)):
            with atomic_path(stage / "parquet" / f"{name}.parquet") as tmp:
                pq.write_table(pa.Table.from_pylist(rows[name], schema=schema), tmp, compression="zstd")
    n_dags = len(dag_nodes)
    total_rules = sum(rules.values())
    # seconds: wall time of this run (a resumed run: its own part); cpu_seconds: this process and its workers
    report = {
        "videos": len(videos), "questions": len(rows["dags"]), "dags": n_dags, "isolated": len(isolated),
        "nodes_per_dag": round(float(np.mean(dag_nodes)), 3) if n_dags else None,
        "subquestions_per_dag": round(float(np.mean(dag_nodes)) - 1, 3) if n_dags else None,
        "distinct_subquestions": len(rows["nodes"]), "compositions": total_rules,
        "rules": {r: {"count": c, "share": round(c / total_rules, 4)} for r, c in rules.most_common()},
        "left_out": dict(sorted(dropped.items())), "fallbacks": dict(sorted(fallbacks.items())),
        "text_collisions": collisions, "seconds": round(seconds, 2), "cpu_seconds": round(cpu_seconds, 2),
        "params": params}
    write_atomic(stage / "decompose" / "report.json", json.dumps(report, indent=1))
    shutil.rmtree(parts)
    return report


def format_report(report: dict) -> str:
    """A few lines for the terminal."""
    lines = [(f"{report['questions']:,} questions of {report['videos']:,} videos: {report['dags']:,} DAGs, "
              f"{report['isolated']:,} isolated; {report['distinct_subquestions']:,} distinct sub-questions")]
    if report["dags"]:
        lines.append(f"sub-questions per DAG: {report['nodes_per_dag']:.2f} with the question, "
                     f"{report['subquestions_per_dag']:.2f} without")
        lines.append("composition rules: " + ", ".join(f"{r} {v['share'] * 100:.1f}%" for r, v in report["rules"].items()))
    if report["fallbacks"]:
        lines.append("fallback children (distinct compositions): " + ", ".join(
            f"{k.replace('|', ': ')} {n:,}" for k, n in report["fallbacks"].items()))
    if report["left_out"]:
        lines.append("left out (distinct compositions): " + ", ".join(f"{k.replace('|', ': ')} {n:,}"
                                                                      for k, n in report["left_out"].items()))
    lines.append(f"done in {report['seconds']:.1f} s ({report['cpu_seconds']:.1f} s CPU)")
    return "\n".join(lines)


def ground_truth_predictions(hierarchies: Hierarchies | str | os.PathLike) -> Predictions:
    """Every question key's own answer as its prediction (what a perfect model would answer)."""
    h = as_hierarchies(hierarchies)
    keys = pa.concat_arrays([h.nodes["key"].combine_chunks(), h.isolated["key"].combine_chunks()]) \
        if h.nodes.num_rows or h.isolated.num_rows else pa.array([], pa.string())
    values = pa.concat_arrays([h.nodes["answer"].combine_chunks(), h.isolated["answer"].combine_chunks()]) \
        if len(keys) else pa.array([], pa.string())
    import pyarrow.compute as pc

    uniq = pc.unique(keys)
    first = pa.array(np.unique(np.asarray(pc.index_in(keys, value_set=uniq).to_numpy()), return_index=True)[1])
    return Predictions(keys=keys.take(first), values=values.take(first), entries=len(first), source="ground truth")
