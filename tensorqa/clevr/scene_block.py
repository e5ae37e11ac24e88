"""A block of CLEVR scenes as the torch grid reads it: :class:`SceneTables` (what every template of
the block shares: the key-match table, key counts, cached option classes) and :class:`Block` (the
scenes repeated over M draws, with the draws' uniforms from engine.rng's ``clevr.draw`` stream)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import torch

from tensorqa.clevr.constants import KEY_RADIX, MAX_OBJECTS
from tensorqa.clevr.keys import all_keys, scene_match
from tensorqa.engine import rng
from tensorqa.scenes.static_batch import StaticBatch


# uint8[65536]: the set bits of every 16-bit value
POPCOUNT16 = torch.from_numpy(np.unpackbits(np.arange(1 << 16, dtype=np.uint16).view(np.uint8)).reshape(-1, 16).sum(
    1, dtype=np.uint8))


def count_true(x: torch.Tensor) -> torch.Tensor:
    """int64[...]: the true entries of bool[..., K] along the last axis, summing the bytes four at a time
    as int32 words (each byte lane stays below 256 for K < 1024): far faster than a bool sum on the CPU."""
    K = x.shape[-1]
    if K == 0 or K % 4 or K >= 1024 or not x.is_contiguous() or x.storage_offset() % 4:
        return x.sum(-1)
    w = x.view(torch.int32).sum(-1, dtype=torch.int32)
    return ((w & 255) + ((w >> 8) & 255) + ((w >> 16) & 255) + ((w >> 24) & 255)).long()


@dataclass
class SceneTables:
    """What every template of a block of scenes shares: the key-match table, per-scene key counts and
    the option classes of the filter nodes whose input is the scene, one object or ``same_<attr>`` of
    one object (most of them), once per block and kind of node."""

    attrs: torch.Tensor  # int64[S, N, 4]
    rel: torch.Tensor  # bool[S, N, N, 4]
    mask: torch.Tensor  # bool[S, N]
    match: torch.Tensor  # float32[S, N, K]
    counts: torch.Tensor  # float32[S, K]: objects of each scene that match each key
    classes: dict = field(default_factory=dict)

    @functools.cached_property
    def key_bits(self) -> torch.Tensor:
        """int64[S, K]: the objects each key matches, as bits (object n = bit n)."""
        N = self.mask.shape[1]
        return (self.match.long() << torch.arange(N, device=self.mask.device)[:, None]).sum(1)

    @functools.cached_property
    def object_row(self) -> torch.Tensor:
        """int64[S x N]: each (scene, object slot)'s row among the block's real objects (-1: padding)."""
        real = self.mask.flatten()
        return torch.where(real, real.long().cumsum(0) - 1, -1)

    @staticmethod
    def of(batch: StaticBatch) -> "SceneTables":
        match = scene_match(batch.attrs, batch.mask)
        return SceneTables(batch.attrs, batch.rel, batch.mask, match, match.sum(1))


@dataclass
class Block:
    """Scene tensors repeated over M draws: attrs int64[P, N, 4], rel bool[P, N, N, 4], mask bool[P, N];
    ``tables`` the block's :class:`SceneTables`, ``scene_idx`` int64[B] each scene's row there."""

    B: int
    M: int
    attrs: torch.Tensor
    rel: torch.Tensor
    mask: torch.Tensor
    tables: SceneTables
    scene_idx: torch.Tensor
    keys: torch.Tensor
    scene_pos: torch.Tensor  # int64[B] global scene positions
    seed: int
    first_draw: int = 0  # the rows are draws first_draw ... first_draw + M - 1 of each scene

    @staticmethod
    def build(batch: StaticBatch, scene_pos: torch.Tensor, M: int, seed: int, tables: SceneTables | None = None,
              scene_idx: torch.Tensor | None = None, first_draw: int = 0) -> "Block":
        """``tables``: those of the scenes ``batch`` was selected from (at ``scene_idx``); else built."""
        keys = all_keys().to(batch.attrs.device)
        if tables is None:
            tables, scene_idx = SceneTables.of(batch), torch.arange(len(batch), device=batch.attrs.device)
        rep = lambda t: t.repeat_interleave(M, 0)  # noqa: E731
        return Block(len(batch), M, rep(batch.attrs), rep(batch.rel), rep(batch.mask), tables, scene_idx, keys,
                     scene_pos, seed, first_draw)

    @property
    def P(self) -> int:
        return self.B * self.M

    def key_match(self, params: list) -> torch.Tensor:
        """bool[P, N]: the objects of each row's scene that match its filter key, given as (value int64[P]
        (-1 unspecified), attribute) pairs (attributes not given: unspecified)."""
        idx = torch.zeros(self.P, dtype=torch.int64, device=self.mask.device)
        given = {a: v for v, a in params}
        for a, n in enumerate(KEY_RADIX):
            idx = idx * n + (given[a] + 1 if a in given else 0)
        scene = self.scene_idx[self.row_scene]
        N = self.mask.shape[1]
        if N > MAX_OBJECTS:
            return self.tables.match[scene, :, idx] > 0
        bits = self.tables.key_bits[scene, idx]
        return ((bits[:, None] >> torch.arange(N, device=bits.device)) & 1).bool()

    @property
    def row_scene(self) -> torch.Tensor:
        """int64[P]: the block scene of each row."""
        return torch.arange(self.P, device=self.mask.device) // self.M

    def uniforms(self, template_id: int, node: int) -> torch.Tensor:
        """float64[P] in (0, 1): engine.rng's ``clevr.draw`` stream at (scene, template, node, draw)."""
        dev = self.attrs.device
        draw = torch.arange(self.first_draw, self.first_draw + self.M, device=dev).repeat(self.B)
        scene = self.scene_pos.to(dev).repeat_interleave(self.M)
        return rng.unit_torch(rng.derive_torch(self.seed, "clevr.draw", scene, template_id, node, draw))
