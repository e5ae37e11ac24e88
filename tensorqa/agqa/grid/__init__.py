"""Grid evaluation: ``evaluate(skeleton, batch, semantics=AGQA) -> AnswerGrid``, one program skeleton
over its whole slot grid for every video of a batch.

``skeleton``: a template name, a ``PROGRAM_SHAPES`` string or a parsed one. ``<window>`` is every
offered window of the batch as one flat axis (dimension 0, rows tagged with their video; without it,
dimension 0 is the videos); ``<object>`` / ``<relation>`` / ``<action>`` (and ``2`` forms) are compact
per-video axes of what is present (objExists' object and relExists' relation range over the whole
vocabulary, as AGQA asks about absent ones; ``domain="all"`` does so for every slot). A word fixes
its axis (size 1); a filled window keeps only its rows; indirect references are not grid slots.
A skeleton compiles once into a cached :class:`Plan` whose primitives are looked up in the registry
at run time, so ``use`` / ``override`` / ``ablate`` need no recompiling."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from tensorqa.errors import TensorQAError
from tensorqa.engine.primitives import registry
from tensorqa.agqa.grid.answers import ANSWER_KINDS, NO, YES, AnswerGrid, action_word, answer_text  # noqa: F401  (public here)
from tensorqa.agqa.grid.context import GridContext, RelationAxes, gather_axis  # noqa: F401  (GridContext is public here)
from tensorqa.agqa.grid.evaluators import EVALUATORS
from tensorqa.engine.primitives.localize import VIDEO
from tensorqa.agqa.program import Call, Items, Node, Slot, Word, match, parse_program
from tensorqa.agqa.shapes import PROGRAM_SHAPES, SHAPES, ShapeSpec
from tensorqa.scenes.batch import SceneBatch, by_identity
from tensorqa.agqa.semantics import AGQA, Semantics, get_semantics
from tensorqa.scenes.vocab import vocab
from tensorqa.engine.windows import ONE_ACTION_WINDOWS, WINDOW_KINDS

DOMAINS = ("present", "all")


# -- shapes and plans ------------------------------------------------------------------------------------
def _normalize(node: Node) -> Node:
    """One spelling per construct: ``[relation, ...]`` -> ``[relations, ...]``;
    ``Localize(between, X, Y)`` -> ``Localize(between, [X, Y])``."""
    if isinstance(node, Word):
        return Word("relations") if node.text == "relation" else node
    if isinstance(node, Items):
        return Items([_normalize(i) for i in node.items])
    if isinstance(node, Call):
        args = [_normalize(a) for a in node.args]
        if node.func == "Localize" and len(args) == 3:
            args = [args[0], Items(args[1:])]
        return Call(node.func, args)
    return node


@functools.cache
def _patterns() -> list[tuple[str, Node]]:
    """(shape, normalized pattern) per template, distinct programs only (first name wins)."""
    seen: dict[str, str] = {}
    out = []
    for name, text in PROGRAM_SHAPES.items():
        pat = _normalize(parse_program(text))
        if str(pat) in seen:
            continue
        seen[str(pat)] = name
        out.append((name, pat))
    return out


@dataclass(frozen=True)
class Plan:
    """A compiled skeleton: its shape, the slots it fixes to a class id (``fixed``), the window
    kind and (X, Y) actions its window axis keeps (None: free)."""

    skeleton: str
    shape: str
    evaluator: str
    pattern: Node
    fixed: tuple[tuple[str, int], ...]
    window_kind: int | None
    window_actions: tuple[int | None, int | None]
    semantics: Semantics
    domain: str = "present"

    def run(self, context: "GridContext") -> AnswerGrid:
        return _run(self, context)

    @property
    def primitives(self) -> tuple[str, ...]:
        return shape_primitives(self.shape, self.domain)


@functools.cache
def shape_primitives(shape: str, domain: str = "present") -> tuple[str, ...]:
    """The registry names a plan of ``shape`` looks up (sorted), recorded from one run on a probe
    video so that the list cannot drift from the code."""
    from tensorqa.scenes.batch import SceneBatch, VideoScene
    from tensorqa.scenes.vocab import vocab

    v = vocab()
    F, O, R = 3, v.num_objects, v.num_relations
    rel = np.zeros((F, O, R), bool)
    rel[:, 1, v.relation_index("holding")] = True
    probe = VideoScene(video_id="PROBE", frame_ids=[10, 20, 30], frame_secs=[1.0, 2.0, 3.0], rel=rel,
                       obj=rel.any(2), inst_cls=[0, 1], inst_start=[1.0, 2.0], inst_end=[2.0, 3.0], split="train")
    with registry.recording() as seen:
        _shape_plan(shape, AGQA, domain).run(GridContext(SceneBatch.from_scenes([probe]), AGQA))
    return tuple(sorted(seen))


def _resolve_word(kind: str, node: Node, skeleton: str) -> int:
    v = vocab()
    if isinstance(node, Call):
        raise TensorQAError(f"grid: {kind} argument {str(node)!r} of {skeleton!r} is an indirect reference; "
                            "grid slots take plain words only")
    if not isinstance(node, Word):
        raise TensorQAError(f"grid: {kind} argument {str(node)!r} of {skeleton!r} is not a word")
    lookup = {"object": v.object_index, "relation": v.relation_index, "action": v.action_index}[kind]
    return lookup(node.text)


def _bind_window(node: Node, skeleton: str) -> tuple[int | None, tuple[int | None, int | None]]:
    if isinstance(node, Slot):
        return None, (None, None)
    if isinstance(node, Word) and node.text == "video":
        return VIDEO, (None, None)
    if isinstance(node, Call) and node.func == "Localize" and isinstance(node.args[0], Word):
        word = node.args[0].text
        if word in ONE_ACTION_WINDOWS and len(node.args) == 2:
            acts = [node.args[1]]
        elif word == "between" and isinstance(node.args[1], Items) and len(node.args[1]) == 2:
            acts = list(node.args[1].items)
        else:
            raise TensorQAError(f"grid: unsupported window {str(node)!r} in {skeleton!r}")
        ids = [None if isinstance(a, Slot) else _resolve_word("action", a, skeleton) for a in acts]
        return WINDOW_KINDS.index(word), (ids[0], ids[1] if len(ids) > 1 else None)
    raise TensorQAError(f"grid: unsupported window {str(node)!r} in {skeleton!r}")


@functools.lru_cache(maxsize=512)
def _compile(text: str, semantics: Semantics, domain: str) -> Plan:
    """The plan of skeleton text (first shape name wins where two print one program)."""
    node = _normalize(parse_program(text))
    for shape, pattern in _patterns():
        bind: dict[str, Node] = {}
        if match(pattern, node, bind):
            break
    else:
        raise TensorQAError(f"grid: {text!r} is not one of the AGQA program shapes")
    fixed = []
    window_kind, window_actions = None, (None, None)
    for name, value in bind.items():
        kind = name.rstrip("0123456789")
        if kind == "window":
            window_kind, window_actions = _bind_window(value, text)
        elif not isinstance(value, Slot):
            fixed.append((name, _resolve_word(kind, value, text)))
    if not fixed and window_kind is None and window_actions == (None, None):
        return _shape_plan(shape, semantics, domain)  # the whole shape: one plan, whatever spelling named it
    return Plan(skeleton=str(node), shape=shape, evaluator=SHAPES[shape].evaluator,
                pattern=parse_program(PROGRAM_SHAPES[shape]), fixed=tuple(fixed), window_kind=window_kind,
                window_actions=window_actions, semantics=semantics, domain=domain)


@functools.lru_cache(maxsize=256)
def _shape_plan(shape: str, semantics: Semantics, domain: str) -> Plan:
    """The plan of a whole shape (every slot free): read from its ShapeSpec, nothing matched."""
    spec = SHAPES[shape]
    pattern = parse_program(spec.program)
    return Plan(skeleton=str(_normalize(pattern)), shape=shape, evaluator=spec.evaluator, pattern=pattern,
                fixed=(), window_kind=None, window_actions=(None, None), semantics=semantics, domain=domain)


def compile_skeleton(skeleton: "str | Node | ShapeSpec", semantics: Semantics | str = AGQA,
                     domain: str = "present") -> Plan:
    """The cached plan of a :class:`ShapeSpec` (or a ``TemplateSpec``), a shape name, skeleton text
    or a parsed skeleton; domain: "present" or "all" (module docstring)."""
    if domain not in DOMAINS:
        raise TensorQAError(f"grid: domain must be one of {', '.join(DOMAINS)}, not {domain!r}")
    spec = getattr(skeleton, "shape", skeleton)
    if isinstance(spec, ShapeSpec):
        return _shape_plan(spec.name, get_semantics(semantics), domain)
    if isinstance(skeleton, str) and skeleton in SHAPES:
        return _shape_plan(skeleton, get_semantics(semantics), domain)
    return _compile(str(skeleton), get_semantics(semantics), domain)


# -- running plans ---------------------------------------------------------------------------------------
def evaluate(skeleton: "str | Node | ShapeSpec", batch: SceneBatch, semantics: Semantics | str = AGQA,
             context: GridContext | None = None, domain: str = "present") -> AnswerGrid:
    """Evaluate a skeleton (as :func:`compile_skeleton` takes it) over its whole slot grid for every
    video of ``batch``; ``context`` shares per-batch intermediates across skeletons."""
    sem = get_semantics(semantics)
    if context is None:
        context = GridContext(batch, sem)
    elif context.batch is not batch or context.semantics != sem:
        raise TensorQAError("grid: the context was built for another batch or semantics")
    return compile_skeleton(skeleton, sem, domain).run(context)


def _run(plan: Plan, ctx: GridContext) -> AnswerGrid:
    answer, defined, axes, kind = EVALUATORS[plan.evaluator](plan, ctx)
    # defined: None where every cell the evaluator computed is defined (yes/no existence
    # questions): the grid's ``defined`` is then ``real`` itself, not a copy of it.
    # axes: [(name, values, valid)] of the slot axes; a "window" axis comes first and is already
    # flat (values int64[V], valid None: every offered window is real); the others are per video ([B, n])
    names = tuple(a[0] for a in axes)
    B = len(ctx.batch)
    filtered = False
    if names[:1] == ("window",):
        video, wpos = ctx.rows
        if plan.window_kind is not None or plan.window_actions != (None, None):
            # a filled window keeps its rows only (a free one keeps them all, with no device sync)
            w = ctx.windows
            keep = torch.ones_like(video, dtype=torch.bool)
            if plan.window_kind is not None:
                keep &= w.word[video, wpos] == plan.window_kind
            for j, a in enumerate(plan.window_actions):
                if a is not None:
                    keep &= w.action[video, wpos, j] == a
            answer, video, wpos = answer[keep], video[keep], wpos[keep]
            defined = None if defined is None else defined[keep]
            filtered = True
        values = {"window": wpos}
        rest = axes[1:]
    else:
        video = ctx.cached("video_axis", lambda: torch.arange(B, device=answer.device))
        names = ("video",) + names
        values = {}
        rest = axes
    for name, ids, _ in rest:
        values[name] = ids
    valids = [valid for _, _, valid in rest]
    fixed = dict(plan.fixed)
    if not fixed and not filtered:
        real = _real(ctx, video, valids)
    else:
        masks = [valid[video] for valid in valids]  # [n0, n] each
        # fixed words: keep the one position holding that value (size-1 axis)
        for d, (name, _, _) in enumerate(rest, start=1):
            if name in fixed:
                ids = values[name]
                hit = ids == fixed[name]  # [B, n]
                pos = hit.to(torch.uint8).argmax(1, keepdim=True)  # [B, 1]
                answer = gather_axis(answer, d, pos[video])
                defined = None if defined is None else gather_axis(defined, d, pos[video])
                values[name] = torch.where(hit.any(1, keepdim=True), ids.gather(1, pos), -1)
                masks[d - 1] = hit.any(1, keepdim=True)[video]
        real = _outer(masks, video)
    if defined is None:
        defined = real if real.shape == answer.shape else real.expand(answer.shape)
    elif not filtered and not fixed and any(defined is t for t in ctx.cached("shared_defined", list)):
        # a result two templates share (objWhatChoose / objFirstChoose): one shared mask too
        ok = defined
        defined = by_identity(ctx.cached("defined", list), (ok, real), lambda: ok & real)
    else:
        defined = defined & real
    return AnswerGrid(answer=answer, defined=defined, real=real, axes=names, video=video, values=values,
                      windows=ctx.windows if "window" in names else None, answer_kind=kind,
                      shape=plan.shape, skeleton=plan.skeleton, pattern=plan.pattern,
                      video_ids=ctx.batch.video_ids, semantics=plan.semantics)


def _outer(masks: list[torch.Tensor], video: torch.Tensor) -> torch.Tensor:
    """The outer product of the per-axis masks [n0, n_i], built from the small end (one full-size
    op); ones [n0] without slot axes."""
    real = masks[0] if masks else torch.ones(video.shape, dtype=torch.bool, device=video.device)
    for m in masks[1:]:
        real = real[..., None] & m.reshape(m.shape[0], *([1] * (real.dim() - 1)), m.shape[1])
    return real


def _real(ctx: GridContext, video: torch.Tensor, valids: list[torch.Tensor]) -> torch.Tensor:
    """:func:`_outer` of ``valid[video]`` per axis, once per context and combination of axes
    (matched by identity; the grids that share it must not modify it)."""
    return by_identity(ctx.cached("real", list), (video, *valids),
                       lambda: _outer([valid[video] for valid in valids], video))
