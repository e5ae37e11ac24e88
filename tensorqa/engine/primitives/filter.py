"""Filter / relate: what is present within each window (AGQA ``Iterate(W, Filter(frame, [...]))``), each one
contraction over the keyframe axis: window masks bool[B, W, F] times a per-keyframe fact bool[B, F, X] in float,
> 0. The float product is the only large tensor, so windows go in chunks under ``CHUNK_ELEMENTS`` (a loop over
memory blocks, not over videos or windows' meaning)."""

from __future__ import annotations

import functools

import numpy as np
import torch

from tensorqa.errors import TensorQAError
from tensorqa.scenes.batch import SceneBatch
from tensorqa.scenes.vocab import vocab
from tensorqa.engine.primitives.localize import Windows
from tensorqa.engine.primitives.scans import prefix_count, read_rows
from tensorqa.engine.primitives.registry import register

CHUNK_ELEMENTS = 1 << 25  # float32 elements of one [B, w, X] product block (128 MiB)

# Interaction ("contacted") rules of docs/reference/agqa_semantics.md §c.1.
CONTACT_EXCEPT_NOT_CONTACTING = "contact_except_not_contacting"  # objExists: r10-r26 minus r18
CONTACT_EXCEPT_NOT_CONTACTING_OR_OTHER = "contact_except_not_contacting_or_other"  # objTime: minus r18, r19
ANY_PRESENT = "any_present"  # objWhatGeneral: obj[f, o], whatever relates it


def interaction_relations(rule: str) -> np.ndarray | None:
    """bool[R]: the relations that make an object "interacted with" under ``rule``; None for ``ANY_PRESENT``."""
    if rule == ANY_PRESENT:
        return None
    v = vocab()
    mask = v.relation_mask("contact").copy()
    mask[v.relation_index("notcontacting")] = False
    if rule == CONTACT_EXCEPT_NOT_CONTACTING_OR_OTHER:
        mask[v.relation_index("otherrelationship")] = False
    elif rule != CONTACT_EXCEPT_NOT_CONTACTING:
        raise TensorQAError(f"semantics: unknown interaction rule {rule!r}")
    return mask


def window_any(windows: "Windows | torch.Tensor", facts: torch.Tensor) -> torch.Tensor:
    """bool[B, W, *X] ([V, *X] flat): facts bool[B, F, *X] hold at some keyframe of the window (:class:`Windows`
    or a mask bool[B, W, F]). Flat windows, of different videos, read a prefix count at their edges instead."""
    if isinstance(windows, torch.Tensor):
        return _contract(windows, facts)
    if not windows.flat:
        return _contract(windows.mask, facts)
    counts = prefix_count(facts)
    return (read_rows(counts, windows.video, windows.stop) - read_rows(counts, windows.video, windows.start)) > 0


def _contract(mask: torch.Tensor, facts: torch.Tensor) -> torch.Tensor:
    """mask bool[B, W, F] x facts bool[B, F, *X] -> bool[B, W, *X], in chunks of windows."""
    B, W, F = mask.shape
    tail = facts.shape[2:]
    flat = facts.reshape(B, F, -1)
    X = flat.shape[-1]
    out = torch.empty(B, W, X, dtype=torch.bool, device=mask.device)
    if W == 0 or X == 0:
        return out.reshape(B, W, *tail)
    if F == 0:
        return out.fill_(False).reshape(B, W, *tail)
    fl = flat.to(torch.float32)
    step = max(1, CHUNK_ELEMENTS // max(1, B * X))
    for w0 in range(0, W, step):
        m = mask[:, w0:w0 + step].to(torch.float32)
        out[:, w0:w0 + step] = torch.bmm(m, fl) > 0
    return out.reshape(B, W, *tail)


def any_along(x: torch.Tensor, dim: int) -> torch.Tensor:
    """``x.any(dim)`` as a max over the bytes (several times faster on CPUs for short inner axes)."""
    if x.shape[dim] == 0:
        return x.any(dim)
    return x.view(torch.uint8).amax(dim).view(torch.bool)


def _frames_ok(batch: SceneBatch, facts: torch.Tensor) -> torch.Tensor:
    """Facts of padded keyframes cleared (bool[B, F, ...])."""
    shape = (*batch.frame_mask.shape, *([1] * (facts.dim() - 2)))
    return facts & batch.frame_mask.reshape(shape)


@register("relate", aliases=("Filter",))
def relate(rel: torch.Tensor, windows: Windows) -> torch.Tensor:
    """bool[B, W, O, R] ([V, O, R] flat): ``Iterate(W, Filter(frame, [relations, r, objects]))`` for every r;
    rel bool[B, F, O, R] (possibly on compact axes; padded keyframes False)."""
    return window_any(windows, rel)


@register("relations_present")
def relations_present(batch: SceneBatch, windows: Windows) -> torch.Tensor:
    """bool[B, W, R]: ``Iterate(W, Filter(frame, [relations]))``, r holds with any object."""
    return window_any(windows, _frames_ok(batch, any_along(batch.rel, 2)))


@register("objects_present")
def objects_present(batch: SceneBatch, windows: Windows) -> torch.Tensor:
    """bool[B, W, O]: object o is annotated at some keyframe of the window (§c.1 any_present)."""
    return window_any(windows, _frames_ok(batch, batch.obj))


def interacted_frames(batch: SceneBatch, rule: str) -> torch.Tensor:
    """bool[B, F, O]: the person interacts with object o at keyframe f under a §c.1 rule."""
    runs = _relation_runs(rule)
    if runs is None:
        return _frames_ok(batch, batch.obj)
    # the rule's relations are a few runs of consecutive ids (contact relations but one or two):
    # reduce each run's slice of ``rel`` in place of a full-size ``rel & mask``
    frames = torch.zeros(batch.rel.shape[:3], dtype=torch.bool, device=batch.device)
    for a, b in runs:
        frames |= any_along(batch.rel[..., a:b], -1)
    return _frames_ok(batch, frames)


@functools.cache
def _relation_runs(rule: str) -> tuple[tuple[int, int], ...] | None:
    """The rule's relations as runs [a, b) of consecutive ids (None: the rule reads ``obj``)."""
    rels = interaction_relations(rule)
    if rels is None:
        return None
    edges = np.flatnonzero(np.diff(np.concatenate([[0], np.asarray(rels, np.int8), [0]])))
    return tuple((int(a), int(b)) for a, b in zip(edges[::2], edges[1::2]))


@register("contacted")
def contacted(batch: SceneBatch, windows: Windows, rule: str) -> torch.Tensor:
    """bool[B, W, O]: the person interacts with object o in the window under a §c.1 rule."""
    return window_any(windows, interacted_frames(batch, rule))


@register("actions_in")
def actions_in(batch: SceneBatch, windows: Windows) -> torch.Tensor:
    """bool[B, W, A]: ``Iterate(W, Filter(frame, [actions]))``, an instance of a covers a keyframe."""
    return window_any(windows, _frames_ok(batch, batch.act))


@register("present_objects")
def present_objects(batch: SceneBatch) -> torch.Tensor:
    """bool[B, O]: object o is annotated, or related to the person, at some keyframe of the video."""
    facts = _frames_ok(batch, batch.obj | any_along(batch.rel, -1))
    return any_along(facts, 1)


@register("present_relations")
def present_relations(batch: SceneBatch) -> torch.Tensor:
    """bool[B, R]: relation r holds with some object at some keyframe of the video."""
    return any_along(_frames_ok(batch, any_along(batch.rel, 2)), 1)
