"""generate: a static-scene store -> CLEVR questions, in blocks of scenes, by one of two backends
that accept the same rows: numba on the CPU where it is installed (``compiled_driver``; it imports
no torch), else torch on any device (``torch_backend``), both reading ``options``. Sharding and
the output files live here."""

from __future__ import annotations

import contextlib
import gc
import time
from pathlib import Path

from tensorqa.clevr.options import Options
from tensorqa.clevr.templates import DEFAULT_SYNONYMS, DEFAULT_TEMPLATES_DIR, Template, load_synonyms, load_templates
from tensorqa.errors import TensorQAError
from tensorqa.memory import keep_freed_memory
from tensorqa.scenes.static_store import StaticStore


def shard_range(n: int, num_shards: int, shard: int, align: int) -> tuple[int, int]:
    """Contiguous scene ranges on multiples of ``align`` (the reset window), so that sharding
    changes nothing in the output."""
    if not 0 <= shard < num_shards:
        raise TensorQAError(f"--shard-index {shard} is not in 0..{num_shards - 1}")
    windows = -(-n // align)
    lo, hi = windows * shard // num_shards, windows * (shard + 1) // num_shards
    return min(lo * align, n), min(hi * align, n)


def _on_store(store_path, templates_dir, synonyms_path, opt: Options, num_shards: int, shard_index: int,
              max_scenes: int | None, compiled, fallback=None):
    """(compiled(st, templates, synonyms, a, z), the store's info, z - a) over this shard's scenes [a, z)
    where the compiled engine runs, else the same of ``fallback``; None where neither runs."""
    templates, syn = _templates_and_synonyms(templates_dir, synonyms_path)
    runs = use_compiled(opt, templates, syn)
    if not runs and fallback is None:
        return None
    with _no_gc(), StaticStore(store_path) as st:
        n = len(st) if max_scenes is None else min(max_scenes, len(st))
        a, z = shard_range(n, num_shards, shard_index, opt.reset_counts_every)
        if runs:
            from tensorqa.clevr.plan import NotCompilable

            try:
                return compiled(st, templates, syn, a, z), dict(st.info), z - a
            except NotCompilable as e:
                if opt.engine == "compiled":
                    raise TensorQAError(f"{store_path}: --engine compiled: {e}") from None
        return None if fallback is None else (fallback(st, templates, syn, a, z), dict(st.info), z - a)


def _shard_questions(store_path, templates_dir, synonyms_path, opt: Options, num_shards: int, shard_index: int,
                     max_scenes: int | None, with_output: bool | None, own_threads: bool = True) -> tuple[dict, dict, int]:
    """One (sub-)shard's questions: the compiled engine's accepted rows (``compiled_driver.accept``,
    marked ``"compiled"``, with their scene range), which the caller writes, or the torch grid's
    columns (``columns``). ``own_threads``: set torch's threads."""

    def compiled(st, templates, syn, a, z):
        from tensorqa.clevr.compiled_driver import accept

        return {"compiled": True, "accepted": accept(st, templates, syn, opt, a, z), "range": (a, z)}

    def torch_grid(st, templates, syn, a, z):
        import torch

        from tensorqa.clevr.torch_backend import generate_columns
        from tensorqa.threads import set_torch_threads

        if own_threads:
            set_torch_threads(threads=opt.threads)
        with torch.inference_mode():
            return generate_columns(st, templates, syn, opt, a, z, bool(with_output))

    return _on_store(store_path, templates_dir, synonyms_path, opt, num_shards, shard_index, max_scenes, compiled,
                     torch_grid)


def use_compiled(opt: Options, templates: list[Template], synonyms: dict) -> bool:
    """Whether the compiled engine runs: ``--engine compiled``, or ``auto`` on the CPU where the
    templates compile (``plan.NotCompilable`` says why not; then the torch grid runs)."""
    if opt.engine == "torch" or (opt.engine == "auto" and str(opt.device) != "cpu"):
        return False
    if not numba_available():
        if opt.engine == "compiled":
            raise TensorQAError("--engine compiled: needs numba (pip install 'tensorqa[numba]'); "
                                "--engine torch runs without it")
        return False
    from tensorqa.clevr.plan import NotCompilable, plans

    try:
        plans(templates, synonyms)
    except NotCompilable as e:
        if opt.engine == "compiled":
            raise TensorQAError(f"--engine compiled: {e}") from None
        return False
    return True


def numba_available() -> bool:
    """Whether numba imports (the optional extra ``tensorqa[numba]``; as PyG picks up pyg-lib)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _job(args):
    return _shard_questions(*args, own_threads=False)


def generate_store(store_path, out, templates_dir=None, synonyms_path=None, fmt: str = "clevr-json",
                   num_shards: int = 1, shard_index: int = 0, max_scenes: int | None = None,
                   opt: Options | None = None, jobs: int = 1) -> dict:
    """Generate questions for a static-scene store; write CLEVR's questions JSON (``out`` a file)
    or Parquet (``out`` a folder, with a dataset card that declares the splits, as the AGQA pools).
    ``jobs`` > 1 runs this shard's scenes as that many processes (sub-shards on reset-window
    boundaries) and writes one output, the same as ``jobs`` = 1."""
    stats = _generate_store(store_path, out, templates_dir, synonyms_path, fmt, num_shards, shard_index, max_scenes,
                            opt, jobs)
    if fmt == "parquet":
        from tensorqa.writers import write_dataset_card

        write_dataset_card(out, "tensorqa CLEVR questions",
                           "CLEVR questions generated by tensorqa from CLEVR 1.0's question templates "
                           f"(`{Path(store_path).name}`, seed {(opt or Options()).seed}). Columns: CLEVR's question "
                           "fields, programs as JSON strings (`tensorqa.clevr.parquet.PARQUET_COLUMNS`).")
    return stats


def _generate_store(store_path, out, templates_dir, synonyms_path, fmt: str, num_shards: int, shard_index: int,
                    max_scenes: int | None, opt: Options | None, jobs: int) -> dict:
    opt = opt or Options()
    if fmt not in ("clevr-json", "parquet"):
        raise TensorQAError(f"--format: {fmt!r} is not clevr-json or parquet")
    t0 = time.perf_counter()
    keep_freed_memory()  # blocks allocate and free the same buffers: keep them (as AGQA's generate does)
    with_output = opt.semantics.keep_output
    # with_output: True / False for the questions JSON (answers as JSON values), None for Parquet
    json_out = None if fmt == "parquet" else with_output
    if jobs > 1:
        import concurrent.futures as cf
        import multiprocessing as mp

        n_sub = num_shards * jobs
        args = [(store_path, templates_dir, synonyms_path, opt, n_sub, shard_index * jobs + j, max_scenes, json_out)
                for j in range(jobs)]
        from tensorqa.threads import set_torch_threads, torch_threads

        with cf.ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"), initializer=set_torch_threads,
                                    initargs=(jobs, torch_threads(jobs))) as ex:
            parts = list(ex.map(_job, args))
        info, scenes = parts[0][1], sum(p[2] for p in parts)
        if all(p[0].get("compiled") for p in parts):  # the processes generated; this one writes
            given = ([p[0]["range"] for p in parts], [acc for p in parts for acc in p[0]["accepted"]])
            return _stream(store_path, out, templates_dir, synonyms_path, fmt, opt, num_shards, shard_index,
                           max_scenes, given) | {"seconds": time.perf_counter() - t0}
        from tensorqa.clevr import columns

        qs = columns.concat([p[0] for p in parts])  # one engine in every process: the store's object slots decide
    else:
        streamed = _stream(store_path, out, templates_dir, synonyms_path, fmt, opt, num_shards, shard_index, max_scenes)
        if streamed is not None:
            return streamed | {"seconds": time.perf_counter() - t0}
        qs, info, scenes = _shard_questions(store_path, templates_dir, synonyms_path, opt, num_shards, shard_index,
                                            max_scenes, json_out)
    from tensorqa.clevr import columns, records

    if fmt == "parquet":  # the one Parquet writer
        from tensorqa.clevr.parquet import write_columns

        write_columns(out, qs, _templates_and_synonyms(templates_dir, synonyms_path)[0], shard_index, num_shards)
    else:
        records.write_questions_json(_json_path(out, fmt, num_shards, shard_index),
                                     _info(info, opt, num_shards, shard_index), columns.as_dicts(qs))
    return {"questions": len(qs["question"]), "scenes": scenes, "seconds": time.perf_counter() - t0, "engine": "torch"}


def _json_path(out, fmt: str, num_shards: int, shard_index: int) -> Path:
    p = Path(out)
    if fmt == "clevr-json" and num_shards > 1:
        p = p.with_name(f"{p.stem}-{shard_index:05d}-of-{num_shards:05d}{p.suffix}")
    return p


def _stream(store_path, out, templates_dir, synonyms_path, fmt: str, opt: Options, num_shards: int,
            shard_index: int, max_scenes: int | None, given: tuple | None = None) -> dict | None:
    """One process's questions JSON or Parquet shard, written block by block by the compiled engine
    (``compiled_driver.stream_questions_json`` / ``stream_parquet``), which generates them or takes
    ``given`` = (scene ranges, accepted rows) from ``--jobs`` processes; None where the compiled
    engine does not run (then the caller generates columns and writes them)."""

    def write(st, templates, syn, a, z):
        from tensorqa.clevr import compiled_driver

        ranges, accepted = given or ([(a, z)], None)
        if fmt == "parquet":
            return compiled_driver.stream_parquet(out, st, templates, syn, opt, ranges, shard_index, num_shards,
                                                  accepted)
        return compiled_driver.stream_questions_json(_json_path(out, fmt, num_shards, shard_index), st, templates, syn,
                                                     opt, ranges, opt.semantics.keep_output,
                                                     _info(st.info, opt, num_shards, shard_index), accepted=accepted)

    got = _on_store(store_path, templates_dir, synonyms_path, opt, num_shards, shard_index, max_scenes, write)
    return None if got is None else {"questions": got[0], "scenes": got[2], "engine": "compiled"}


def _info(info, opt: Options, num_shards: int, shard_index: int) -> dict:
    return dict(info) | {"tensorqa": {"seed": opt.seed, "shard": shard_index, "num_shards": num_shards}}


@contextlib.contextmanager
def _no_gc():
    """The cyclic collector paused: the records make no reference cycles, and its scans cost time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _templates_and_synonyms(templates_dir, synonyms_path) -> tuple[list[Template], dict]:
    """The run's templates and synonyms, read once per process (keyed by the files' paths, sizes, times)."""
    tdir = Path(templates_dir) if templates_dir else DEFAULT_TEMPLATES_DIR
    if not templates_dir and not tdir.is_dir():
        raise TensorQAError(f"{tdir}: CLEVR 1.0's template files, which tensorqa ships, are missing: reinstall "
                            "tensorqa or give --templates-dir and --synonyms")
    spath = synonyms_path if synonyms_path else (DEFAULT_SYNONYMS if not templates_dir else None)
    files = sorted(tdir.glob("*.json")) if tdir.is_dir() else []
    stamp = tuple((str(f), s.st_mtime_ns, s.st_size) for f in files + ([Path(spath)] if spath and Path(spath).is_file()
                                                                       else []) for s in (f.stat(),))
    key = (str(tdir), str(spath), stamp)
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = (load_templates(tdir), load_synonyms(spath))
    return _LOADED[key]


_LOADED: dict = {}
