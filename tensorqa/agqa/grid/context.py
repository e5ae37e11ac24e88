"""What every skeleton evaluated on one batch shares (``GridContext``): windows, compact axes, the
window x object x relation contraction, first / last episodes, compare windows."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.filter import any_along
from tensorqa.engine.primitives.localize import Windows, compact, present_actions
from tensorqa.agqa.semantics import AGQA, Semantics, get_semantics
from tensorqa.scenes.batch import SceneBatch


class GridContext:
    """Per-batch intermediates shared by the skeletons evaluated on one batch, computed on first use
    through the registry as it stands then (build a new context after changing it)."""

    def __init__(self, batch: SceneBatch, semantics: Semantics | str = AGQA):
        self.batch = batch
        self.semantics = get_semantics(semantics)
        self._cache: dict[str, object] = {}

    def cached(self, key: str, make):
        """The value cached under ``key`` on this batch, made by ``make()`` on first use."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def windows(self) -> Windows:
        return self.cached("windows", lambda: registry.lookup("localize")(self.batch, self.semantics))

    @property
    def rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(video int64[V], window int64[V]): the offered windows of the batch, video by video."""
        return self.cached("rows", lambda: self.windows.valid.nonzero(as_tuple=True))

    @property
    def flat(self) -> Windows:
        """The offered windows in the flat layout [V] (``Windows.rows``), in ``rows`` order."""
        return self.cached("flat", lambda: self.windows.rows())

    @property
    def act(self) -> torch.Tensor:
        """bool[B, F, A]: action class a is going on at keyframe f."""
        return self.cached("act", lambda: self.batch.act)

    @property
    def actions(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(ids int64[B, K], valid bool[B, K]): the action classes present (compact axis)."""
        return self.cached("actions", lambda: present_actions(self.batch))

    @property
    def compare(self):
        """Compare windows of the present action classes."""
        return self.cached("compare", lambda: registry.lookup("compare_windows")(self.batch, self.actions[0], self.semantics))

    def axes(self, domain: str) -> "RelationAxes":
        """The object and relation axes of ``domain`` ("present": compact axes of the objects and
        relations that occur in each video; "all": the whole vocabularies) and the scene's
        relations on them."""
        def make() -> RelationAxes:
            b = self.batch
            frames = b.frame_mask[:, :, None, None]
            if domain == "all":
                rel = b.rel & frames
                oids, ovalid = all_axis(b, rel.shape[2])
                rids, rvalid = all_axis(b, rel.shape[3])
            else:
                oids, ovalid = compact(registry.lookup("present_objects")(b))
                rids, rvalid = compact(registry.lookup("present_relations")(b))
                # gather the compact axes first: the masks then apply to the (~10x) smaller tensor
                rel = gather_axis(gather_axis(b.rel, 2, oids), 3, rids)
                rel = rel & (frames & ovalid[:, None, :, None] & rvalid[:, None, None, :])
            return RelationAxes(rel, any_along(rel, 2), oids, ovalid, rids, rvalid)
        return self.cached("axes/" + domain, make)

    def relate(self, domain: str) -> torch.Tensor:
        """bool[B, W, Ko, Kr]: the relation holds with the object somewhere in the window (the
        per-video window axis of ``windows``; the matmul contraction of ``primitives.relate``)."""
        return self.cached("relate/" + domain, lambda: registry.lookup("relate")(self.axes(domain).rel, self.windows))

    def relate_rows(self, domain: str) -> torch.Tensor:
        """bool[V, Ko, Kr]: :meth:`relate` on the flat rows (``rows`` order), computed on them
        directly: the padded [B, W] layout is ~5x larger (a few videos have hundreds of windows)."""
        return self.cached("relate_rows/" + domain, lambda: registry.lookup("relate")(self.axes(domain).rel, self.flat))

    def episodes(self, domain: str, forward: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(object id int64[V, Kr], defined bool[V, Kr]) of objFirst (forward) / objLast, shared by
        the query and verify templates."""
        def make():
            ax = self.axes(domain)
            episode = registry.lookup("first_episode" if forward else "last_episode")
            objects, ok = episode(ax.occurs, ax.rel, self.flat, self.semantics)
            pos, one = registry.lookup("only_item")(objects.transpose(-1, -2))  # [V, Kr]
            return ids_at(ax.oids, self.flat.video, pos), ok & one
        return self.cached(f"episodes/{domain}/{forward}", make)


@dataclass(frozen=True)
class RelationAxes:
    """A video's relations on an object axis and a relation axis.

    rel:    bool[B, F, Ko, Kr]  (padded keyframes and padded axis entries cleared)
    occurs: bool[B, F, Kr]      the relation holds with some object at keyframe f
    oids, rids: int64[B, Ko] / [B, Kr] object / relation id of each position (-1 = padding)
    ovalid, rvalid: bool, the position is real
    """

    rel: torch.Tensor
    occurs: torch.Tensor
    oids: torch.Tensor
    ovalid: torch.Tensor
    rids: torch.Tensor
    rvalid: torch.Tensor


def all_axis(batch: SceneBatch, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.arange(n, device=batch.device).expand(len(batch), n)
    return ids, torch.ones_like(ids, dtype=torch.bool)


def gather_axis(t: torch.Tensor, dim: int, ids: torch.Tensor) -> torch.Tensor:
    """Select positions ids int64[n0, K] (-1 = padding) along ``dim`` of t [n0, ...]."""
    shape = list(t.shape)
    shape[dim] = ids.shape[1]
    view = [ids.shape[0]] + [1] * (t.dim() - 1)
    view[dim] = ids.shape[1]
    return t.gather(dim, ids.clamp(min=0).reshape(view).expand(shape))


def ids_at(ids: torch.Tensor, video: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """ids[video[v], pos[v, ...]]: ids int64[B, K], video int64[V], pos int64[V, ...]."""
    V = pos.shape[0]
    return ids[video].gather(1, pos.reshape(V, -1).clamp(min=0)).reshape(pos.shape)
