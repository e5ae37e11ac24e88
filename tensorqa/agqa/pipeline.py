"""``generate`` for one shard: a scene store -> AGQA's unbalanced pool, streamed in blocks of videos
(:func:`.blocks.generate_block`) into the shard's writer. Shard i of K takes the i-th contiguous
range of the run's videos (:func:`.options.selected_videos`); ``--num-shards`` / ``--shard-index``
default from torchrun's WORLD_SIZE and RANK. Processes on one machine: :mod:`.jobs`."""

from __future__ import annotations

import contextlib
import gc
import os
import time
from pathlib import Path
from typing import Callable

import torch
from tqdm import tqdm

from tensorqa import kernels as kernels_mod
from tensorqa.errors import TensorQAError
from tensorqa.memory import keep_freed_memory
from tensorqa.outputs import output_lock
from tensorqa.agqa.semantics import get_semantics
from tensorqa.scenes.store import open_store
from tensorqa.writers import AgqaJsonShardWriter, ParquetShardWriter, resume_shard, write_dataset_card
from tensorqa.agqa.options import (StageTimes, checked_generate_options, default_grounding, rank_device,
                                   record_params, refuse_other_shard_counts, resolve_templates, selected_videos,
                                   shard_lock_name, shard_range, store_rel_obj_counts)
from tensorqa.agqa.blocks import generate_block


def generate_shard(store: str | os.PathLike, out: str | os.PathLike, templates: list[str] | None = None,
                   device: str = "cpu", batch_videos: int | None = None, num_shards: int | None = None,
                   shard_index: int | None = None, fmt: str = "parquet", seed: int = 0, semantics: str = "agqa",
                   include_retired: bool = False, progress: bool = True, max_videos: int | None = None,
                   kernels: str = "auto", grounding: bool | None = None, threads: int | None = None,
                   on_block: Callable[[int, int], None] | None = None, lock: bool = True) -> dict:
    """Generate shard ``shard_index`` of ``num_shards`` of the pool of ``store`` into ``out`` in this
    process; returns its statistics. ``grounding``: fill ``sg_grounding`` (default: AGQA JSON only).
    ``kernels``: "auto" runs the Triton kernels on CUDA where they measured faster; the output is the
    same either way. ``lock``: hold the shard's lock while writing (the ``--jobs`` parent holds them)."""
    batch_videos, out = checked_generate_options(threads, seed, num_shards, device, batch_videos, max_videos, out)
    if threads is not None:
        torch.set_num_threads(threads)
    if fmt not in ("parquet", "agqa-json"):
        raise TensorQAError(f"--format must be parquet or agqa-json, not {fmt!r}")
    device = rank_device(device)
    num_shards = int(os.environ.get("WORLD_SIZE", 1)) if num_shards is None else num_shards
    shard_index = int(os.environ.get("RANK", 0)) if shard_index is None else shard_index
    names = resolve_templates(templates, include_retired)
    sem = get_semantics(semantics)
    src = open_store(store)
    videos = selected_videos(src, max_videos, seed)
    a, b = shard_range(len(videos), num_shards, shard_index)
    grounding = default_grounding(fmt, grounding)
    params = record_params(src, names, seed, sem.name, fmt, grounding, len(videos))
    held = contextlib.ExitStack()  # the shard's lock, released on every way out below
    rel_obj_counts = _claim_shard(src, out, held, lock, shard_index, num_shards, params, device)
    if rel_obj_counts is None:
        return {"skipped": True, "shard": shard_index, "num_shards": num_shards}
    keep_freed_memory()
    out.mkdir(parents=True, exist_ok=True)
    writer = ParquetShardWriter(out, shard_index, num_shards) if fmt == "parquet" else AgqaJsonShardWriter(out, shard_index, num_shards)
    times = StageTimes()
    t_start = time.perf_counter()
    bar = tqdm(total=b - a, desc=f"generate shard {shard_index + 1}/{num_shards}", unit="video",
               disable=not progress, dynamic_ncols=True)
    backend = kernels_mod.configure(kernels, device)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # blocks make no reference cycles; the collector's scans were 2 % of a run
    try:
        with torch.inference_mode():
            for batch in src.blocks_of(videos[a:b], batch_videos, device=device):
                table = _block_table(batch, names, rel_obj_counts, sem, seed, times, grounding)
                t0 = time.perf_counter()
                writer.write(table)
                times.write += time.perf_counter() - t0
                bar.update(len(batch))
                if on_block is not None:
                    on_block(len(batch), times.questions)
                bar.set_postfix(questions=f"{times.questions:,}",
                                q_per_s=f"{times.questions / max(time.perf_counter() - t_start, 1e-9):,.0f}")
        t0 = time.perf_counter()
        stats = {"shard": shard_index, "num_shards": num_shards, **params, "store": str(Path(src.path).resolve()),
                 "device": device, "backend": kernels_mod.backend_for(kernels, device), **times.as_dict(),
                 "seconds": round(time.perf_counter() - t_start, 3)}
        writer.close(stats)
        times.write += time.perf_counter() - t0
        if fmt == "parquet":
            write_dataset_card(out, "tensorqa unbalanced AGQA-style pool", _card_body(stats))
    except OSError as e:  # a full disk, a quota: one line naming the file, no partial file left
        writer.abort()
        raise writer.write_error(e) from None
    except BaseException:
        writer.abort()
        raise
    finally:
        if gc_was_enabled:
            gc.enable()
        backend.undo()
        bar.close()
        src.close()
        held.close()
    return stats


def _claim_shard(src, out, held: contextlib.ExitStack, lock: bool, shard_index: int, num_shards: int,
                 params: dict, device: str) -> torch.Tensor | None:
    """The store's relation-object counts once the shard is held (``lock``) and found incomplete;
    None, with the store and the lock released, when it is complete."""
    try:
        if lock:
            held.enter_context(output_lock(out, shard_lock_name(shard_index, num_shards)))
            refuse_other_shard_counts(out, num_shards)
        if not resume_shard(out, shard_index, num_shards, params):
            return store_rel_obj_counts(src, device)
    except BaseException:
        held.close()
        src.close()
        raise
    held.close()
    src.close()
    return None


def _block_table(batch, names, rel_obj_counts, sem, seed: int, times: StageTimes, grounding: bool):
    """One block's records, with ``sg_grounding`` filled when ``grounding``."""
    if not grounding:
        return generate_block(batch, names, rel_obj_counts, sem, seed, times)
    from tensorqa.agqa.grounding import with_grounding  # its modules load only when asked for

    table, cells = generate_block(batch, names, rel_obj_counts, sem, seed, times, with_cells=True)
    t0 = time.perf_counter()
    table = with_grounding(table, batch, sem, reference_relations=cells.action_reference_relations())
    times.render += time.perf_counter() - t0
    return table


def _card_body(stats: dict) -> str:
    return (f"Unbalanced question pool generated by tensorqa from `{Path(stats['store']).name}` "
            f"(seed {stats['seed']}, semantics `{stats['semantics']}`). Columns: see "
            "`tensorqa.writers.RECORD_SCHEMA`. Templates: " + ", ".join(stats["templates"]) + ".")
