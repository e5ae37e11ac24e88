"""Exists / HasItem, Count, Query / OnlyItem, Choose, Equals, AND, XOR over answer grids: sets bool[..., K],
items int64 ids. Count is kept from AGQA's retired count templates, for decomposition and ablation."""

from __future__ import annotations

import numpy as np
import torch

from tensorqa.engine.primitives.registry import register


@register("exists", aliases=("Exists",))
def exists(items: torch.Tensor, which: torch.Tensor | None = None) -> torch.Tensor:
    """bool[..., M]: item ``which[..., m]`` (int64, broadcastable) is in the set items bool[..., K]; with
    ``which`` None every item is asked about: the set itself is the answer grid."""
    if which is None:
        return items
    lead = np.broadcast_shapes(items.shape[:-1], which.shape[:-1])  # torch's imports sympy on first use
    return items.expand(*lead, items.shape[-1]).gather(-1, which.expand(*lead, which.shape[-1]).clamp(min=0))


@register("has_item", aliases=("HasItem",))
def has_item(items: torch.Tensor) -> torch.Tensor:
    """bool[...]: the set items bool[..., K] is not empty."""
    return items.any(-1)


@register("count")
def count(items: torch.Tensor) -> torch.Tensor:
    """int64[...]: number of members of the set items bool[..., K]."""
    return items.count_nonzero(-1)


@register("only_item", aliases=("OnlyItem", "Query"))
def only_item(items: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The single member of a set: items bool[..., K] -> (index int64[...], 0 where undefined; defined bool[...])."""
    K = items.shape[-1]
    # one small matmul gives both the member count and, for one member, its index (a reduction
    # over a short last axis is far slower on CPUs); float32 is exact for these integers
    weights = torch.stack([torch.ones(K), torch.arange(K, dtype=torch.float32)], 1).to(items.device)
    count_index = items.to(torch.float32) @ weights  # [..., 2]
    defined = count_index[..., 0] == 1
    return torch.where(defined, count_index[..., 1].long(), 0), defined


@register("choose")
def choose(first_in: torch.Tensor, second_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """AGQA's README Choose: membership first_in, second_in bool[...] of two items -> (pick bool[...]: the first,
    defined: exactly one is in the set). The AGQA templates answer Choose with ``first_last.choose_episode``."""
    return first_in, first_in != second_in


@register("equals", aliases=("Equals",))
def equals(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a == b


@register("and", aliases=("AND",))
def and_(a: torch.Tensor, b: torch.Tensor, semantics=None) -> torch.Tensor:
    """``semantics`` is unread: and / xor take the same arguments, so that either ablates into the other."""
    return a & b


@register("xor", aliases=("XOR",))
def xor(a: torch.Tensor, b: torch.Tensor, semantics) -> torch.Tensor:
    """bool[...]: AGQA's XOR, "a and not b" (``semantics.xor_is_and_not``), else exclusive or."""
    return (a & ~b) if semantics.xor_is_and_not else (a ^ b)
