"""The grid evaluators: one function per program shape family, ``(plan, ctx) -> (answer, defined,
axes, answer kind)``, each calling its primitives through the registry. ``agqa/shapes.SHAPES``
says which evaluator answers which shape; ``grid._run`` turns the result into an AnswerGrid."""

from __future__ import annotations

import torch

from tensorqa.agqa.grid.context import GridContext, all_axis, gather_axis, ids_at
from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.filter import interacted_frames
from tensorqa.agqa.shapes import SHAPES


# -- evaluators: (plan, ctx) -> (answer, defined, axes, answer kind) ------------------------------------
def _window_axis(ctx: GridContext):
    """The flat window axis: one row per offered window of the batch (every row is real: no mask)."""
    return ("window", ctx.rows[1], None)


def _axes(ctx: GridContext, ax, *slots: str) -> list:
    """The window axis, then ``slots`` ("relation", "object", "object2") of RelationAxes ``ax``."""
    of = {"relation": (ax.rids, ax.rvalid), "object": (ax.oids, ax.ovalid), "object2": (ax.oids, ax.ovalid)}
    return [_window_axis(ctx)] + [(slot, *of[slot]) for slot in slots]


def _yes_no(truth: torch.Tensor) -> torch.Tensor:
    return truth.long()


def _obj_exists(plan, ctx):
    # AGQA asks objExists about every object, present or absent: always the whole vocabulary
    rule = ctx.semantics.interaction_rule("objExists")
    truth = registry.lookup("contacted")(ctx.batch, ctx.flat, rule)  # [V, O]
    O = truth.shape[-1]
    return _yes_no(truth), None, [_window_axis(ctx), ("object", *all_axis(ctx.batch, O))], "yes/no"


def _obj_rel_exists(plan, ctx):
    ax = ctx.axes(plan.domain)
    truth = registry.lookup("exists")(ctx.relate_rows(plan.domain)).transpose(1, 2)  # [V, Kr, Ko]
    return _yes_no(truth), None, _axes(ctx, ax, "relation", "object"), "yes/no"


def _rel_exists(plan, ctx):
    # AGQA asks relExists about absent relations too: always the whole vocabulary
    truth = registry.lookup("exists")(registry.lookup("relations_present")(ctx.batch, ctx.flat))  # [V, R]
    axes = [_window_axis(ctx), ("relation", *all_axis(ctx.batch, truth.shape[-1]))]
    return _yes_no(truth), None, axes, "yes/no"


def _act_exists(plan, ctx):
    # AGQA 1.0 asked actExists about every action class, present or absent (semantics §b.2): the
    # whole vocabulary; its validity rule (agqa/validity) keeps the classes the video makes plausible
    present = registry.lookup("actions_in")(ctx.batch, ctx.flat)  # [V, A]
    ids, valid = all_axis(ctx.batch, present.shape[-1])
    truth = registry.lookup("exists")(present, ids[ctx.flat.video])  # [V, A]
    return _yes_no(truth), None, [_window_axis(ctx), ("action", ids, valid)], "yes/no"


def _and_or_xor(plan, ctx):
    ax = ctx.axes(plan.domain)
    held = registry.lookup("exists")(ctx.relate_rows(plan.domain)).transpose(1, 2)  # [V, Kr, Ko]
    a, b = held[..., :, None], held[..., None, :]  # <object> rows, <object2> columns
    truth = registry.lookup("and" if plan.shape == "andObjRelExists" else "xor")(a, b, ctx.semantics)
    return _yes_no(truth), None, _axes(ctx, ax, "relation", "object", "object2"), "yes/no"


def _obj_what_general(plan, ctx):
    rule = ctx.semantics.interaction_rule("objWhatGeneral")
    present = registry.lookup("contacted")(ctx.batch, ctx.flat, rule)  # [V, O]
    obj, one = registry.lookup("only_item")(present)
    return obj, one, [_window_axis(ctx)], "object"


def _obj_what(plan, ctx):
    ax = ctx.axes(plan.domain)
    pos, one = registry.lookup("only_item")(ctx.relate_rows(plan.domain).transpose(1, 2))  # over objects: [V, Kr]
    obj = ids_at(ax.oids, ctx.flat.video, pos)
    return obj, one, _axes(ctx, ax, "relation"), "object"


def _forward(plan) -> bool:
    return bool(SHAPES[plan.shape].forward)


def _longer(plan) -> bool:
    return bool(SHAPES[plan.shape].longer)


def _episode(plan, ctx):
    ax = ctx.axes(plan.domain)
    obj, ok = ctx.episodes(plan.domain, _forward(plan))
    return obj, ok, _axes(ctx, ax, "relation"), "object"


def _episode_verify(plan, ctx):
    ax = ctx.axes(plan.domain)
    obj, ok = ctx.episodes(plan.domain, _forward(plan))  # [V, Kr]
    same = registry.lookup("equals")(obj[..., None], ax.oids[ctx.flat.video][:, None, :])  # [V, Kr, Ko]
    return _yes_no(same), ok[..., None].expand_as(same), _axes(ctx, ax, "relation", "object"), "yes/no"


def _shared_grid(ctx: GridContext, key: str, make):
    """``make()`` -> (answer, defined) once per context, for templates whose grids are the same
    (their rules, applied later, differ); ``_run`` then shares ``defined & real`` too."""
    def made():
        answer, ok = make()
        ctx.cached("shared_defined", list).append(ok)
        return answer, ok
    return ctx.cached(key, made)


def _choose(plan, ctx):
    """The chosen object of each (window, relation, object pair). objWhatChoose and objFirstChoose
    choose alike (forward, over the same axes): one grid serves both."""
    ax = ctx.axes(plan.domain)
    forward = _forward(plan)

    def make():
        pick, ok = registry.lookup("choose_episode")(ax.rel, ctx.flat, forward, ctx.semantics)  # [V, Kr, Ko, Ko]
        oids = ax.oids[ctx.flat.video]
        return torch.where(pick, oids[:, None, :, None], oids[:, None, None, :]), ok

    answer, ok = _shared_grid(ctx, f"choose/{plan.domain}/{forward}", make)
    return answer, ok, _axes(ctx, ax, "relation", "object", "object2"), "object"


def _act_what(plan, ctx):
    """actWhatAfterAll and actWhatBefore: one program, told apart by the window's word (act_what):
    one grid serves both."""
    cls, ok = _shared_grid(ctx, "act_what", lambda: registry.lookup("act_what")(
        ctx.batch, ctx.act, ctx.flat, ctx.semantics))
    return cls, ok, [_window_axis(ctx)], "action"


def _act_edge(plan, ctx):
    name = "act_first" if _forward(plan) else "act_last"
    cls, ok = registry.lookup(name)(ctx.batch, ctx.act, ctx.flat, ctx.semantics)
    return cls, ok, [_window_axis(ctx)], "action"


def _length_winner(plan, ctx):
    """(winner, defined) of every pair of present actions, shared by the Choose and Verify
    templates of one comparison (longer or shorter)."""
    longer = _longer(plan)
    return ctx.cached(f"length/{longer}", lambda: registry.lookup("length_compare")(
        ctx.batch, ctx.actions[0], longer, ctx.semantics))


def _length_choose(plan, ctx):
    ids, valid = ctx.actions
    winner, ok = _length_winner(plan, ctx)
    return winner, ok, [("action", ids, valid), ("action2", ids, valid)], "action"


def _length_verify(plan, ctx):
    ids, valid = ctx.actions
    winner, ok = _length_winner(plan, ctx)
    truth = registry.lookup("equals")(winner, ids[:, :, None])  # is <action> the winner?
    return _yes_no(truth), ok, [("action", ids, valid), ("action2", ids, valid)], "yes/no"


def _superlative(plan, ctx):
    cls, ok = registry.lookup("superlative")(ctx.batch, _longer(plan), ctx.semantics)
    return cls, ok, [], "action"


def _act_time(plan, ctx):
    ids, valid = ctx.actions
    # rows: <action> (the one placed), columns: <action2> (the anchor it is compared with)
    side, ok = registry.lookup("act_order")(ctx.batch, ids, ctx.compare, ctx.semantics)
    return side, ok, [("action", ids, valid), ("action2", ids, valid)], "before/after"


def _rel_time(plan, ctx):
    ids, valid = ctx.actions
    ax = ctx.axes(plan.domain)
    side, ok = registry.lookup("side_of")(ax.occurs, ctx.compare, ctx.batch.frame_mask.sum(1))  # [B, K, Kr]
    return side, ok, [("action", ids, valid), ("relation", ax.rids, ax.rvalid)], "before/after"


def _obj_time(plan, ctx):
    ids, valid = ctx.actions
    ax = ctx.axes(plan.domain)
    frames = interacted_frames(ctx.batch, ctx.semantics.interaction_rule("objTime"))  # [B, F, O]
    frames = gather_axis(frames, 2, ax.oids) & ax.ovalid[:, None, :]
    side, ok = registry.lookup("side_of")(frames, ctx.compare, ctx.batch.frame_mask.sum(1))  # [B, K, Ko]
    return side, ok, [("action", ids, valid), ("object", ax.oids, ax.ovalid)], "before/after"


EVALUATORS = {f.__name__[1:]: f for f in (  # ShapeSpec.evaluator -> the evaluator
    _obj_exists, _obj_rel_exists, _rel_exists, _act_exists, _and_or_xor, _obj_what_general, _obj_what, _choose,
    _act_what, _episode, _episode_verify, _act_edge, _length_choose, _length_verify, _superlative, _act_time,
    _rel_time, _obj_time)}
