"""Static scenes (CLEVR) as tensors: one place pads, like ``SceneBatch`` for videos.

A :class:`StaticScene` is one image's scene graph; :class:`StaticBatch` pads B of them to N objects::

    attrs:  int64[B, N, 4]    class ids, in CLEVR's filter order (size, color, material, shape)
    rel:    bool[B, N, N, 4]  rel[b, i, j, r]: j is in relationships[r][i] (j is r of i)
    mask:   bool[B, N]        object slot holds an object
    coords: float32[B, N, 3]  3-D coordinates (x, y, size scale)

Relations r follow :data:`RELATIONS` (left, right, behind, front).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

from tensorqa.errors import TensorQAError

if TYPE_CHECKING:  # imported where used: CLEVR's numba path runs without torch
    import torch

ATTRS = ("size", "color", "material", "shape")  # CLEVR's filter expansion order (Z, C, M, S)
PARAM_TYPES = {"Size": "size", "Color": "color", "Material": "material", "Shape": "shape"}


@dataclass(frozen=True)
class ClevrVocab:
    """CLEVR's classes (``data/clevr_properties.json``); an id is a position in the tuple."""

    size: tuple[str, ...]
    color: tuple[str, ...]
    material: tuple[str, ...]
    shape: tuple[str, ...]
    relation: tuple[str, ...]
    size_radius: dict

    def values(self, attr: str) -> tuple[str, ...]:
        return getattr(self, attr)

    def index(self, attr: str, word: str, where: str = "") -> int:
        vals = self.values(attr)
        if word not in vals:
            raise TensorQAError(f"{where or 'scene'}: unknown {attr} {word!r} (expected one of {', '.join(vals)})")
        return vals.index(word)

    def to_json(self) -> str:
        return json.dumps({k: list(getattr(self, k)) for k in ATTRS + ("relation",)}, sort_keys=True)

    @functools.cached_property
    def hash(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def clevr_vocab() -> ClevrVocab:
    d = json.loads(resources.files("tensorqa.data").joinpath("clevr_properties.json").read_text())
    return ClevrVocab(*(tuple(d[k]) for k in ATTRS + ("relation",)), size_radius=dict(d["size_radius"]))


RELATIONS = ("left", "right", "behind", "front")


@dataclass
class StaticScene:
    """One image: attrs int64[n, 4], rel bool[n, n, 4], coords float32[n, 3]."""

    image_filename: str
    split: str
    attrs: np.ndarray
    rel: np.ndarray
    coords: np.ndarray
    image_index: int = 0

    @property
    def num_objects(self) -> int:
        return len(self.attrs)

    def to_json(self) -> dict:
        """CLEVR's scene JSON fields that the generator reads (plus coordinates)."""
        v = clevr_vocab()
        objects = [{a: v.values(a)[int(self.attrs[i, k])] for k, a in enumerate(ATTRS)}
                   | {"3d_coords": [float(c) for c in self.coords[i]]} for i in range(self.num_objects)]
        rels = {r: [[int(j) for j in np.flatnonzero(self.rel[i, :, k])] for i in range(self.num_objects)]
                for k, r in enumerate(RELATIONS)}
        return {"split": self.split, "image_index": self.image_index, "image_filename": self.image_filename,
                "objects": objects, "relationships": rels}


@dataclass
class StaticBatch:
    """B padded scenes (see the module docstring for shapes)."""

    attrs: torch.Tensor
    rel: torch.Tensor
    mask: torch.Tensor
    coords: torch.Tensor
    image_filenames: tuple[str, ...]
    splits: tuple[str, ...]
    image_indices: torch.Tensor  # int64[B]

    @staticmethod
    def from_scenes(scenes: list[StaticScene], device: str | torch.device = "cpu", num_objects: int | None = None) -> "StaticBatch":
        import torch  # here: CLEVR's numba path reads the store without torch

        B = len(scenes)
        N = num_objects or max([s.num_objects for s in scenes] + [1])
        attrs = np.zeros((B, N, 4), np.int64)
        rel = np.zeros((B, N, N, 4), bool)
        mask = np.zeros((B, N), bool)
        coords = np.zeros((B, N, 3), np.float32)
        for b, s in enumerate(scenes):
            n = s.num_objects
            attrs[b, :n], rel[b, :n, :n], mask[b, :n], coords[b, :n] = s.attrs, s.rel, True, s.coords
        return StaticBatch(torch.from_numpy(attrs).to(device), torch.from_numpy(rel).to(device),
                           torch.from_numpy(mask).to(device), torch.from_numpy(coords).to(device),
                           tuple(s.image_filename for s in scenes), tuple(s.split for s in scenes),
                           torch.tensor([s.image_index for s in scenes], dtype=torch.int64, device=device))

    def __len__(self) -> int:
        return self.attrs.shape[0]

    def select(self, rows: torch.Tensor) -> "StaticBatch":
        """The scenes at ``rows`` (int64[b]), same padding."""
        r = rows.tolist()
        return StaticBatch(self.attrs[rows], self.rel[rows], self.mask[rows], self.coords[rows],
                           tuple(self.image_filenames[i] for i in r), tuple(self.splits[i] for i in r), self.image_indices[rows])

    def scene(self, b: int) -> StaticScene:
        n = int(self.mask[b].sum())
        return StaticScene(self.image_filenames[b], self.splits[b], self.attrs[b, :n].cpu().numpy(),
                           self.rel[b, :n, :n].cpu().numpy(), self.coords[b, :n].cpu().numpy(),
                           int(self.image_indices[b]))


def image_index_of(filename: str, where: str = "") -> int:
    """CLEVR's image_index: the last ``_`` field of the file name, without extension, in
    0..MAX_IMAGE_INDEX (stored as int64)."""
    from tensorqa.limits import MAX_IMAGE_INDEX

    stem = filename.rsplit(".", 1)[0]
    field = stem.rsplit("_", 1)[-1]
    place = f"{where}: " if where else ""
    try:
        index = int(field) if len(field) <= 40 else None
    except ValueError:
        index = None
    if index is None:
        raise TensorQAError(f"{place}{filename!r:.80}: image_filename has no numeric last '_' field (CLEVR_<split>_%06d.png)")
    if not 0 <= index <= MAX_IMAGE_INDEX:
        raise TensorQAError(f"{place}{filename!r:.80}: image index {field} is outside 0..{MAX_IMAGE_INDEX}")
    return index
