"""``generate``'s entry point: check the run options once, then run one shard in this process
(:func:`.pipeline.generate_shard`) or every shard of this machine as processes (:mod:`.jobs`).
Neither of those imports this module, so the two never import each other."""

from __future__ import annotations

import os

from tensorqa.agqa.jobs import auto_jobs, generate_jobs
from tensorqa.agqa.options import checked_generate_options
from tensorqa.agqa.pipeline import generate_shard
from tensorqa.errors import TensorQAError


def generate(store: str | os.PathLike, out: str | os.PathLike, templates: list[str] | None = None,
             device: str = "cpu", batch_videos: int | None = None, num_shards: int | None = None,
             shard_index: int | None = None, fmt: str = "parquet", seed: int = 0, semantics: str = "agqa",
             include_retired: bool = False, progress: bool = True, max_videos: int | None = None,
             kernels: str = "auto", grounding: bool | None = None, jobs: int | str = 1, threads: int | None = None,
             on_block=None, lock: bool = True) -> dict:
    """Generate the unbalanced pool of ``store`` into ``out``; returns the run's statistics.

    ``jobs``: shard processes side by side (:mod:`.jobs`; "auto": :func:`.jobs.auto_jobs`), same
    records as one process; not with an explicit shard or torchrun. Other arguments:
    :func:`.pipeline.generate_shard`. From Python, call :func:`tensorqa.startup.configure_process`
    before pyarrow is imported, as the command line does (Arrow's allocator set-up)."""
    batch_videos, out = checked_generate_options(threads, seed, num_shards, device, batch_videos, max_videos, out)
    if jobs == "auto":
        jobs = auto_jobs(device)
    elif not isinstance(jobs, int):
        raise TensorQAError(f"--jobs must be a number of processes or 'auto', not {jobs!r}")
    options = dict(templates=templates, device=device, batch_videos=batch_videos, num_shards=num_shards,
                   shard_index=shard_index, fmt=fmt, seed=seed, semantics=semantics, include_retired=include_retired,
                   progress=progress, max_videos=max_videos, kernels=kernels, grounding=grounding, threads=threads)
    if jobs != 1:
        return generate_jobs(jobs, store=store, out=out, **options)
    return generate_shard(store, out, on_block=on_block, lock=lock, **options)
