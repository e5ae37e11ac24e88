"""Count: the size of a set (AGQA's retired count templates; kept for decomposition and ablation)."""

from __future__ import annotations

import torch

from tensorqa.engine.primitives.registry import register


@register("count")
def count(items: torch.Tensor) -> torch.Tensor:
    """int64[...]: number of members of the set items bool[..., K]."""
    return items.count_nonzero(-1)
