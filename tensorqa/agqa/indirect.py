"""Indirect object references (docs/reference/agqa_semantics.md §b.3): "the object they were holding first".

A relation R present in a video (contact, spatial or verb; not negative, unsure or single-object)
with several objects gives a *first* and a *last* reference (referent: the whole-video objFirst /
objLast answer, unique); with one object, a *whole* reference. At most 3 of each kind per referent
are kept, by a seeded hash. A reference cell's answer is its referent cell's (a gather along the
object axis). Indirect-object actions (:func:`action_reference_slots`) reuse these references."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import torch

from tensorqa.engine import rng
from tensorqa.agqa.grid import GridContext, evaluate
from tensorqa.agqa.semantics import NEVER_INDIRECT_OBJECT
from tensorqa.agqa.shapes import PROGRAM_SHAPES
from tensorqa.agqa.templates.catalogue import template_spec
from tensorqa.scenes.vocab import vocab
from tensorqa.agqa.validity import KIND_CODE, vocab_tables

FIRST, LAST, WHOLE = 1, 2, 3
REF_KINDS = ("", "first", "last", "whole")
MAX_PER_KIND = 3


@dataclass(frozen=True)
class References:
    """A compact reference axis per video (K references, padded): kind int64[B, K] (FIRST / LAST /
    WHOLE, 0 padding), relation and referent int64[B, K] (-1 padding), valid bool[B, K]."""

    kind: torch.Tensor
    relation: torch.Tensor
    referent: torch.Tensor
    valid: torch.Tensor

    def of_kinds(self, kinds: tuple[str, ...]) -> "References":
        keep = torch.zeros_like(self.valid)
        for k in kinds:
            if k in REF_KINDS[1:]:
                keep |= self.kind == REF_KINDS.index(k)
        return replace(self, valid=self.valid & keep)


def object_references(batch, ctx: GridContext, seed: int, video_keys: torch.Tensor) -> References:
    """Every video's object references (whole video only, never time-scoped)."""
    t = vocab_tables(str(batch.device))
    rel = ctx.relate("all")[:, 0]  # [B, O, R]: window 0 is the whole video
    n_objects = rel.sum(1)  # [B, R]
    R = rel.shape[-1]
    r_ids = torch.arange(R, device=batch.device)
    kind = t.relation_kind[:R]
    kind_ok = (kind == KIND_CODE["spatial"]) | (kind == KIND_CODE["contact"]) | (kind == KIND_CODE["verb"])
    usable = kind_ok & ~t.negative[:R] & ~t.single_object_verb[:R]  # [R]
    cands = []
    for kind, name in ((FIRST, "objFirst"), (LAST, "objLast")):
        grid = evaluate(PROGRAM_SHAPES[name].replace("<window>", "video"), batch, ctx.semantics, context=ctx)
        # one row per video that has a whole-video window: [V', Kr]
        rids = grid.values["relation"][grid.video]  # [V', Kr]
        ok = grid.defined & (rids >= 0)
        referent = torch.full((len(batch), R + 1), -1, dtype=torch.long, device=batch.device)
        rows = grid.video[:, None].expand_as(rids)
        cols = torch.where(ok, rids, R)  # undefined cells write into a spare column
        referent[rows, cols] = torch.where(ok, grid.answer, -1)
        referent = referent[:, :R]
        cands.append((kind, referent.where((n_objects > 1) & usable, torch.full_like(referent, -1))))
    single = rel.float().argmax(1)  # [B, R] the only object where n_objects == 1
    cands.append((WHOLE, torch.where((n_objects == 1) & usable, single, torch.full_like(single, -1))))
    kind = torch.cat([torch.full_like(c, k) for k, c in cands], 1)  # [B, 3R]
    referent = torch.cat([c for _, c in cands], 1)
    relation = r_ids.repeat(3).expand_as(referent)
    valid = referent >= 0
    # keep at most MAX_PER_KIND per (kind, referent): rank candidates by a seeded hash
    prio = rng.derive_torch(seed, "agqa.reference", video_keys[:, None], kind, relation)
    same = (kind[:, :, None] == kind[:, None, :]) & (referent[:, :, None] == referent[:, None, :]) & valid[:, None, :]
    ahead = (prio[:, None, :] < prio[:, :, None]) | ((prio[:, None, :] == prio[:, :, None]) & (relation[:, None, :] < relation[:, :, None]))
    rank = (same & ahead).sum(2)
    valid &= rank < MAX_PER_KIND
    # compact: valid references first, in (kind, relation) order
    order = torch.sort((~valid).long() * (4 * R) + (kind * R + relation), dim=1, stable=True).indices
    K = int(valid.sum(1).max()) if len(batch) else 0
    order = order[:, :K]
    take = lambda x: x.gather(1, order)  # noqa: E731
    valid = take(valid)
    return References(kind=torch.where(valid, take(kind), 0), relation=torch.where(valid, take(relation), -1),
                      referent=torch.where(valid, take(referent), -1), valid=valid)


def slots_by_object(refs: References, num_objects: int) -> torch.Tensor:
    """int64[B, O, S]: the reference positions (on the reference axis) whose referent is object o,
    in axis order, padded with -1 (S = most references to one object)."""
    objects = torch.arange(num_objects, device=refs.valid.device)[:, None]
    return _positions((refs.referent[:, None, :] == objects) & refs.valid[:, None, :])  # from bool[B, O, K]


def _positions(ok: torch.Tensor) -> torch.Tensor:
    """int64[B, X, S]: the positions k where ok bool[B, X, K] holds, ascending, padded with -1 (S >= 1)."""
    B, X, K = ok.shape
    rank = ok.long().cumsum(2) - 1
    S = int(ok.sum(2).max()) if ok.numel() else 0
    table = torch.full((B, X, max(S, 1)), -1, dtype=torch.long, device=ok.device)
    b, x, k = ok.nonzero(as_tuple=True)
    table[b, x, rank[b, x, k]] = k
    return table


def reference_rule(relation: torch.Tensor | None, through: torch.Tensor, own_relation: bool = True,
                   touching: bool = True) -> torch.Tensor:
    """§b.1 rules on a reference used with the question's relation. ``own_relation``: the
    reference is not defined through that relation (P-validObjRel's reference clause; AGQA's
    and/xor never apply it, ``Semantics.and_xor_reference_relation_check``). ``touching``: for
    touching, not through any contact relation (objRelExists and and/xor only; the choose and
    verify templates have no such rule). relation / through: int64 ids."""
    ok = torch.ones_like(through, dtype=torch.bool)
    if relation is None:
        return ok
    if own_relation:
        ok = ok & (through != relation)
    if touching:
        t = vocab_tables(str(through.device))
        contact = t.relation_kind[through.clamp(min=0)] == KIND_CODE["contact"]
        ok = ok & ~((relation == vocab().relation_index("touching")) & contact)
    return ok


def reference_rule_for(template: str, semantics) -> dict:
    """The keyword switches of :func:`reference_rule` that apply in ``template`` (its
    ``TemplateSpec.reference_rule``)."""
    rule = template_spec(template).reference_rule
    own = semantics.and_xor_reference_relation_check if rule == "and_xor" else True
    return {"own_relation": own, "touching": rule in ("touching", "and_xor")}


# -- indirect-object actions (§b.3 "Actions") ---------------------------------------------------------------

# Verbs that "admit varying objects" (§b.3 names a data table we do not have): derived from the
# vocabulary as the verbs that at least two distinct objects take among the canonical (not
# merged-away) action classes. Excluded outright: the picture object and c044.
_NEVER_ACTIONS = NEVER_INDIRECT_OBJECT
_NEVER_OBJECTS = ("picture",)


def merged_action_objects() -> tuple[int, ...]:
    """Each action's object in its merged form (-1 for none): :meth:`Vocab.merged_action_object`."""
    v = vocab()
    return tuple(v.merged_action_object(a) for a in range(v.num_actions))


@functools.cache
def _indirect_action_tables(device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(eligible bool[A], same_pair int64[A, A] (1 where two canonical classes share (verb, object)),
    own_relation int64[A] (the relation column carrying the action's verb, -1 none)).

    Eligible: the action has an object and an ``ACTION_REFERENCE_FRAMES`` entry, is canonical, its
    verb admits varying objects, and it is neither c044 nor about a picture."""
    from tensorqa.agqa.templates import ACTION_REFERENCE_FRAMES

    v = vocab()
    A = v.num_actions
    canonical = [v.action_merged_into[a] == a for a in range(A)]
    obj = merged_action_objects()
    objects_of_verb: dict[int, set[int]] = {}
    for a in range(A):
        if canonical[a] and obj[a] >= 0:
            objects_of_verb.setdefault(v.action_verb[a], set()).add(obj[a])
    never_obj = {v.object_merged_into[v.object_index(o)] for o in _NEVER_OBJECTS}
    eligible = [canonical[a] and obj[a] >= 0 and v.actions[a] in ACTION_REFERENCE_FRAMES
                and len(objects_of_verb.get(v.action_verb[a], ())) >= 2 and obj[a] not in never_obj
                and v.actions[a] not in _NEVER_ACTIONS for a in range(A)]
    same = [[int(canonical[a] and canonical[b] and v.action_verb[a] == v.action_verb[b]
                 and obj[a] == obj[b]) for b in range(A)] for a in range(A)]
    own = [v.verb_relation[v.action_verb[a]] for a in range(A)]
    return (torch.tensor(eligible, dtype=torch.bool, device=device), torch.tensor(same, dtype=torch.long, device=device),
            torch.tensor(own, dtype=torch.long, device=device))


def action_reference_slots(batch, refs: References, semantics) -> torch.Tensor:
    """int64[B, A, S]: per video and action class, the reference-axis positions of the object
    references that may stand for the action's object (-1 padded): the action is eligible
    (``_indirect_action_tables``), the referent is its object, and the reference is not defined through
    its own verb. AGQA checks no more (§b.3; ``semantics.resolve_to_action``); with
    ``indirect_action_needs_unique_program``, no other canonical class with the same (verb, object)
    occurs in the video either."""
    device = refs.valid.device
    eligible, same, own = _indirect_action_tables(str(device))
    act_obj = torch.tensor(merged_action_objects(), dtype=torch.long, device=device)
    ok = (refs.valid[:, None, :] & (refs.referent[:, None, :] == act_obj[None, :, None])
          & (refs.relation[:, None, :] != own[None, :, None]) & (eligible & (act_obj >= 0))[None, :, None])  # [B, A, K]
    if semantics.indirect_action_needs_unique_program:
        present = batch.act.any(1).float()  # [B, A]: the class has an instance with a keyframe
        # [B, A]: exactly one class of the (verb, object) pair occurs (float matmul: CUDA has no int64 one)
        unique = (present @ same.T.float()) == 1
        ok &= unique[:, :, None]
    return _positions(ok)
