"""The HDF5 scene-graph store: padded tensors for many videos in one file (written by
:mod:`tensorqa.scenes.store_writer`).

Layout (format ``tensorqa.scenes``, version 1). V videos, F = longest video's keyframes,
N = most action instances, O objects, R relations (R, O <= 64: one int64 word per bit set)::

    /video_id     S<w>[V]       /split        S5[V] ("train" / "test")
    /num_frames   int32[V]      /num_inst     int32[V]
    /frame_ids    int32[V, F]   /frame_secs   float32[V, F]
    /rel_bits     int64[V, F, O]  bit r set: relation r holds with object o at keyframe f
    /obj_bits     int64[V, F]     bit o set: object o annotated at keyframe f
    /inst_cls     int16[V, N]   /inst_start   float32[V, N]   /inst_end float32[V, N]
    attrs: format, format_version, vocab_hash, vocab_json, source, meta_json

Ids are stored at full length (at least 8 bytes wide); datasets are chunked by blocks of videos
(gzip, shuffle), so reading a block is one slice per dataset.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Iterator

import h5py
import numpy as np
import torch

from tensorqa.errors import TensorQAError
from tensorqa.limits import NAME
from tensorqa.scenes.batch import MIN_SLOTS, SceneBatch, VideoScene
from tensorqa.scenes.vocab import vocab

from tensorqa.scenes.h5 import HEADER_DAMAGE, H5Reader, check_header, corrupt_store
from tensorqa.scenes.store_writer import DATASETS as _DATASETS, FORMAT, FORMAT_VERSION, StoreWriter, pack_bits, \
    unpack_bits, write_store

__all__ = ["SceneStore", "open_store", "StoreWriter", "write_store", "pack_bits", "unpack_bits", "HEADER_DAMAGE",
           "corrupt_store"]
DEFAULT_BLOCK = 512


class SceneStore(H5Reader):
    """Read access to a store file. ``len(store)``, ``store.video_ids``, ``store.batch(a, b)``,
    ``store.blocks(n)``, ``store.get(video_id)``. Opened by :func:`open_store`."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if not self.path.exists():
            raise TensorQAError(f"{self.path}: no such file")
        try:
            self._f = h5py.File(self.path, "r")
        except OSError as e:
            reason = "truncated" if "truncated" in str(e).lower() else "not an HDF5 file or corrupt"
            raise TensorQAError(f"{self.path}: cannot open as HDF5 ({reason})") from None
        self._validated(self._load)

    def _load(self) -> None:
        self._validate()
        self.video_ids: tuple[str, ...] = self._names("video_id")
        self.splits: tuple[str, ...] = self._names("split")
        self.num_frames = self.read("num_frames", slice(None)).astype(np.int64)
        self.num_instances = self.read("num_inst", slice(None)).astype(np.int64)
        self._pos = {vid: i for i, vid in enumerate(self.video_ids)}
        self._validate_contents()
        self.source: str = self._text_attr("source", "")
        self.meta: dict = self._meta()

    def _text_attr(self, name: str, default: str) -> str:
        value = self._f.attrs.get(name, default)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "strict") if value.isascii() else None
        if not isinstance(value, str):
            raise TensorQAError(f"{self.path}: attribute '{name}' is not a string ({type(value).__name__})")
        return value

    def _meta(self) -> dict:
        from tensorqa.limits import parse_json

        meta = parse_json(self._text_attr("meta_json", "{}"), self.path, "attribute 'meta_json'")
        if not isinstance(meta, dict):
            raise TensorQAError(f"{self.path}: attribute 'meta_json' is not a JSON object")
        return meta

    def _names(self, name: str) -> tuple[str, ...]:
        """A dataset of fixed-width byte strings as str, each a valid name (ASCII: no UTF-8 to cut)."""
        raw = self.read(name, slice(None))
        out = []
        for i, x in enumerate(raw.tolist()):
            text = x.decode("ascii", "replace")
            if not NAME.fullmatch(text):
                raise TensorQAError(f"{self.path}: dataset '{name}': entry {i} {x!r:.60} is not a valid name")
            out.append(text)
        return tuple(out)

    @functools.cached_property
    def fingerprint(self) -> str:
        """16 hex digits that tell stores apart: a hash of the source, the metadata (augmentation
        rules, seed, ...), the video ids and every video's keyframe and instance counts. Packing
        is deterministic, so two stores packed alike share it wherever they lie."""
        h = hashlib.blake2b(digest_size=8)
        h.update(self.source.encode() + b"\0" + json.dumps(self.meta, sort_keys=True).encode() + b"\0")
        h.update("\n".join(self.video_ids).encode() + b"\0")
        h.update(self.num_frames.tobytes() + self.num_instances.tobytes())
        return h.hexdigest()

    def _validate(self) -> None:
        p, v = self.path, vocab()
        check_header(self._f, p, FORMAT, "scene store", FORMAT_VERSION, v.hash)
        V = None
        for name, (dtype, rank) in _DATASETS.items():
            if name not in self._f:
                raise TensorQAError(f"{p}: missing dataset '{name}'")
            d = self._f[name]
            if not isinstance(d, h5py.Dataset):
                raise TensorQAError(f"{p}: '{name}' is not a dataset")
            if d.ndim != rank or (V is not None and d.shape[0] != V):
                raise TensorQAError(f"{p}: dataset '{name}' has shape {d.shape}, expected rank {rank} with {V} videos")
            want = np.dtype(dtype)
            if d.dtype.kind != want.kind or (want.kind != "S" and d.dtype != want):
                raise TensorQAError(f"{p}: dataset '{name}' has dtype {d.dtype}, expected {want}")
            V = d.shape[0]
        if self._f["rel_bits"].shape[2] != v.num_objects:
            raise TensorQAError(f"{p}: dataset 'rel_bits' has {self._f['rel_bits'].shape[2]} objects, expected {v.num_objects}")

    def _validate_contents(self) -> None:
        """The per-video columns, read anyway, and the action classes (V x N int16, small): what a
        tampered or inconsistent file would turn into a wrong pool or an index error later."""
        p = self.path
        if len(self._pos) != len(self.video_ids):
            seen: set = set()
            dup = next(v for v in self.video_ids if v in seen or seen.add(v))
            raise TensorQAError(f"{p}: dataset 'video_id': video id {dup!r} appears more than once")
        bad = sorted(set(self.splits) - {"train", "test"})
        if bad:
            raise TensorQAError(f"{p}: dataset 'split': {bad[0]!r} is not 'train' or 'test'")
        for name, counts, axis_of in (("num_frames", self.num_frames, "frame_ids"),
                                      ("num_inst", self.num_instances, "inst_cls")):
            width = self._f[axis_of].shape[1]
            wrong = np.flatnonzero((counts < 0) | (counts > width))
            if len(wrong):
                i = int(wrong[0])
                raise TensorQAError(f"{p}: dataset '{name}': video {self.video_ids[i]!r} has {counts[i]}, "
                                    f"outside 0..{width} (the padded axis of '{axis_of}')")
        N = self._f["inst_cls"].shape[1]
        if N and len(self):
            cls = self.read("inst_cls", slice(None))
            used = np.arange(N)[None, :] < self.num_instances[:, None]
            A = vocab().num_actions
            wrong = np.argwhere(used & ((cls < 0) | (cls >= A)))
            if len(wrong):
                i, j = map(int, wrong[0])
                raise TensorQAError(f"{p}: dataset 'inst_cls': video {self.video_ids[i]!r} has action class "
                                    f"{int(cls[i, j])}, outside the vocabulary's 0..{A - 1}")

    def read(self, name: str, sel) -> np.ndarray:
        """Dataset ``name`` at ``sel`` (the raw packed arrays); a truncated or corrupt file is one line."""
        try:
            return self._f[name][sel]
        except (OSError, KeyError, ValueError) as e:
            raise TensorQAError(f"{self.path}: cannot read dataset '{name}' ({e.__class__.__name__}: truncated or corrupt file?)") from None

    # -- access ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.video_ids)

    def index(self, video_id: str) -> int:
        try:
            return self._pos[video_id]
        except KeyError:
            raise TensorQAError(f"{self.path}: no video {video_id!r}") from None

    def batch(self, start: int, stop: int, device: str | torch.device = "cpu") -> SceneBatch:
        """Videos ``start:stop`` as a SceneBatch trimmed to the block's own F and N."""
        start, stop, _ = slice(start, stop).indices(len(self))
        return self._batch(slice(start, max(stop, start)), device)

    def take(self, positions: np.ndarray, device: str | torch.device = "cpu") -> SceneBatch:
        """The videos at ``positions`` (int[B], increasing) as a SceneBatch, as :meth:`batch` gives them."""
        positions = np.asarray(positions, dtype=np.int64)
        if len(positions) and (positions[0] < 0 or positions[-1] >= len(self) or (np.diff(positions) <= 0).any()):
            raise TensorQAError(f"{self.path}: video positions must increase within 0..{len(self) - 1}")
        if not len(positions) or positions[-1] - positions[0] + 1 == len(positions):  # a run: read it as a slice
            return self._batch(slice(int(positions[0]), int(positions[-1]) + 1) if len(positions) else slice(0, 0),
                               device)
        return self._batch(positions, device)

    def _batch(self, sl: slice | np.ndarray, device: str | torch.device) -> SceneBatch:
        F = int(self.num_frames[sl].max(initial=0))
        N = int(self.num_instances[sl].max(initial=0))
        v = vocab()
        rd = self.read
        rel_bits = torch.from_numpy(rd("rel_bits", (sl, slice(0, F)))).to(device)
        obj_bits = torch.from_numpy(rd("obj_bits", (sl, slice(0, F)))).to(device)
        nf = torch.from_numpy(self.num_frames[sl]).to(device)
        ni = torch.from_numpy(self.num_instances[sl]).to(device)
        return SceneBatch(
            rel=unpack_bits(rel_bits, v.num_relations),
            obj=unpack_bits(obj_bits, v.num_objects),
            frame_secs=torch.from_numpy(rd("frame_secs", (sl, slice(0, F)))).to(device),
            frame_ids=torch.from_numpy(rd("frame_ids", (sl, slice(0, F)))).to(device),
            frame_mask=torch.arange(F, device=device)[None, :] < nf[:, None],
            inst_cls=torch.from_numpy(rd("inst_cls", (sl, slice(0, N))).astype(np.int64)).to(device),
            inst_start=torch.from_numpy(rd("inst_start", (sl, slice(0, N)))).to(device),
            inst_end=torch.from_numpy(rd("inst_end", (sl, slice(0, N)))).to(device),
            inst_mask=torch.arange(N, device=device)[None, :] < ni[:, None],
            video_ids=self._pick(self.video_ids, sl), splits=self._pick(self.splits, sl),
        ).pad_to(max(F, MIN_SLOTS), max(N, MIN_SLOTS))

    @staticmethod
    def _pick(values: tuple, sl: slice | np.ndarray) -> tuple:
        return values[sl] if isinstance(sl, slice) else tuple(values[i] for i in sl)

    def get(self, video_id: str, device: str | torch.device = "cpu") -> SceneBatch:
        """One video as a batch of one."""
        i = self.index(video_id)
        return self.batch(i, i + 1, device)

    def scene(self, video_id: str) -> VideoScene:
        return self.get(video_id).scenes()[0]

    def blocks(self, batch_videos: int = DEFAULT_BLOCK, start: int = 0, stop: int | None = None,
               device: str | torch.device = "cpu") -> Iterator[SceneBatch]:
        """Iterate over videos ``start:stop`` in batches of ``batch_videos``."""
        if batch_videos < 1:
            raise TensorQAError(f"batch size must be at least 1, got {batch_videos}")
        stop = len(self) if stop is None else min(stop, len(self))
        for a in range(start, stop, batch_videos):
            yield self.batch(a, min(a + batch_videos, stop), device)

    def blocks_of(self, positions: np.ndarray, batch_videos: int = DEFAULT_BLOCK,
                  device: str | torch.device = "cpu") -> Iterator[SceneBatch]:
        """Iterate over the videos at ``positions`` (increasing) in batches of ``batch_videos``."""
        if batch_videos < 1:
            raise TensorQAError(f"batch size must be at least 1, got {batch_videos}")
        for a in range(0, len(positions), batch_videos):
            yield self.take(positions[a:a + batch_videos], device)

    def __iter__(self) -> Iterator[SceneBatch]:
        return self.blocks()

    def __repr__(self) -> str:
        return f"SceneStore({str(self.path)!r}, videos={len(self)}, source={self.source!r})"


def open_store(path: str | os.PathLike) -> SceneStore:
    """Open a scene store for reading; raises :class:`TensorQAError` on a bad file."""
    return SceneStore(path)
