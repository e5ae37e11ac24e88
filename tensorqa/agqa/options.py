"""Run options of ``generate``, checked and resolved once: shards, seeds, devices, block sizes, templates,
what a shard's done marker records, and the per-stage clock (:class:`StageTimes`)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.agqa.templates import ACTIVE_TEMPLATES, TEMPLATES, template_spec

if TYPE_CHECKING:  # imported where used: CLEVR's numba path runs without torch
    import torch


@dataclass
class StageTimes:
    """Seconds spent per stage (grid evaluation, validity masks, record building, rendering, writing)."""

    grid: float = 0.0
    masks: float = 0.0
    records: float = 0.0
    render: float = 0.0
    write: float = 0.0
    questions: int = 0
    videos: int = 0
    per_template: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def shard_range(n_videos: int, num_shards: int, shard_index: int) -> tuple[int, int]:
    if num_shards < 1:
        raise TensorQAError(f"--num-shards must be at least 1, got {num_shards}")
    if not 0 <= shard_index < num_shards:
        raise TensorQAError(f"shard index {shard_index} is not in 0..{num_shards - 1}")
    return n_videos * shard_index // num_shards, n_videos * (shard_index + 1) // num_shards


def resolve_templates(names: list[str] | None, include_retired: bool = False) -> list[str]:
    """Catalogue names to generate, in catalogue order (Table 14 spelling)."""
    if not names:
        return [t for t in TEMPLATES if t in ACTIVE_TEMPLATES or include_retired]
    wanted = {template_spec(n).name for n in names}
    return [t for t in TEMPLATES if t in wanted]


def store_rel_obj_counts(src, device: str) -> torch.Tensor:
    """int64[O, R] on ``device``: keyframes per (object, relation) over the whole store, which the
    dataset-frequency validity rule reads (written by ``pack``)."""
    counts = src.meta.get("rel_obj_keyframes")
    if counts is None:
        raise TensorQAError(f"{src.path}: store has no relation-object counts (meta 'rel_obj_keyframes'); repack it")
    import torch

    return torch.tensor(counts, dtype=torch.int64, device=device)


def checked_run_options(device: str, batch_videos: int | None, max_videos: int | None) -> int:
    """The block size (``batch_videos``, or the device's default) after refusing impossible run
    options: what ``generate`` and ``ablate`` share."""
    if max_videos is not None and max_videos < 1:
        raise TensorQAError(f"--max-videos must be at least 1, got {max_videos}")
    if not isinstance(device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise TensorQAError(f"--device {device}: expected cpu, cuda or cuda:N")
    batch_videos = default_batch_videos(device) if batch_videos is None else batch_videos
    if batch_videos < 1:
        raise TensorQAError(f"--batch-videos must be at least 1, got {batch_videos}")
    if device.startswith("cuda"):
        import torch  # here: CLEVR's numba path checks its options without torch

        if not torch.cuda.is_available():
            raise TensorQAError(f"--device {device}: CUDA is not available on this machine")
    return batch_videos


def checked_generate_options(threads: int | None, seed, num_shards: int | None, device: str,
                             batch_videos: int | None, max_videos: int | None, out):
    """(block size, output folder) after refusing impossible ``generate`` options: what the entry
    point and a shard run share."""
    from tensorqa.outputs import check_output_folder

    if threads is not None and threads < 1:
        raise TensorQAError(f"--threads must be at least 1, got {threads}")
    check_seed(seed)
    if num_shards is not None and num_shards < 1:
        raise TensorQAError(f"--num-shards must be at least 1, got {num_shards}")
    batch_videos = checked_run_options(device, batch_videos, max_videos)
    return batch_videos, check_output_folder(out, what="the pool is a folder")


MAX_SEED = 2**63 - 1


def check_seed(seed, flag: str = "--seed") -> int:
    """A seed is an integer in 0..2**63 - 1 (the question-frame hash reads it as an int64)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED:
        raise TensorQAError(f"{flag} must be an integer in 0..{MAX_SEED}, got {seed!r}")
    return int(seed)


def videos_used(src, max_videos: int | None) -> int:
    """How many of the store's videos a run reads: all, or ``max_videos``."""
    return len(src) if max_videos is None else min(len(src), max_videos)


def selected_videos(src, max_videos: int | None, seed: int = 0) -> np.ndarray:
    """int64[n], increasing: the store positions of the videos ``generate`` reads: all, or
    ``max_videos`` in the store's split proportions (largest remainders, ties to the alphabetically
    first split, at least one per split while possible), drawn by a generator seeded with ``seed``."""
    n = videos_used(src, max_videos)
    if n == len(src):
        return np.arange(n, dtype=np.int64)
    splits = np.asarray(src.splits)
    names, code, sizes = np.unique(splits, return_inverse=True, return_counts=True)
    exact = n * sizes / len(src)
    share = np.floor(exact).astype(np.int64)
    for i in np.argsort(-(exact - share), kind="stable")[:n - share.sum()]:
        share[i] += 1
    for i in np.flatnonzero(share == 0):  # a split without a video while others have several
        j = int(np.argmax(share))
        if share[j] > 1:
            share[i], share[j] = 1, share[j] - 1
    rng = np.random.default_rng(seed)
    picked = [rng.choice(np.flatnonzero(code == i), int(share[i]), replace=False) for i in range(len(names))]
    return np.sort(np.concatenate(picked)).astype(np.int64)


def default_grounding(fmt: str, grounding: bool | None) -> bool:
    """``--grounding`` unless given: on for AGQA JSON, off for Parquet."""
    return fmt == "agqa-json" if grounding is None else bool(grounding)


def default_batch_videos(device: str) -> int:
    """Videos per block: 16 on the CPU, 64 on CUDA: the fastest sizes measured, and host memory
    grows with the block (a block's text is rendered at once); the measurements:
    ``benchmarks/RESULTS.md``, "Block sizes"."""
    return 64 if str(device).startswith("cuda") else 16


def shared_gpu(process: int) -> str:
    """The GPU of the ``process``-th process of a machine when its processes share the GPUs round
    robin (torchrun ranks, ``--jobs`` shards)."""
    import torch

    return f"cuda:{process % max(1, torch.cuda.device_count())}"


def rank_device(device: str) -> str:
    """Under torchrun, a bare ``cuda`` means this rank's GPU, ``cuda:<LOCAL_RANK mod GPUs>`` (more
    ranks than GPUs share them round robin); an indexed CUDA device also becomes the current one,
    since Triton kernels launch on the current device whatever their tensors' device."""
    if device == "cuda" and "LOCAL_RANK" in os.environ:
        device = shared_gpu(int(os.environ["LOCAL_RANK"]))
    if device.startswith("cuda:"):
        import torch

        torch.cuda.set_device(torch.device(device))
    return device


def refuse_other_shard_counts(out, count: int) -> None:
    """Refuse to write shards of ``count`` into ``out`` while another run writes shards of another
    count there (its shard locks are held): the per-shard locks alone would let both go on, and
    the folder would mix two pools. A lock file nobody holds (left by a killed run) is ignored."""
    import fcntl
    from pathlib import Path

    for path in sorted(Path(out).glob(".lock-*-of-*")):
        m = re.fullmatch(r"\.lock-\d{5}-of-(\d{5})", path.name)
        if not m or int(m.group(1)) == count:
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:  # released meanwhile
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TensorQAError(f"--out {out}: another tensorqa run is writing {int(m.group(1))} shards to this "
                                f"folder (it holds {path.name}); wait for it to end or write elsewhere") from None
        finally:
            os.close(fd)


def shard_lock_name(index: int, count: int) -> str:
    """The lock file of shard ``index`` of ``count`` in a pool folder (removed when the run ends)."""
    return f".lock-{index:05d}-of-{count:05d}"


def record_params(src, templates: list[str], seed: int, semantics: str, fmt: str, grounding: bool,
                  videos: int) -> dict:
    """What decides a shard's records besides its index, as its done marker records it: a restart
    into the same folder must match (``writers.resume_shard``). Devices, kernels, block sizes
    and process counts are not among them: the records do not depend on them."""
    return {"store_id": src.fingerprint, "templates": list(templates), "seed": seed, "semantics": semantics,
            "format": fmt, "grounding": grounding, "pool_videos": videos}
