"""Writing the HDF5 scene store (layout in :mod:`tensorqa.scenes.store`): bit packing and
:class:`StoreWriter`, which builds the file in memory and publishes it atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Sequence

import h5py
import numpy as np
import torch

from tensorqa.errors import TensorQAError
from tensorqa.limits import MAX_FRAME, check_name
from tensorqa.outputs import check_output_file, new_file, publish, write_error
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.vocab import vocab

FORMAT = "tensorqa.scenes"
FORMAT_VERSION = 1
CHUNK_VIDEOS = 128
MIN_ID_WIDTH = 8  # bytes of the video_id dataset at least (its fixed width before ids were checked)

# name -> (dtype, rank) ; rank counts the video axis
DATASETS = {
    "video_id": ("S8", 1), "split": ("S5", 1), "num_frames": ("int32", 1), "num_inst": ("int32", 1),
    "frame_ids": ("int32", 2), "frame_secs": ("float32", 2), "rel_bits": ("int64", 3), "obj_bits": ("int64", 2),
    "inst_cls": ("int16", 2), "inst_start": ("float32", 2), "inst_end": ("float32", 2),
}


def pack_bits(a: np.ndarray) -> np.ndarray:
    """bool[..., K] (K <= 64) -> int64[...]: bit k set where a[..., k]."""
    weights = (np.int64(1) << np.arange(a.shape[-1], dtype=np.int64))
    return (a.astype(np.int64) * weights).sum(-1, dtype=np.int64)


def unpack_bits(words: torch.Tensor, k: int) -> torch.Tensor:
    """int64[...] -> bool[..., k]: the inverse of :func:`pack_bits`."""
    shifts = torch.arange(k, dtype=torch.int64, device=words.device)
    return (torch.bitwise_right_shift(words.unsqueeze(-1), shifts) & 1).bool()


class StoreWriter:
    """Append videos block by block; ``close()`` finishes the file atomically (as a context manager,
    an exception removes the partial file)."""

    def __init__(self, path: str | os.PathLike, source: str = "", meta: dict | None = None):
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        if not self.path.parent.is_dir():
            raise TensorQAError(f"{self.path}: output directory {self.path.parent} does not exist"
                                + (" (it is a file)" if self.path.parent.exists() else ""))
        if self.path.is_dir():
            raise TensorQAError(f"{self.path}: is a folder; the store is a file (.h5)")
        check_output_file(self.path, None, what="the store is a file (.h5)")  # not a device, fifo, ...
        v = vocab()
        self._O, self._R = v.num_objects, v.num_relations
        # built in memory (the stores are MiBs) and written out by Python at close: HDF5 meets no
        # write error of its own (a full disk made its flushes fail over many lines, then crash)
        self._f = h5py.File(self.partial.name, "w", driver="core", backing_store=False)
        attrs = self._f.attrs
        attrs["format"], attrs["format_version"] = FORMAT, FORMAT_VERSION
        attrs["vocab_hash"], attrs["vocab_json"] = v.hash, v.to_json()
        attrs["source"], attrs["meta_json"] = source, json.dumps(meta or {}, sort_keys=True)
        tail = {"rel_bits": (self._O,)}
        self._ids: list[bytes] = []  # written at close, as wide as the longest
        for name, (dtype, rank) in DATASETS.items():
            if name == "video_id":
                continue
            shape = (0,) + (0,) * (rank - 1 - len(tail.get(name, ()))) + tail.get(name, ())
            maxshape = (None,) * (rank - len(tail.get(name, ()))) + tail.get(name, ())
            chunks = (CHUNK_VIDEOS,) + (32,) * (rank - 1 - len(tail.get(name, ()))) + tail.get(name, ())
            self._f.create_dataset(name, shape=shape, maxshape=maxshape, dtype=dtype, chunks=chunks,
                                   compression="gzip", compression_opts=1, shuffle=True)
        self.count = 0

    def append(self, scenes: Sequence[VideoScene]) -> None:
        """Write a block of videos (any number)."""
        if not scenes:
            return
        F = max(s.num_frames for s in scenes)
        N = max(s.num_instances for s in scenes)
        B, v0 = len(scenes), self.count
        ds = self._f
        F = max(F, ds["frame_ids"].shape[1])
        N = max(N, ds["inst_cls"].shape[1])
        for name, (_, rank) in DATASETS.items():
            if name == "video_id":
                continue
            d = ds[name]
            if rank == 1:
                d.resize((v0 + B,))
            else:
                width = F if name in ("frame_ids", "frame_secs", "rel_bits", "obj_bits") else N
                d.resize((v0 + B, width) + d.shape[2:])
        rel = np.zeros((B, F, self._O), np.int64)
        objb = np.zeros((B, F), np.int64)
        fids = np.zeros((B, F), np.int32)
        secs = np.zeros((B, F), np.float32)
        icls = np.zeros((B, N), np.int16)
        ist = np.zeros((B, N), np.float32)
        ien = np.zeros((B, N), np.float32)
        for b, s in enumerate(scenes):
            f, n = s.num_frames, s.num_instances
            if s.rel.shape[1:] != (self._O, self._R):
                raise TensorQAError(f"video {s.video_id}: rel has shape {s.rel.shape}, expected (F, {self._O}, {self._R})")
            if f and not (0 <= int(np.min(s.frame_ids)) and int(np.max(s.frame_ids)) <= MAX_FRAME):
                raise TensorQAError(f"video {s.video_id}: a frame number is outside 0..{MAX_FRAME:,} (int32)")
            rel[b, :f], objb[b, :f] = pack_bits(s.rel), pack_bits(s.obj)
            fids[b, :f], secs[b, :f] = s.frame_ids, s.frame_secs
            icls[b, :n], ist[b, :n], ien[b, :n] = s.inst_cls, s.inst_start, s.inst_end
        sl = slice(v0, v0 + B)
        for s in scenes:
            check_name(s.video_id, str(self.path), "video id")
        self._ids += [s.video_id.encode() for s in scenes]
        ds["split"][sl] = np.array([s.split.encode() for s in scenes], dtype="S5")
        ds["num_frames"][sl] = [s.num_frames for s in scenes]
        ds["num_inst"][sl] = [s.num_instances for s in scenes]
        ds["frame_ids"][sl] = _fit(fids, ds["frame_ids"].shape[1])
        ds["frame_secs"][sl] = _fit(secs, ds["frame_secs"].shape[1])
        ds["rel_bits"][sl] = _fit(rel, ds["rel_bits"].shape[1])
        ds["obj_bits"][sl] = _fit(objb, ds["obj_bits"].shape[1])
        ds["inst_cls"][sl] = _fit(icls, ds["inst_cls"].shape[1])
        ds["inst_start"][sl] = _fit(ist, ds["inst_start"].shape[1])
        ds["inst_end"][sl] = _fit(ien, ds["inst_end"].shape[1])
        self.count += B

    def clear_relations(self, pruned: np.ndarray, block: int = 4096) -> None:
        """Clear relations marked in ``pruned`` bool[R] in everything written so far (block by block)."""
        if not np.any(pruned):
            return
        keep = ~pack_bits(np.asarray(pruned, bool)[None])[0]
        d = self._f["rel_bits"]
        for a in range(0, self.count, block):
            d[a : a + block] = d[a : a + block] & keep

    def set_meta(self, **items) -> None:
        """Add entries to the file's ``meta_json`` attribute."""
        meta = json.loads(self._f.attrs["meta_json"])
        meta.update(items)
        self._f.attrs["meta_json"] = json.dumps(meta, sort_keys=True)

    def close(self) -> Path:
        try:
            ids = self._ids
            width = max([MIN_ID_WIDTH] + [len(i) for i in ids])
            self._f.create_dataset("video_id", data=np.array(ids, dtype=f"S{width}").reshape(-1), maxshape=(None,),
                                   chunks=(CHUNK_VIDEOS,), compression="gzip", compression_opts=1, shuffle=True)
            if len(set(ids)) != len(ids):
                seen: set = set()
                dup = next(i for i in ids if i in seen or seen.add(i)).decode()
                raise TensorQAError(f"{self.path}: video id {dup} appears more than once")
            self._f.flush()
            image = self._f.id.get_file_image()
            self._f.close()
            with open(new_file(self.partial), "wb") as f:  # new: a planted link is not written through
                f.write(image)
            publish(self.partial, self.path)
        except BaseException as e:
            self.abort()
            if isinstance(e, OSError):  # a full disk, a quota: HDF5's messages run over several lines
                raise write_error(self.path, e, "write the store", "nothing was kept") from None
            raise
        return self.path

    def abort(self) -> None:
        try:
            self._f.close()
        except Exception:  # noqa: BLE001 - the file is removed anyway (a full disk fails its flush)
            pass
        finally:
            self.partial.unlink(missing_ok=True)

    def __enter__(self) -> "StoreWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
            if isinstance(exc, OSError) and not isinstance(exc, (BrokenPipeError, FileNotFoundError)):
                raise write_error(self.path, exc, "write the store", "nothing was kept") from None


def _fit(a: np.ndarray, width: int) -> np.ndarray:
    """Pad axis 1 of a block up to the dataset's current width."""
    if a.shape[1] == width:
        return a
    pad = [(0, 0), (0, width - a.shape[1])] + [(0, 0)] * (a.ndim - 2)
    return np.pad(a, pad)


def write_store(path: str | os.PathLike, scenes: Iterable[VideoScene], source: str = "",
                meta: dict | None = None, block: int = 1024) -> Path:
    """Write videos to a new store at ``path`` (atomically)."""
    with StoreWriter(path, source=source, meta=meta) as w:
        buf: list[VideoScene] = []
        for s in scenes:
            buf.append(s)
            if len(buf) == block:
                w.append(buf)
                buf = []
        w.append(buf)
    return Path(path)
