"""CLEVR's filter keys as tables: every key (size, color, material, shape, each possibly
unspecified), which objects of a scene each matches, and counting on bool tables and bit sets."""

from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING

import numpy as np

from tensorqa.scenes.static_batch import ATTRS, clevr_vocab

if TYPE_CHECKING:  # the functions import torch: the numba backend reads key_table without it
    import torch


@functools.cache
def key_table() -> np.ndarray:
    """int64[K, 4]: every filter key, -1 = unspecified, size slowest (K = 3 * 9 * 3 * 4 = 324); the one
    table of keys (the torch grid, the numba backend's scene bits, the foils). Read-only."""
    v = clevr_vocab()
    axes = [range(-1, len(v.values(a))) for a in ATTRS]
    t = np.array(list(itertools.product(*axes)), dtype=np.int64)
    t.flags.writeable = False
    return t


def all_keys() -> torch.Tensor:
    """:func:`key_table` as a torch tensor (a copy)."""
    import torch

    return torch.tensor(key_table())


def scene_match(attrs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """attrs int64[B, N, 4], mask bool[B, N] -> float32[B, N, K]: object n satisfies key k (the keys of
    :func:`all_keys`). Built as the outer AND of one table per attribute whose column 0 is "unspecified"."""
    import torch

    v = clevr_vocab()
    B, N = mask.shape
    tables = []
    for a, name in enumerate(ATTRS):
        n = len(v.values(name))
        t = torch.ones(B, N, n + 1, dtype=torch.bool, device=attrs.device)
        t[..., 1:] = attrs[..., a, None] == torch.arange(n, device=attrs.device)
        tables.append(t)
    s, c, m, h = tables
    out = s[..., :, None, None, None] & c[..., None, :, None, None] & m[..., None, None, :, None] & h[..., None, None, None, :]
    return (out.reshape(B, N, -1) & mask[..., None]).float()
