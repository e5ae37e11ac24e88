"""Exists / HasItem: membership tests over sets bool[..., K]."""

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
