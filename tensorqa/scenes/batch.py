"""Scene graphs as tensors: one video (:class:`VideoScene`, numpy, unpadded) and a padded batch of
videos (:class:`SceneBatch`, torch). ``SceneBatch`` is the only place that pads or re-pads.

Axes: B videos, F keyframes, O object classes, R relations, A action classes, N action instances.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Callable, Sequence

import numpy as np
import torch

from tensorqa.scenes.vocab import vocab


@dataclass
class VideoScene:
    """One video's scene graph, unpadded (numpy).

    frame_ids:  int32[F]    Charades frame numbers of the keyframes, ascending
    frame_secs: float32[F]  keyframe times in seconds
    rel:        bool[F, O, R]  at keyframe f the person stands in relation r to object class o
    obj:        bool[F, O]  object class o is annotated at keyframe f
    inst_cls:   int64[N]    action class of each instance, ordered by (start, end, class)
    inst_start, inst_end: float32[N]  seconds
    split:      "train" or "test"
    """

    video_id: str
    frame_ids: np.ndarray
    frame_secs: np.ndarray
    rel: np.ndarray
    obj: np.ndarray
    inst_cls: np.ndarray
    inst_start: np.ndarray
    inst_end: np.ndarray
    split: str = "train"

    def __post_init__(self) -> None:
        self.frame_ids = np.asarray(self.frame_ids, dtype=np.int32)
        self.frame_secs = np.asarray(self.frame_secs, dtype=np.float32)
        self.rel = np.asarray(self.rel, dtype=bool)
        self.obj = np.asarray(self.obj, dtype=bool)
        self.inst_cls = np.asarray(self.inst_cls, dtype=np.int64)
        self.inst_start = np.asarray(self.inst_start, dtype=np.float32)
        self.inst_end = np.asarray(self.inst_end, dtype=np.float32)

    @classmethod
    def from_lists(cls, video_id: str, frame_ids: np.ndarray, frame_secs: np.ndarray, rel: tuple, obj: tuple,
                   instances: list, split: str) -> "VideoScene":
        """A sorted scene from a loader's lists: frame_ids int64[F] ascending; rel (frames, objects,
        relations) and obj (frames, objects) lists of facts by frame number; instances [(class, start, end)]."""
        v = vocab()
        F = len(frame_ids)
        rel_t = np.zeros((F, v.num_objects, v.num_relations), dtype=bool)
        obj_t = np.zeros((F, v.num_objects), dtype=bool)
        # one fancy assignment per tensor: frame numbers -> positions in the sorted frame list
        rel_t[np.searchsorted(frame_ids, rel[0]), rel[1], rel[2]] = True
        obj_t[np.searchsorted(frame_ids, obj[0]), obj[1]] = True
        inst = np.array(instances, dtype=np.float64).reshape(-1, 3)
        return cls(video_id=video_id, frame_ids=frame_ids, frame_secs=frame_secs, rel=rel_t, obj=obj_t,
                   inst_cls=inst[:, 0].astype(np.int64), inst_start=inst[:, 1], inst_end=inst[:, 2],
                   split=split).sorted()

    @property
    def num_frames(self) -> int:
        return len(self.frame_ids)

    @property
    def num_instances(self) -> int:
        return len(self.inst_cls)

    def sorted(self) -> "VideoScene":
        """The same scene with keyframes ascending and instances ordered by (start, end, class)."""
        fo = np.argsort(self.frame_ids, kind="stable")
        io = np.lexsort((self.inst_cls, self.inst_end, self.inst_start))
        return replace(
            self,
            frame_ids=self.frame_ids[fo], frame_secs=self.frame_secs[fo], rel=self.rel[fo], obj=self.obj[fo],
            inst_cls=self.inst_cls[io], inst_start=self.inst_start[io], inst_end=self.inst_end[io],
        )


def by_identity(entries: list, keys: tuple, make: Callable[[], object]):
    """The value kept in ``entries`` [(keys, value)] for these exact objects (``is``: tensors), or
    ``make()``, kept there (the entry holds its keys, so their identities are not reused)."""
    for known, value in entries:
        if len(known) == len(keys) and all(a is b for a, b in zip(known, keys)):
            return value
    value = make()
    entries.append((keys, value))
    return value


_TENSOR_FIELDS = ("rel", "obj", "frame_secs", "frame_ids", "frame_mask", "inst_cls", "inst_start", "inst_end", "inst_mask")


# the least width of a batch's frame and instance axes: an empty axis fails reductions (min, reshape)
MIN_SLOTS = 1


@dataclass
class SceneBatch:
    """A padded batch of B videos (torch tensors, any device).

    rel:        bool[B, F, O, R]
    obj:        bool[B, F, O]
    frame_secs: float32[B, F]; frame_ids: int32[B, F]; frame_mask: bool[B, F] (real keyframes)
    inst_cls:   int64[B, N]; inst_start, inst_end: float32[B, N]; inst_mask: bool[B, N]
    video_ids:  tuple of B ids; splits: tuple of B "train"/"test"

    Padding is left-aligned, False / 0 / class 0 with the mask False; F and N are at least
    :data:`MIN_SLOTS`. Derived tensors (``act``, ``inst_frames``) are computed on demand.
    """

    rel: torch.Tensor
    obj: torch.Tensor
    frame_secs: torch.Tensor
    frame_ids: torch.Tensor
    frame_mask: torch.Tensor
    inst_cls: torch.Tensor
    inst_start: torch.Tensor
    inst_end: torch.Tensor
    inst_mask: torch.Tensor
    video_ids: tuple[str, ...]
    splits: tuple[str, ...]

    # -- shape ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.video_ids)

    @property
    def device(self) -> torch.device:
        return self.rel.device

    @property
    def num_frames(self) -> torch.Tensor:
        """int64[B]: real keyframes per video."""
        return self.frame_mask.sum(1)

    @property
    def num_instances(self) -> torch.Tensor:
        """int64[B]: action instances per video."""
        return self.inst_mask.sum(1)

    # -- derived tensors -------------------------------------------------------------------------
    def derived(self, key: str, make: Callable[[], object]):
        """A value derived from this batch, made on first use and kept (every template of a block reads
        it); a batch is never modified in place, and ``to()`` / ``replace`` keep nothing."""
        cache = self.__dict__.setdefault("_derived", {})
        if key not in cache:
            cache[key] = make()
        return cache[key]

    @property
    def inst_frames(self) -> torch.Tensor:
        """bool[B, N, F]: keyframe f lies inside instance n (start <= secs <= end)."""
        return self.derived("inst_frames", self._inst_frames)

    def _inst_frames(self) -> torch.Tensor:
        secs = self.frame_secs[:, None, :]
        inside = (secs >= self.inst_start[:, :, None]) & (secs <= self.inst_end[:, :, None])
        return inside & self.frame_mask[:, None, :] & self.inst_mask[:, :, None]

    @property
    def act(self) -> torch.Tensor:
        """bool[B, F, A]: some instance of action class a covers keyframe f."""
        return self.derived("act", self._act)

    def _act(self) -> torch.Tensor:
        num_actions = vocab().num_actions
        onehot = torch.nn.functional.one_hot(self.inst_cls, num_actions).to(torch.float32)  # [B,N,A]
        cover = torch.einsum("bnf,bna->bfa", self.inst_frames.to(torch.float32), onehot)
        return cover > 0

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def from_scenes(cls, scenes: Sequence[VideoScene], device: str | torch.device = "cpu") -> "SceneBatch":
        """Pad a list of videos into one batch (F and N padded to the batch maxima)."""
        v = vocab()
        B = len(scenes)
        F = max((s.num_frames for s in scenes), default=0)
        N = max((s.num_instances for s in scenes), default=0)
        F, N = max(F, MIN_SLOTS), max(N, MIN_SLOTS)
        rel = np.zeros((B, F, v.num_objects, v.num_relations), dtype=bool)
        obj = np.zeros((B, F, v.num_objects), dtype=bool)
        secs = np.zeros((B, F), dtype=np.float32)
        fids = np.zeros((B, F), dtype=np.int32)
        fmask = np.zeros((B, F), dtype=bool)
        icls = np.zeros((B, N), dtype=np.int64)
        istart = np.zeros((B, N), dtype=np.float32)
        iend = np.zeros((B, N), dtype=np.float32)
        imask = np.zeros((B, N), dtype=bool)
        for b, s in enumerate(scenes):
            f, n = s.num_frames, s.num_instances
            rel[b, :f], obj[b, :f], secs[b, :f], fids[b, :f], fmask[b, :f] = s.rel, s.obj, s.frame_secs, s.frame_ids, True
            icls[b, :n], istart[b, :n], iend[b, :n], imask[b, :n] = s.inst_cls, s.inst_start, s.inst_end, True
        arrays = dict(rel=rel, obj=obj, frame_secs=secs, frame_ids=fids, frame_mask=fmask,
                      inst_cls=icls, inst_start=istart, inst_end=iend, inst_mask=imask)
        return cls(**{k: torch.from_numpy(a).to(device) for k, a in arrays.items()},
                   video_ids=tuple(s.video_id for s in scenes), splits=tuple(s.split for s in scenes))

    def scenes(self) -> list[VideoScene]:
        """Unpad back into per-video scenes (numpy)."""
        out = []
        cpu = self.to("cpu")
        nf, ni = cpu.num_frames.tolist(), cpu.num_instances.tolist()
        for b, vid in enumerate(self.video_ids):
            f, n = nf[b], ni[b]
            out.append(VideoScene(
                video_id=vid, frame_ids=cpu.frame_ids[b, :f].numpy(), frame_secs=cpu.frame_secs[b, :f].numpy(),
                rel=cpu.rel[b, :f].numpy(), obj=cpu.obj[b, :f].numpy(), inst_cls=cpu.inst_cls[b, :n].numpy(),
                inst_start=cpu.inst_start[b, :n].numpy(), inst_end=cpu.inst_end[b, :n].numpy(), split=self.splits[b],
            ))
        return out

    @classmethod
    def cat(cls, batches: Sequence["SceneBatch"]) -> "SceneBatch":
        """Concatenate batches along B, re-padding F and N to the largest."""
        if not batches:
            raise ValueError("SceneBatch.cat needs at least one batch")
        F = max(b.frame_mask.shape[1] for b in batches)
        N = max(b.inst_mask.shape[1] for b in batches)
        padded = [b.pad_to(F, N) for b in batches]
        tensors = {k: torch.cat([getattr(b, k) for b in padded]) for k in _TENSOR_FIELDS}
        return cls(**tensors, video_ids=sum((b.video_ids for b in batches), ()),
                   splits=sum((b.splits for b in batches), ()))

    def pad_to(self, num_frames: int, num_instances: int) -> "SceneBatch":
        """Pad the frame axis to ``num_frames`` and the instance axis to ``num_instances``."""
        df = num_frames - self.frame_mask.shape[1]
        dn = num_instances - self.inst_mask.shape[1]
        if df < 0 or dn < 0:
            raise ValueError("pad_to cannot shrink a batch; use trim()")
        if df == 0 and dn == 0:
            return self
        P = torch.nn.functional.pad
        return replace(
            self,
            rel=P(self.rel, (0, 0, 0, 0, 0, df)), obj=P(self.obj, (0, 0, 0, df)),
            frame_secs=P(self.frame_secs, (0, df)), frame_ids=P(self.frame_ids, (0, df)),
            frame_mask=P(self.frame_mask, (0, df)), inst_cls=P(self.inst_cls, (0, dn)),
            inst_start=P(self.inst_start, (0, dn)), inst_end=P(self.inst_end, (0, dn)),
            inst_mask=P(self.inst_mask, (0, dn)),
        )

    def trim(self) -> "SceneBatch":
        """Drop padding columns that no video of the batch uses."""
        F = max(int(self.num_frames.max()) if len(self) else 0, MIN_SLOTS)
        N = max(int(self.num_instances.max()) if len(self) else 0, MIN_SLOTS)
        return replace(
            self, rel=self.rel[:, :F], obj=self.obj[:, :F], frame_secs=self.frame_secs[:, :F],
            frame_ids=self.frame_ids[:, :F], frame_mask=self.frame_mask[:, :F], inst_cls=self.inst_cls[:, :N],
            inst_start=self.inst_start[:, :N], inst_end=self.inst_end[:, :N], inst_mask=self.inst_mask[:, :N],
        )

    # -- slicing and devices -------------------------------------------------------------------------
    def __getitem__(self, index: slice | int | Sequence[int] | torch.Tensor) -> "SceneBatch":
        """Select videos (slice, int, list of ints or bool/int tensor) along B."""
        if isinstance(index, int):
            index = slice(index, index + 1 if index != -1 else None)
        if isinstance(index, slice):
            ids = list(range(len(self)))[index]
        else:
            idx = torch.as_tensor(index)
            ids = (torch.nonzero(idx).flatten() if idx.dtype == torch.bool else idx).tolist()
            index = torch.as_tensor(ids, dtype=torch.long, device=self.device)
        tensors = {k: getattr(self, k)[index] for k in _TENSOR_FIELDS}
        return SceneBatch(**tensors, video_ids=tuple(self.video_ids[i] for i in ids),
                          splits=tuple(self.splits[i] for i in ids))

    def to(self, device: str | torch.device) -> "SceneBatch":
        return replace(self, **{k: getattr(self, k).to(device) for k in _TENSOR_FIELDS})

    def equal(self, other: "SceneBatch") -> bool:
        """Same videos and identical tensors (after trimming padding)."""
        a, b = self.trim().to("cpu"), other.trim().to("cpu")
        return (a.video_ids == b.video_ids and a.splits == b.splits and
                all(torch.equal(getattr(a, k), getattr(b, k)) for k in _TENSOR_FIELDS))


assert {f.name for f in fields(SceneBatch)} == set(_TENSOR_FIELDS) | {"video_ids", "splits"}
