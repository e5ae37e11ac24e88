"""CLEVR's functions (``metadata.json``) as vectorized primitives over static-scene rows.

P rows (a scene, or one grid cell of a scene). Value kinds and their tensors:

    set     bool[P, N]   object o is in the set (padding slots never are)
    object  int64[P]     object index, -1 where ``unique`` failed (CLEVR's '__INVALID__')
    int     int64[P]     bool bool[P]     attribute value int64[P] (class id, -1 = invalid)

Scene tensors: ``attrs`` int64[P, N, 4] (size, color, material, shape), ``rel`` bool[P, N, N, 4]
(``rel[p, i, j, r]``: j is in relationships[r][i]), ``mask`` bool[P, N]. Registered as
``clevr_<function>``; the scalar twins (``engine/scalar/static.py``) register under the same names.
"""

from __future__ import annotations

import torch

from tensorqa.engine.primitives.registry import register

ATTR_INDEX = {"size": 0, "color": 1, "material": 2, "shape": 3}


def _rows(p: int, device) -> torch.Tensor:
    return torch.arange(p, device=device)


@register("clevr_scene")
def scene(mask: torch.Tensor) -> torch.Tensor:
    """mask bool[P, N] -> set bool[P, N]: every object."""
    return mask.clone()


def _filter(k: int):
    def filter_attr(s: torch.Tensor, attrs: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        """set bool[P, N], attrs int64[P, N, 4], value int64[P] -> set: objects whose attribute is value."""
        return s & (attrs[..., k] == value[:, None])
    return filter_attr


def filter_key(s: torch.Tensor, attrs: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """set bool[P, N], key int64[P, 4] (-1 = no filter on that attribute) -> set: the chain of
    filter_size/color/material/shape a template ``filter*`` node expands to."""
    ok = (key[:, None, :] < 0) | (attrs == key[:, None, :])
    return s & ok.all(-1)


@register("clevr_unique")
def unique(s: torch.Tensor) -> torch.Tensor:
    """set bool[P, N] -> object int64[P]: the sole member, -1 unless exactly one."""
    one = s.sum(-1) == 1
    return torch.where(one, s.to(torch.int8).argmax(-1), torch.full_like(one, -1, dtype=torch.int64))


@register("clevr_relate")
def relate(obj: torch.Tensor, rel: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """object int64[P], rel bool[P, N, N, 4], r int64[P] -> set: relationships[r][obj] (never obj)."""
    P = obj.shape[0]
    rows = _rows(P, obj.device)
    out = rel[rows, obj.clamp(min=0), :, r.clamp(min=0)]
    return out & (obj >= 0)[:, None]


def _same(k: int):
    def same_attr(obj: torch.Tensor, attrs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """object int64[P] -> set: every other object with an equal attribute."""
        P, N = mask.shape
        rows = _rows(P, obj.device)
        o = obj.clamp(min=0)
        v = attrs[rows, o, k]
        out = mask & (attrs[..., k] == v[:, None])
        out[rows, o] = False
        return out & (obj >= 0)[:, None]
    return same_attr


@register("clevr_union")
def union(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a | b


@register("clevr_intersect")
def intersect(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a & b


@register("clevr_count")
def count(s: torch.Tensor) -> torch.Tensor:
    """set bool[P, N] -> int64[P]."""
    return s.sum(-1)


@register("clevr_exist")
def exist(s: torch.Tensor) -> torch.Tensor:
    """set bool[P, N] -> bool[P]."""
    return s.any(-1)


def _query(k: int):
    def query_attr(obj: torch.Tensor, attrs: torch.Tensor) -> torch.Tensor:
        """object int64[P] -> attribute id int64[P] (-1 where obj is -1)."""
        rows = _rows(obj.shape[0], obj.device)
        v = attrs[rows, obj.clamp(min=0), k]
        return torch.where(obj >= 0, v, torch.full_like(v, -1))
    return query_attr


def _equal(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """x[P], x[P] -> bool[P]: a == b."""
    return a == b


@register("clevr_less_than")
def less_than(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a < b


@register("clevr_greater_than")
def greater_than(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a > b


for _a, _k in ATTR_INDEX.items():
    register(f"clevr_filter_{_a}")(_filter(_k))
    register(f"clevr_same_{_a}")(_same(_k))
    register(f"clevr_query_{_a}")(_query(_k))
    register(f"clevr_equal_{_a}")(_equal)
register("clevr_equal_integer")(_equal)
register("clevr_equal_object")(_equal)

