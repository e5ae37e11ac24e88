"""Frame sets: localization windows (docs/reference/agqa_semantics.md §a.1) and compare windows (§a.2).

A window is a contiguous run of keyframes: a range ``[start, stop)`` (for gathers) and a mask
``bool[B, W, F]`` (for contractions). The window axis is compact per video: the whole video, then
before / after / while X per present class X, then between X and Y per ordered pair, the offered
ones packed left (1 + 3k + k^2 candidates for k classes; a dense 157^2 grid would not fit).
Instances without keyframes are ignored everywhere, as in AGQA's graph.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from einops import rearrange, repeat

from tensorqa.scenes.batch import SceneBatch, by_identity
from tensorqa.scenes.vocab import vocab
from tensorqa.engine.primitives.registry import ablation, register
from tensorqa.engine.windows import WINDOW_KINDS

# Window kinds (Windows.word indexes WINDOW_KINDS): the temporal words, "video" for the whole video.
VIDEO, BEFORE, AFTER, WHILE, BETWEEN = range(5)


@dataclass(frozen=True)
class Windows:
    """A window axis: compact per video [B, W] (``localize``) or flat [V] (:meth:`rows`, what the
    grid evaluates on; drop W from the shapes below).

    mask:   bool[B, W, F]   keyframe f lies in window w (False on padding)
    start:  int64[B, W]     position of the window's first keyframe
    stop:   int64[B, W]     one past its last keyframe (``start == stop``: empty, or padding)
    kind:   int64[B, W]     VIDEO / BEFORE / AFTER / WHILE / BETWEEN: the frames' rule
    action: int64[B, W, 2]  action class of X (and of Y for between); -1 when unused
    valid:  bool[B, W]      the window is offered (§a.1) and real (not padding)
    word:   int64[B, W]     the temporal word the program says (``kind`` unless ablated)
    video:  int64[B, 1]     each window's batch position, broadcastable to ``start`` ([V] flat)
    """

    mask: torch.Tensor
    start: torch.Tensor
    stop: torch.Tensor
    kind: torch.Tensor
    action: torch.Tensor
    valid: torch.Tensor
    word: torch.Tensor
    video: torch.Tensor

    @property
    def num_windows(self) -> int:
        return self.kind.shape[-1]

    @property
    def flat(self) -> bool:
        return self.start.dim() == 1

    def nonempty(self) -> torch.Tensor:
        """bool[B, W]: the window holds at least one keyframe."""
        return self.stop > self.start

    def to(self, device: str | torch.device) -> "Windows":
        return Windows(*(getattr(self, f.name).to(device) for f in fields(self)))

    def rows(self) -> "Windows":
        """The flat layout: one row per offered window, in ``valid.nonzero()`` order."""
        b, w = self.valid.nonzero(as_tuple=True)
        return Windows(*(getattr(self, f.name)[b, w] for f in fields(self)[:-1]), b)


def interval_mask(start: torch.Tensor, stop: torch.Tensor, num_frames: int) -> torch.Tensor:
    """bool[..., F]: keyframe positions in ``[start, stop)``; start, stop int64[...]."""
    pos = torch.arange(num_frames, device=start.device)
    return (pos >= start[..., None]) & (pos < stop[..., None])


def compact(present: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """present bool[B, X] -> (ids int64[B, K], valid bool[B, K]): each row's True positions packed
    left (ascending), padded with -1; K = the largest row count."""
    B, X = present.shape
    pos = torch.arange(X, device=present.device).expand(B, X)
    key = torch.where(present, pos, pos + X)  # present entries first, each group in id order
    K = int(present.sum(1).max()) if B and X else 0
    ids = key.sort(dim=1).values[:, :K]
    valid = ids < X
    return torch.where(valid, ids, torch.full_like(ids, -1)), valid


# -- action instances ---------------------------------------------------------------------------------
def instance_frames(batch: SceneBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(first int64[B, N], last int64[B, N], has bool[B, N]): each instance's first and last
    keyframe (start <= secs <= end) and whether it has any; once per batch."""
    return batch.derived("instance_frames", lambda: _instance_frames(batch))


def _instance_frames(batch: SceneBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    inside = batch.inst_frames  # [B, N, F]
    B, N, F = inside.shape
    has = inside.any(-1)
    if F == 0:
        zero = torch.zeros(B, N, dtype=torch.long, device=batch.device)
        return zero, zero, has
    return (*_first_last(inside), has)


def _first_last(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(first, last) int64[...]: the first and last True position along the last axis of mask bool[..., N > 0]."""
    u8 = mask.to(torch.uint8)
    return u8.argmax(-1), mask.shape[-1] - 1 - u8.flip(-1).argmax(-1)  # argmax: the first maximal position


def real_instances(batch: SceneBatch) -> torch.Tensor:
    """bool[B, N]: the instance is real and has at least one keyframe (AGQA ignores the others)."""
    return batch.inst_frames.any(-1)


def present_actions(batch: SceneBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids int64[B, K], valid bool[B, K]): the classes each video has an instance of (with
    keyframes), ascending, padded with -1; once per batch (sizing K waits for the device)."""
    return batch.derived("present_actions", lambda: _present_actions(batch))


def _present_actions(batch: SceneBatch) -> tuple[torch.Tensor, torch.Tensor]:
    A = vocab().num_actions
    B = len(batch)
    present = torch.zeros(B, A + 1, dtype=torch.bool, device=batch.device)
    cls = torch.where(real_instances(batch), batch.inst_cls, torch.full_like(batch.inst_cls, A))
    present.scatter_(1, cls, True)
    return compact(present[:, :A])


@dataclass(frozen=True)
class ClassInstances:
    """Per (video, class) facts about the instances of classes ``ids`` [B, K]:

    count:           int64[B, K]  instances (with keyframes) of the class
    first_inst:      int64[B, K]  index n of the first one (instance order: start, end, class)
    last_inst:       int64[B, K]  index of the last one
    first_kf0, last_kf0: int64[B, K]  first / last keyframe of the FIRST instance
    first_kf1, last_kf1: int64[B, K]  first / last keyframe of the LAST instance
    Entries are meaningless where count == 0.
    """

    count: torch.Tensor
    first_inst: torch.Tensor
    last_inst: torch.Tensor
    first_kf0: torch.Tensor
    last_kf0: torch.Tensor
    first_kf1: torch.Tensor
    last_kf1: torch.Tensor


def class_instances(batch: SceneBatch, ids: torch.Tensor) -> ClassInstances:
    """Instances of the classes ``ids`` int64[B, K] (-1 = none), kept with the batch per ``ids``
    tensor by identity (every caller passes the same ``present_actions`` ids)."""
    return by_identity(batch.derived("class_instances", list), (ids,), lambda: _class_instances(batch, ids))


def _class_instances(batch: SceneBatch, ids: torch.Tensor) -> ClassInstances:
    kf_first, kf_last, kf_has = instance_frames(batch)
    match = (batch.inst_cls[:, None, :] == ids[:, :, None]) & kf_has[:, None, :]  # [B, K, N]
    N = match.shape[-1]
    count = match.sum(-1)
    if N == 0:
        z = torch.zeros(ids.shape, dtype=torch.long, device=ids.device)
        return ClassInstances(count, z, z, z, z, z, z)
    first_inst, last_inst = _first_last(match)
    return ClassInstances(
        count=count, first_inst=first_inst, last_inst=last_inst,
        first_kf0=kf_first.gather(1, first_inst), last_kf0=kf_last.gather(1, first_inst),
        first_kf1=kf_first.gather(1, last_inst), last_kf1=kf_last.gather(1, last_inst),
    )


def _localizes(ids: torch.Tensor, semantics) -> torch.Tensor:
    """bool[B, K]: class ``ids`` may localize (not in ``semantics.never_localize``)."""
    banned = torch.tensor([vocab().action_index(a) for a in semantics.never_localize], dtype=ids.dtype, device=ids.device)
    return (ids >= 0) & ~torch.isin(ids, banned)


def window_frames(kind: int, ci_x: ClassInstances, ci_y: ClassInstances | None, num_frames: torch.Tensor,
                  semantics) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(start, stop, offered) int64/bool[...] of the ``kind`` window around X (and Y); ci_x, ci_y:
    :class:`ClassInstances` of one shape; num_frames: int64, broadcastable."""
    has_x = ci_x.count > 0
    zero = torch.zeros_like(ci_x.count)
    nf = num_frames.expand_as(zero)
    if kind == VIDEO:
        return zero, nf, torch.ones_like(has_x)
    first, last = ci_x.first_kf0, ci_x.last_kf0
    if kind == BEFORE:
        stop = first + 1 if semantics.localize_before_includes_x else first
        return zero, stop, has_x & (first > 0)
    if kind == AFTER:
        return last + 1, nf, has_x & (last + 1 < nf)
    if kind == WHILE:
        return first, last + 1, has_x
    # between: after X's (last or first) instance, before Y's first instance; never when empty
    x_last = ci_x.last_kf1 if semantics.between_x_instance == "last" else ci_x.last_kf0
    start, stop = x_last + 1, ci_y.first_kf0
    offered = has_x & (ci_y.count > 0) & (stop > start) & bool(semantics.between_enabled)
    return start, stop, offered


# -- localization windows (§a.1) ------------------------------------------------------------------------
@register("localize", aliases=("Localize",))
def localize(batch: SceneBatch, semantics) -> Windows:
    """Every offered localization window of every video (§a.1), compact: W >= 1 (the whole video
    is always offered, empty in a video without keyframes)."""
    dev = batch.device
    B, F = batch.frame_mask.shape
    nf = batch.frame_mask.sum(1)[:, None]  # [B, 1]
    ids, _ = present_actions(batch)  # [B, K]
    K = ids.shape[1]
    ci = class_instances(batch, ids)
    loc = _localizes(ids, semantics)

    per_class = [window_frames(k, ci, None, nf, semantics) for k in (BEFORE, AFTER, WHILE)]  # 3 x (s, e, ok)[B, K]
    # between X (row) and Y (column): [B, K, K]
    as_x = lambda t: repeat(t, "b x -> b x y", y=K)  # noqa: E731
    as_y = lambda t: repeat(t, "b y -> b x y", x=K)  # noqa: E731
    ci_x = ClassInstances(*(as_x(getattr(ci, f.name)) for f in fields(ci)))
    ci_y = ClassInstances(*(as_y(getattr(ci, f.name)) for f in fields(ci)))
    bs, be, bok = window_frames(BETWEEN, ci_x, ci_y, nf[:, :, None], semantics)
    bok = bok & as_x(loc) & as_y(loc)

    # candidates [B, 1 + 3K + K^2] in the documented order: the video, then per class its
    # before / after / while, then the (x, y) pairs of between
    one_action = lambda parts: rearrange(parts, "kind b k -> b (k kind)")  # noqa: E731
    pairs = lambda t: rearrange(t, "b x y -> b (x y)")  # noqa: E731
    start = torch.cat([torch.zeros(B, 1, dtype=torch.long, device=dev), one_action([p[0] for p in per_class]),
                       pairs(bs)], 1)
    stop = torch.cat([nf, one_action([p[1] for p in per_class]), pairs(be)], 1)
    valid = torch.cat([torch.ones(B, 1, dtype=torch.bool, device=dev), one_action([p[2] & loc for p in per_class]),
                       pairs(bok)], 1)
    kinds = torch.tensor([BEFORE, AFTER, WHILE], device=dev)
    kind = torch.cat([torch.full((B, 1), VIDEO, device=dev), repeat(kinds, "kind -> b (k kind)", b=B, k=K),
                      torch.full((B, K * K), BETWEEN, device=dev)], 1)
    single = repeat(torch.stack([ids, torch.full_like(ids, -1)], -1), "b k two -> b (k kind) two", kind=3)
    xy = torch.stack([pairs(as_x(ids)), pairs(as_y(ids))], -1)
    action = torch.cat([torch.full((B, 1, 2), -1, device=dev), single, xy], 1)

    # pack the offered windows to the left (stable), pad to the largest count
    idx, keep = compact(valid)
    g = idx.clamp(min=0)
    start, stop, kind = (torch.where(keep, t.gather(1, g), 0) for t in (start, stop, kind))
    action = torch.where(keep[..., None], action.gather(1, g[..., None].expand(-1, -1, 2)), -1)
    windows = Windows(interval_mask(start, stop, F), start, stop, kind, action, keep, kind,
                      torch.arange(B, device=dev)[:, None])
    return _ablate(batch, windows, semantics)


def _ablate(batch: SceneBatch, w: Windows, semantics) -> Windows:
    """The registry's temporal ablations: a window asked as ``word`` reads the frames of
    ``ablation(word)`` around the same action(s); ``valid``, ``word`` and ``action`` stay."""
    swaps = {k: WINDOW_KINDS.index(ablation(name)) for k, name in enumerate(WINDOW_KINDS)
             if ablation(name) != name}
    if not swaps:
        return w
    F = batch.frame_mask.shape[1]
    nf = batch.frame_mask.sum(1)[:, None]
    ci_x = class_instances(batch, w.action[..., 0])
    ci_y = class_instances(batch, w.action[..., 1])
    start, stop, kind = w.start, w.stop, w.kind
    for src, dst in swaps.items():
        s, e, _ = window_frames(dst, ci_x, ci_y, nf, semantics)
        hit = (w.word == src) & w.valid
        start = torch.where(hit, s, start)
        stop = torch.where(hit, torch.maximum(e, s), stop)
        kind = torch.where(hit, dst, kind)
    return Windows(interval_mask(start, stop, F), start, stop, kind, w.action, w.valid, w.word, w.video)


# -- compare windows (§a.2) --------------------------------------------------------------------------------
@dataclass(frozen=True)
class CompareWindows:
    """Before / during / after frame ranges of action classes ``ids`` [B, K].

    before_stop, after_start: int64[B, K]  (:func:`compare_bounds`)
    first, last: int64[B, K]  X's first and last keyframe (during = [first, last])
    single:      bool[B, K]   X has exactly one instance (with keyframes): the windows exist
    before, during, after: bool[B, K, F] the three frame sets (False where not single)
    """

    before_stop: torch.Tensor
    first: torch.Tensor
    last: torch.Tensor
    after_start: torch.Tensor
    single: torch.Tensor
    before: torch.Tensor
    during: torch.Tensor
    after: torch.Tensor


def compare_bounds(ci: ClassInstances, semantics) -> tuple[torch.Tensor, torch.Tensor]:
    """(before_stop, after_start): compare-before is [0, before_stop), strictly before X's first
    keyframe unless ``compare_before_includes_x``; compare-after [after_start, F), after its last."""
    first = ci.first_kf0
    return (first + 1 if semantics.compare_before_includes_x else first), ci.last_kf0 + 1


@register("compare_windows")
def compare_windows(batch: SceneBatch, ids: torch.Tensor, semantics) -> CompareWindows:
    """Compare windows (docs/reference/agqa_semantics.md §a.2) of the classes ``ids`` int64[B, K] (-1 = none)."""
    F = batch.frame_mask.shape[1]
    ci = class_instances(batch, ids)
    nf = batch.frame_mask.sum(1)[:, None].expand_as(ci.count)
    single = ci.count == 1
    first, last = ci.first_kf0, ci.last_kf0
    before_stop, after_start = compare_bounds(ci, semantics)
    m = single[..., None]
    return CompareWindows(
        before_stop=before_stop, first=first, last=last, after_start=after_start, single=single,
        before=interval_mask(torch.zeros_like(first), before_stop, F) & m,
        during=interval_mask(first, last + 1, F) & m,
        after=interval_mask(after_start, nf, F) & m,
    )
