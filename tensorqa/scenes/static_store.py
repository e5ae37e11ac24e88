"""The HDF5 store of static scenes (CLEVR), on the conventions of ``scenes/store.py``. Layout (format
``tensorqa.static_scenes``, version 1; S scenes, N = most objects)::

    /image_filename S[S]   /split S[S]   /num_objects int32[S]
    /attrs    int8[S, N, 4]   class ids (size, color, material, shape)
    /rel_bits int8[S, N, N]   bit r set: j is relation r of i
    /coords   float32[S, N, 3]
    attrs: format, format_version, benchmark ("clevr"), vocab_hash, vocab_json, source, info_json
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import h5py
import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.limits import MAX_CLEVR_SCENES, MAX_NAME, MAX_SCENE_OBJECTS, NAME, SPLIT, parse_json
from tensorqa.outputs import new_partial, partial_path, publish, write_error
from tensorqa.scenes.h5 import H5Reader, check_header
from tensorqa.scenes.static_batch import StaticBatch, StaticScene, clevr_vocab, image_index_of

if TYPE_CHECKING:  # imported where used: CLEVR's numba path runs without torch
    import torch

FORMAT = "tensorqa.static_scenes"
FORMAT_VERSION = 1
_DATASETS = {"image_filename": ("S", 1), "split": ("S", 1), "num_objects": ("int32", 1),
             "attrs": ("int8", 3), "rel_bits": ("int8", 3), "coords": ("float32", 3)}


def is_static_store(path: str | os.PathLike) -> bool:
    """True when ``path`` is an HDF5 file whose format is a static-scene store."""
    try:
        with h5py.File(path, "r") as f:
            return f.attrs.get("format") == FORMAT
    except (OSError, ValueError):
        return False


def write_static_store(path: str | os.PathLike, scenes: list[StaticScene], source: str = "", info: dict | None = None) -> Path:
    path = Path(path)
    if not path.parent.is_dir():
        raise TensorQAError(f"{path}: output directory {path.parent} does not exist")
    if path.is_dir():
        raise TensorQAError(f"{path}: is a folder; the store is a file (.h5)")
    if not scenes:
        raise TensorQAError(f"{path}: no scenes to pack")
    v = clevr_vocab()
    S, N = len(scenes), max(s.num_objects for s in scenes)
    attrs = np.zeros((S, N, 4), np.int8)
    bits = np.zeros((S, N, N), np.int8)
    coords = np.zeros((S, N, 3), np.float32)
    for b, s in enumerate(scenes):
        n = s.num_objects
        attrs[b, :n], coords[b, :n] = s.attrs, s.coords
        bits[b, :n, :n] = (s.rel.astype(np.int8) << np.arange(4, dtype=np.int8)).sum(-1)
    try:
        partial = new_partial(path)  # new: a link planted at the partial name is removed, not followed
        with h5py.File(partial, "w") as f:
            f.attrs.update(format=FORMAT, format_version=FORMAT_VERSION, benchmark="clevr", vocab_hash=v.hash,
                           vocab_json=v.to_json(), source=source, info_json=json.dumps(info or {}))
            f["image_filename"] = np.array([s.image_filename.encode() for s in scenes])
            f["split"] = np.array([s.split.encode() for s in scenes])
            f["num_objects"] = np.array([s.num_objects for s in scenes], np.int32)
            for name, data in (("attrs", attrs), ("rel_bits", bits), ("coords", coords)):
                f.create_dataset(name, data=data, chunks=_scene_chunks(data), compression="gzip", shuffle=True)
        publish(partial, path)
    except BaseException as e:
        partial_path(path).unlink(missing_ok=True)
        if not isinstance(e, OSError):
            raise
        raise write_error(path, e, "write the store") from None
    return path


def _scene_chunks(data: np.ndarray) -> tuple:
    """Chunks of whole scenes, about 256 KiB, a power of two scenes: a block of scenes decompresses
    only its own chunks (h5py's guess spanned 2,500 scenes)."""
    row = max(1, data[:1].nbytes)
    rows = 1 << max(0, ((1 << 18) // row).bit_length() - 1)
    return (min(len(data), rows),) + data.shape[1:]


_NAME_BYTE = np.zeros(256, bool)
_NAME_BYTE[np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-", np.uint8)] = True
_FIRST_BYTE = _NAME_BYTE.copy()
_FIRST_BYTE[np.frombuffer(b"._-", np.uint8)] = False


def _check_names(raw: np.ndarray, path: Path, name: str, pattern) -> None:
    """Every NUL-padded entry of ``raw`` a valid name (an old or hand-made store may hold a path):
    byte tables for the file names (millions), the pattern itself for the few splits."""
    if len(raw) == 0:
        return
    if pattern is NAME and raw.dtype.kind == "S":
        A = np.frombuffer(raw.tobytes(), np.uint8).reshape(len(raw), -1) if raw.dtype.itemsize else np.zeros((len(raw), 1), np.uint8)
        nul = A == 0
        ok = ((_NAME_BYTE[A] | nul).all(1) & (nul[:, :-1] <= nul[:, 1:]).all(1) & _FIRST_BYTE[A[:, 0]]
              & (nul[:, MAX_NAME] if A.shape[1] > MAX_NAME else True))
        bad = np.flatnonzero(~ok)
    else:
        bad = [i for i, x in enumerate(raw.tolist())
               if not (isinstance(x, bytes) and pattern.fullmatch(x.decode("ascii", "replace")))]
    if len(bad):
        raise TensorQAError(f"{path}: dataset '{name}': {raw[bad[0]]!r:.60} is not a valid name")


def image_indices_of(raw: np.ndarray, names) -> np.ndarray:
    """:func:`image_index_of` of every stored name (``raw``, fixed width) at once, compiled where numba
    is installed; a name that is not plain ``<anything>_<digits>[.<ext>]`` goes through it one by one
    (``names``: list or function)."""
    S = len(raw)
    if S == 0:
        return np.zeros(0, np.int64)
    name = names if callable(names) else names.__getitem__
    try:
        from tensorqa.scenes.image_indices import plain_image_indices
    except ImportError:  # numba is an optional extra: the per-name path
        return np.array([image_index_of(name(i)) for i in range(S)], np.int64)
    A = np.frombuffer(raw.tobytes(), np.uint8).reshape(S, -1) if raw.dtype.itemsize else np.zeros((S, 0), np.uint8)
    out, plain = plain_image_indices(A)
    for i in np.flatnonzero(~plain):  # int()'s own cases (signs, spaces, non-ASCII digits) and errors
        out[i] = image_index_of(name(i))
    return out


class StaticStore(H5Reader):
    """Read access: ``len(store)``, ``store.batch(a, b)``, ``store.scenes(a, b)``, ``store.info``."""

    def __init__(self, path: str | os.PathLike):
        self.path = p = Path(path)
        if not p.is_file():
            raise TensorQAError(f"{p}: no such file")
        try:
            self._f = h5py.File(p, "r")
        except OSError:
            raise TensorQAError(f"{p}: cannot open as HDF5 (not an HDF5 file or corrupt)") from None
        self._validated(self._open)

    def _open(self) -> None:
        p, a = self.path, self._f.attrs
        check_header(self._f, p, FORMAT, "static-scene store", FORMAT_VERSION, clevr_vocab().hash)
        S = None
        ds = {}  # each dataset opened once (an h5py lookup is ~50 us)
        for name, (dtype, rank) in _DATASETS.items():
            ds[name] = d = self._f.get(name)
            if not isinstance(d, h5py.Dataset):
                raise TensorQAError(f"{p}: missing dataset '{name}'")
            shape = d.shape
            if len(shape) != rank or (S is not None and shape[0] != S) or d.dtype.kind != np.dtype(dtype if dtype != "S" else "S1").kind:
                raise TensorQAError(f"{p}: dataset '{name}' has shape {shape} / dtype {d.dtype}, not rank {rank} {dtype} over {S} scenes")
            S = shape[0]
        self._ds = ds
        self.num_objects = ds["num_objects"][:].astype(np.int64)
        N = ds["attrs"].shape[1]
        if N > MAX_SCENE_OBJECTS or S > MAX_CLEVR_SCENES:
            raise TensorQAError(f"{p}: {S:,} scenes of up to {N:,} object slots; a store holds at most "
                                f"{MAX_CLEVR_SCENES:,} scenes of {MAX_SCENE_OBJECTS} objects (docs/reference/limits.md)")
        if (self.num_objects < 0).any() or (self.num_objects > N).any():
            raise TensorQAError(f"{p}: dataset 'num_objects' out of range 0..{N}")
        at = ds["attrs"][:]
        v = clevr_vocab()
        for k, name in enumerate(("size", "color", "material", "shape")):
            if (at[..., k] < 0).any() or (at[..., k] >= len(v.values(name))).any():
                raise TensorQAError(f"{p}: dataset 'attrs' holds a {name} id outside 0..{len(v.values(name)) - 1}")
        self._attrs = at  # read once here (validated), sliced by arrays()
        self._span: dict = {}  # dataset -> (lo, hi, rows) last read by _rows
        self.raw_image_filenames = ds["image_filename"][:]  # fixed-width bytes, decoded on first use
        self.raw_splits = ds["split"][:]
        _check_names(self.raw_image_filenames, p, "image_filename", NAME)
        _check_names(np.unique(self.raw_splits), p, "split", SPLIT)
        self.source = str(a.get("source", ""))
        info = parse_json(a.get("info_json", "{}"), p, "attribute 'info_json'")
        if not isinstance(info, dict):
            raise TensorQAError(f"{p}: attribute 'info_json' is not a JSON object")
        self.info = info

    def __len__(self) -> int:
        return len(self.num_objects)

    def scenes(self, start: int = 0, stop: int | None = None) -> list[StaticScene]:
        stop = len(self) if stop is None else min(stop, len(self))
        at = self._ds["attrs"][start:stop].astype(np.int64)
        bits = self._ds["rel_bits"][start:stop].astype(np.int64)
        co = self._ds["coords"][start:stop]
        out = []
        for k in range(stop - start):
            n, fname = int(self.num_objects[start + k]), self.image_filenames[start + k]
            rel = ((bits[k, :n, :n, None] >> np.arange(4)) & 1).astype(bool)
            out.append(StaticScene(fname, self.splits[start + k], at[k, :n], rel, co[k, :n], image_index_of(fname)))
        return out

    def arrays(self, start: int = 0, stop: int | None = None) -> dict:
        """Scenes [start, stop) as stored, padded: ``attrs`` [S, N, 4], ``rel_bits`` [S, N, N] (bit r: j
        is r of i), ``num_objects`` int64[S], the raw ``splits`` / ``image_filenames``, int64
        ``image_indices`` (for readers that need no :class:`StaticScene`)."""
        stop = len(self) if stop is None else min(stop, len(self))
        return {"attrs": self._attrs[start:stop], "rel_bits": self._rows("rel_bits", start, stop),
                "num_objects": self.num_objects[start:stop], "splits": self.raw_splits[start:stop],
                "image_filenames": self.raw_image_filenames[start:stop], "image_indices": self.image_indices[start:stop]}

    def _rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of a dataset, read as whole chunks and kept until a read leaves them
        (consecutive blocks decompress each chunk once, whatever the stored chunking)."""
        lo, hi, rows = self._span.get(name, (0, 0, None))
        if rows is None or start < lo or stop > hi:
            d = self._ds[name]
            c = d.chunks[0] if d.chunks else max(1, stop - start)
            lo, hi = start - start % c, min(len(self), -(-stop // c) * c)
            rows = d[lo:hi]
            self._span[name] = (lo, hi, rows)
        return rows[start - lo:stop - lo]

    @functools.cached_property
    def image_indices(self) -> np.ndarray:
        """int64[S] each scene's :func:`image_index_of` (on first use: only readers that need it fail)."""
        return image_indices_of(self.raw_image_filenames, lambda i: self.raw_image_filenames[i].decode())

    @functools.cached_property
    def image_filenames(self) -> tuple:
        return tuple(x.decode() for x in self.raw_image_filenames)

    @functools.cached_property
    def splits(self) -> tuple:
        return tuple(x.decode() for x in self.raw_splits)

    def batch(self, start: int, stop: int, device: str | torch.device = "cpu") -> StaticBatch:
        return StaticBatch.from_scenes(self.scenes(start, stop), device, num_objects=self._ds["attrs"].shape[1])
