"""Grid evaluation: one program skeleton over its whole slot grid, for every video of a batch.

    evaluate(skeleton, batch, semantics=AGQA) -> AnswerGrid

``skeleton`` is a template name (``"objRelExists"``), a skeleton string of ``PROGRAM_SHAPES``
(``"Exists(<object>, Iterate(<window>, Filter(frame, [relations, <relation>, objects])))"``) or a
parsed one. Its slots span the grid's axes:

==============  ====================================================================================
slot            axis values
==============  ====================================================================================
``<window>``    every offered localization window of every video of the batch, as one flat axis
                (``Windows.rows``): the grid's dimension 0, each row tagged with its video
``<object>``    the objects present in the video (annotated or related somewhere; compact axis), also
                ``<object2>``; objExists' object ranges over all O objects (AGQA asks about absent ones)
``<relation>``  the relations that hold somewhere in the video (compact axis); relExists' relation
                ranges over all R relations (AGQA asks about absent ones)
``<action>``    the action classes present in the video (compact axis), also ``<action2>``
==============  ====================================================================================

``domain="all"`` makes every object / relation slot range over the whole vocabulary (much larger
grids; cells of absent objects are answered too). Skeletons without a window slot have the
batch's videos as dimension 0.

A slot may also be filled: a word fixes the axis to that value (size 1); ``video`` or
``Localize(before, <action>)`` in the window position keeps only the rows of windows of that kind
(and that action, if named). Indirect references (object sub-programs, ``ToAction``) are not grid
slots (``TensorQAError``).

Compilation (like einops' recipes): a skeleton is matched once against the 28 AGQA program shapes
and turned into a :class:`Plan` (shape, slot bindings, the names of the primitives it calls),
cached per (skeleton text, semantics, domain). Running a plan looks each primitive up in the
registry, so ``registry.use`` / ``override`` / ``ablate`` take effect without recompiling. A
:class:`GridContext` holds what skeletons share on one batch (windows, the window x object x
relation contraction, first / last episodes) so that evaluating all 28 costs little more than the
largest few.

Memory at 256 Charades-like videos: the answer tensors are at most ~150 MiB (the two-object grids,
[V, Kr, Ko, Ko] int64 with V ~ 6K windows); per-batch scan tables are [B, F + 1, Ko, Kr] int32.
Padding every video's windows to the batch maximum instead of the flat window axis would make the
two-object grids ~5x larger (a few videos have hundreds of between windows).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

import numpy as np

import torch

from tensorqa.errors import TensorQAError
from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.filter import any_along, interacted_frames
from tensorqa.engine.primitives.localize import KIND_NAMES, VIDEO, Windows, compact, present_actions
from tensorqa.engine.program import Call, Items, Node, Slot, Word, localize as localize_node, match, parse_program
from tensorqa.engine.program_shapes import PROGRAM_SHAPES, SHAPES, ShapeSpec
from tensorqa.scenes.batch import SceneBatch, by_identity
from tensorqa.engine.semantics import AGQA, Semantics, get_semantics
from tensorqa.scenes.vocab import vocab

YES, NO = 1, 0
DOMAINS = ("present", "all")
ANSWER_KINDS = ("yes/no", "before/after", "object", "action")


# --------------------------------------------------------------------------------------------------
# Answer grids
# --------------------------------------------------------------------------------------------------

@dataclass
class AnswerGrid:
    """Answers of one skeleton for every cell of its slot grid, for every video of a batch.

    Layout: dimension 0 is "video" (the batch's videos) for skeletons without a window slot, and
    "window" for skeletons with one: then it lists the offered windows of all videos of the batch,
    video by video (a flat, PyG-style axis: padding every video to the batch's largest window
    count would make the two-object grids ~5x larger on Charades-like blocks; ``padded()``
    gives that layout). The other dimensions are the remaining
    slots, each a compact per-video axis padded to the batch maximum.

    answer:  int64[n0, *n]  answer ids: 0/1 = no/yes, 0/1 = before/after, object or action class
    defined: bool[n0, *n]   the program has an answer there (window offered, unique answer,
                            margins met, ...); ``answer`` is meaningless elsewhere
    real:    bool[n0, *n]   the cell's slot values exist (not padding of a compact axis)
    axes:    dimension names: "video" or "window", then the pattern's slot names
    video:   int64[n0]      the batch position of the video of each entry of dimension 0
    values:  "window" -> int64[n0] position of the row's window on ``windows``; every other slot
             axis -> int64[B, n]: the object / relation / action id at each position, per video
             (-1 on padding)
    windows: the batch's :class:`Windows` (decodes the "window" axis), None without one
    answer_kind: "yes/no", "before/after", "object" or "action"
    shape:   the template shape evaluated; skeleton: the canonical skeleton text

    Grids evaluated with one :class:`GridContext` may share tensors (``real``, ``video``, and
    ``defined`` where it is ``real``): treat them as read-only.
    """

    answer: torch.Tensor
    defined: torch.Tensor
    real: torch.Tensor
    axes: tuple[str, ...]
    video: torch.Tensor
    values: dict[str, torch.Tensor]
    windows: Windows | None
    answer_kind: str
    shape: str
    skeleton: str
    pattern: Node
    video_ids: tuple[str, ...]
    semantics: Semantics = field(repr=False, default=AGQA)

    def to(self, device: str | torch.device) -> "AnswerGrid":
        """The same grid with its tensors on ``device``."""
        return replace(self, answer=self.answer.to(device), defined=self.defined.to(device),
                       real=self.real.to(device), video=self.video.to(device),
                       values={k: t.to(device) for k, t in self.values.items()},
                       windows=None if self.windows is None else self.windows.to(device))

    def padded(self) -> "AnswerGrid":
        """The same grid with dimension 0 split into (video, window): axes ("video", "window",
        ...), shape [B, W, ...] with W the batch's largest number of offered windows per video
        (the layout of ``Windows``), cells of padding windows not real. Costs W / (V / B) times
        the memory of the flat grid; a grid without a window axis is returned as is."""
        if self.axes[0] != "window":
            return self
        B, W = self.windows.valid.shape
        rows = (self.video, self.values["window"])

        def scatter(t: torch.Tensor, fill) -> torch.Tensor:
            out = torch.full((B, W, *t.shape[1:]), fill, dtype=t.dtype, device=t.device)
            out[rows] = t
            return out

        pos = torch.arange(W, device=self.video.device).expand(B, W)
        values = dict(self.values, window=torch.where(self.windows.valid, pos, -1))
        return replace(self, answer=scatter(self.answer, 0), defined=scatter(self.defined, False),
                       real=scatter(self.real, False), axes=("video",) + self.axes,
                       video=torch.arange(B, device=self.video.device), values=values)

    def cells(self) -> torch.Tensor:
        """int64[M, len(axes)]: indices of the defined cells."""
        return self.defined.nonzero()

    def axis_ids(self, name: str) -> torch.Tensor:
        """The id each cell has on axis ``name`` (window position, object / relation / action id),
        as an int64 tensor broadcastable to the grid's shape."""
        d = self.axes.index(name)
        shape = [1] * self.answer.dim()
        if d == 0:
            ids = self.values[name] if name == "window" else self.video
            shape[0] = ids.shape[0]
            return ids.reshape(shape)
        ids = self.values[name][self.video]  # [n0, n]
        shape[0], shape[d] = ids.shape
        return ids.reshape(shape)

    def slot_values(self, cell: tuple[int, ...]) -> dict[str, Node]:
        """The pattern's slot fillers (program nodes) of one cell (indices along ``axes``)."""
        v = vocab()
        b = int(self.video[int(cell[0])])
        out: dict[str, Node] = {}
        for d, (name, i) in enumerate(zip(self.axes, cell)):
            if name == "video":
                continue
            value = int(self.values[name][int(i)]) if d == 0 else int(self.values[name][b, int(i)])
            if value < 0:
                raise TensorQAError(f"grid: cell {tuple(int(c) for c in cell)} is padding on axis {name!r}")
            if name == "window":
                out[name] = _window_node(self.windows, b, value)
            elif name.startswith("object"):
                out[name] = Word(v.object_english[value])
            elif name.startswith("relation"):
                out[name] = Word(v.relation_english[value])
            else:
                out[name] = Word(action_word(value))
        return out

    def program(self, cell: tuple[int, ...]) -> str:
        """The AGQA program text of one cell."""
        return str(self.pattern.substitute(self.slot_values(cell)))

    def english(self, cell: tuple[int, ...]) -> str:
        """The released answer string of one cell (meaningful where defined)."""
        return answer_text(self.answer_kind, int(self.answer[tuple(int(c) for c in cell)]))

    def decode(self, cell: tuple[int, ...]) -> tuple[str, str | None]:
        """(program text, English answer or None where undefined) of one cell."""
        c = tuple(int(x) for x in cell)
        return self.program(c), (self.english(c) if bool(self.defined[c]) else None)

    def video_id(self, cell: tuple[int, ...]) -> str:
        """The id of the video a cell belongs to."""
        return self.video_ids[int(self.video[int(cell[0])])]


def action_word(a: int) -> str:
    """The word a program uses for action class ``a``: its phrase, or its Charades id when the
    phrase names the class it is merged into (``holding a towel`` reads as ``holding a blanket``)."""
    v = vocab()
    phrase = v.action_phrases[a]
    return phrase if v.action_index(phrase) == a else v.actions[a]


def answer_text(kind: str, value: int) -> str:
    v = vocab()
    if kind == "yes/no":
        return "yes" if value == YES else "no"
    if kind == "before/after":
        return "before" if value == 0 else "after"
    if kind == "object":
        return v.object_english[value]
    return v.action_phrases[value]


def _window_node(windows: Windows, b: int, w: int) -> Node:
    word = KIND_NAMES[int(windows.word[b, w])]
    x, y = (int(a) for a in windows.action[b, w])
    if word == "video":
        return localize_node("video", "")
    if word == "between":
        return localize_node("between", Word(action_word(x)), Word(action_word(y)))
    return localize_node(word, Word(action_word(x)))


# --------------------------------------------------------------------------------------------------
# Shapes and plans
# --------------------------------------------------------------------------------------------------

# shape -> its evaluator (the _EVALUATORS entry), read from program_shapes.SHAPES; which
# primitives a shape calls is recorded from a run (shape_primitives), not written down.
SHAPE_EVALUATORS: dict[str, str] = {name: spec.evaluator for name, spec in SHAPES.items()}
PAIR_SHAPES = frozenset(name for name, spec in SHAPES.items() if spec.pair)


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
    """A compiled skeleton: which shape it is, how each pattern slot is bound, what it calls.

    fixed:   pattern slot -> class id, for slots the skeleton fills with a word
    window_kind: restrict the window axis to this word (VIDEO ... BETWEEN), or None
    window_actions: (X, Y) class ids the window must have, None where free
    primitives: registry names this plan calls, as a run records them (:func:`shape_primitives`)
    """

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
    """The registry names a plan of ``shape`` looks up when it runs (sorted): recorded from one run
    on a small probe video with a fresh context, under the registry's plain state, so that the
    list cannot drift from the code (the ablations read it)."""
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
        if word in ("before", "after", "while") and len(node.args) == 2:
            acts = [node.args[1]]
        elif word == "between" and isinstance(node.args[1], Items) and len(node.args[1]) == 2:
            acts = list(node.args[1].items)
        else:
            raise TensorQAError(f"grid: unsupported window {str(node)!r} in {skeleton!r}")
        ids = [None if isinstance(a, Slot) else _resolve_word("action", a, skeleton) for a in acts]
        return KIND_NAMES.index(word), (ids[0], ids[1] if len(ids) > 1 else None)
    raise TensorQAError(f"grid: unsupported window {str(node)!r} in {skeleton!r}")


@functools.lru_cache(maxsize=512)
def _compile(text: str, semantics: Semantics, domain: str) -> Plan:
    """The plan of skeleton text: matched once against the shapes (first name wins where two
    shapes print one program)."""
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
    return Plan(skeleton=str(node), shape=shape, evaluator=SHAPE_EVALUATORS[shape],
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
    """The cached plan of a skeleton: a :class:`ShapeSpec` (or an object with a ``shape`` ShapeSpec,
    such as an AGQA ``TemplateSpec``), a shape name, skeleton text or a parsed skeleton. A spec or a
    name is its plan directly; text is matched once against the 28 shapes.

    domain: "present" (object and relation slots range over what occurs in each video, except
    objExists' object and relExists' relation, which AGQA also asks about absent ones) or "all"
    (every slot over the whole vocabulary)."""
    if domain not in DOMAINS:
        raise TensorQAError(f"grid: domain must be one of {', '.join(DOMAINS)}, not {domain!r}")
    spec = getattr(skeleton, "shape", skeleton)
    if isinstance(spec, ShapeSpec):
        return _shape_plan(spec.name, get_semantics(semantics), domain)
    if isinstance(skeleton, str) and skeleton in SHAPES:
        return _shape_plan(skeleton, get_semantics(semantics), domain)
    return _compile(str(skeleton), get_semantics(semantics), domain)


# --------------------------------------------------------------------------------------------------
# Running plans
# --------------------------------------------------------------------------------------------------

class GridContext:
    """Per-batch intermediates shared by every skeleton evaluated on one batch (windows, the
    window x object x relation contraction, first / last episodes, compact axes), computed on
    first use through the registry. They reflect the registry (backend, overrides, ablations) at
    that first use: build a new context after changing it."""

    def __init__(self, batch: SceneBatch, semantics: Semantics | str = AGQA):
        self.batch = batch
        self.semantics = get_semantics(semantics)
        self._cache: dict[str, object] = {}

    def _get(self, key: str, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def windows(self) -> Windows:
        return self._get("windows", lambda: registry.lookup("localize")(self.batch, self.semantics))

    @property
    def rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(video int64[V], window int64[V]): the offered windows of the batch, video by video."""
        return self._get("rows", lambda: self.windows.valid.nonzero(as_tuple=True))

    @property
    def flat(self) -> Windows:
        """The offered windows in the flat layout [V] (``Windows.rows``), in ``rows`` order."""
        return self._get("flat", lambda: self.windows.rows())

    @property
    def act(self) -> torch.Tensor:
        """bool[B, F, A]: action class a is going on at keyframe f."""
        return self._get("act", lambda: self.batch.act)

    @property
    def actions(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(ids int64[B, K], valid bool[B, K]): the action classes present (compact axis)."""
        return self._get("actions", lambda: present_actions(self.batch))

    @property
    def compare(self):
        """Compare windows of the present action classes."""
        return self._get("compare", lambda: registry.lookup("compare_windows")(self.batch, self.actions[0], self.semantics))

    def axes(self, domain: str) -> "RelationAxes":
        """The object and relation axes of ``domain`` ("present": compact axes of the objects and
        relations that occur in each video; "all": the whole vocabularies) and the scene's
        relations on them."""
        def make() -> RelationAxes:
            b = self.batch
            frames = b.frame_mask[:, :, None, None]
            if domain == "all":
                rel = b.rel & frames
                oids, ovalid = _all_axis(b, rel.shape[2])
                rids, rvalid = _all_axis(b, rel.shape[3])
            else:
                oids, ovalid = compact(registry.lookup("present_objects")(b))
                rids, rvalid = compact(registry.lookup("present_relations")(b))
                # gather the compact axes first: the masks then apply to the (~10x) smaller tensor
                rel = _gather_axis(_gather_axis(b.rel, 2, oids), 3, rids)
                rel = rel & (frames & ovalid[:, None, :, None] & rvalid[:, None, None, :])
            return RelationAxes(rel, any_along(rel, 2), oids, ovalid, rids, rvalid)
        return self._get("axes/" + domain, make)

    def relate(self, domain: str) -> torch.Tensor:
        """bool[B, W, Ko, Kr]: the relation holds with the object somewhere in the window (the
        per-video window axis of ``windows``; the matmul contraction of ``primitives.relate``)."""
        return self._get("relate/" + domain, lambda: registry.lookup("relate")(self.axes(domain).rel, self.windows))

    def relate_rows(self, domain: str) -> torch.Tensor:
        """bool[V, Ko, Kr]: :meth:`relate` on the flat rows (``rows`` order), computed on them
        directly: the padded [B, W] layout is ~5x larger (a few videos have hundreds of windows)."""
        return self._get("relate_rows/" + domain, lambda: registry.lookup("relate")(self.axes(domain).rel, self.flat))

    def episodes(self, domain: str, forward: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(object id int64[V, Kr], defined bool[V, Kr]) of objFirst (forward) / objLast, shared by
        the query and verify templates."""
        def make():
            ax = self.axes(domain)
            if forward:
                objects, ok = registry.lookup("first_episode")(ax.occurs, ax.rel, self.flat, self.semantics)
            else:
                objects, ok = registry.lookup("last_episode")(ax.occurs, ax.rel, self.flat, self.semantics)
            pos, one = registry.lookup("only_item")(objects.transpose(-1, -2))  # [V, Kr]
            return _ids_at(ax.oids, self.flat.video, pos), ok & one
        return self._get(f"episodes/{domain}/{forward}", make)


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


def evaluate(skeleton: "str | Node | ShapeSpec", batch: SceneBatch, semantics: Semantics | str = AGQA,
             context: GridContext | None = None, domain: str = "present") -> AnswerGrid:
    """Evaluate a skeleton over its whole slot grid for every video of ``batch``.

    skeleton: a ShapeSpec (or an AGQA TemplateSpec), a shape name, a skeleton string or a parsed
    skeleton; semantics: a Semantics
    or preset name; context: reuse per-batch intermediates across skeletons (same batch and
    semantics).
    """
    sem = get_semantics(semantics)
    if context is None:
        context = GridContext(batch, sem)
    elif context.batch is not batch or context.semantics != sem:
        raise TensorQAError("grid: the context was built for another batch or semantics")
    return compile_skeleton(skeleton, sem, domain).run(context)


def _all_axis(batch: SceneBatch, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.arange(n, device=batch.device).expand(len(batch), n)
    return ids, torch.ones_like(ids, dtype=torch.bool)


def _gather_axis(t: torch.Tensor, dim: int, ids: torch.Tensor) -> torch.Tensor:
    """Select positions ids int64[n0, K] (-1 = padding) along ``dim`` of t [n0, ...]."""
    shape = list(t.shape)
    shape[dim] = ids.shape[1]
    view = [ids.shape[0]] + [1] * (t.dim() - 1)
    view[dim] = ids.shape[1]
    return t.gather(dim, ids.clamp(min=0).reshape(view).expand(shape))


def _run(plan: Plan, ctx: GridContext) -> AnswerGrid:
    answer, defined, axes, kind = _EVALUATORS[plan.evaluator](plan, ctx)
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
        video = ctx._get("video_axis", lambda: torch.arange(B, device=answer.device))
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
                answer = _gather_axis(answer, d, pos[video])
                defined = None if defined is None else _gather_axis(defined, d, pos[video])
                values[name] = torch.where(hit.any(1, keepdim=True), ids.gather(1, pos), -1)
                masks[d - 1] = hit.any(1, keepdim=True)[video]
        real = _outer(masks, video)
    if defined is None:
        defined = real if real.shape == answer.shape else real.expand(answer.shape)
    elif not filtered and not fixed and any(defined is t for t in ctx._get("shared_defined", list)):
        # a result two templates share (objWhatChoose / objFirstChoose): one shared mask too
        ok = defined
        defined = by_identity(ctx._get("defined", list), (ok, real), lambda: ok & real)
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
    """:func:`_outer` of ``valid[video]`` for each axis, computed once per context for each
    combination of axes: the five pair templates share one [V, Kr, Ko, Ko] mask, the object-relation
    templates one [V, Kr, Ko]. Matched by identity (the context holds the tensors, so an identity
    is never reused while the entry lives); the grids that share it must not modify it."""
    return by_identity(ctx._get("real", list), (video, *valids),
                       lambda: _outer([valid[video] for valid in valids], video))


# -- evaluators: (plan, ctx) -> (answer, defined, axes, answer kind) ------------------------------------

def _window_axis(ctx: GridContext):
    """The flat window axis: one row per offered window of the batch (every row is real: no mask)."""
    return ("window", ctx.rows[1], None)


def _yes_no(truth: torch.Tensor) -> torch.Tensor:
    return truth.long()


def _obj_exists(plan, ctx):
    # AGQA asks objExists about every object, present or absent: always the whole vocabulary
    rule = ctx.semantics.interaction_rule("objExists")
    truth = registry.lookup("contacted")(ctx.batch, ctx.flat, rule)  # [V, O]
    O = truth.shape[-1]
    return _yes_no(truth), None, [_window_axis(ctx), ("object", *_all_axis(ctx.batch, O))], "yes/no"


def _obj_rel_exists(plan, ctx):
    ax = ctx.axes(plan.domain)
    truth = registry.lookup("exists")(ctx.relate_rows(plan.domain)).transpose(1, 2)  # [V, Kr, Ko]
    axes = [_window_axis(ctx), ("relation", ax.rids, ax.rvalid), ("object", ax.oids, ax.ovalid)]
    return _yes_no(truth), None, axes, "yes/no"


def _rel_exists(plan, ctx):
    # AGQA asks relExists about absent relations too: always the whole vocabulary
    truth = registry.lookup("exists")(registry.lookup("relations_present")(ctx.batch, ctx.flat))  # [V, R]
    axes = [_window_axis(ctx), ("relation", *_all_axis(ctx.batch, truth.shape[-1]))]
    return _yes_no(truth), None, axes, "yes/no"


def _act_exists(plan, ctx):
    ids, valid = ctx.actions
    present = registry.lookup("actions_in")(ctx.batch, ctx.flat)  # [V, A]
    truth = registry.lookup("exists")(present, ids[ctx.flat.video])  # [V, K]
    return _yes_no(truth), None, [_window_axis(ctx), ("action", ids, valid)], "yes/no"


def _and_or_xor(plan, ctx):
    ax = ctx.axes(plan.domain)
    held = registry.lookup("exists")(ctx.relate_rows(plan.domain)).transpose(1, 2)  # [V, Kr, Ko]
    a, b = held[..., :, None], held[..., None, :]  # <object> rows, <object2> columns
    if plan.shape == "andObjRelExists":
        truth = registry.lookup("and")(a, b, ctx.semantics)
    else:
        truth = registry.lookup("xor")(a, b, ctx.semantics)
    axes = [_window_axis(ctx), ("relation", ax.rids, ax.rvalid), ("object", ax.oids, ax.ovalid),
            ("object2", ax.oids, ax.ovalid)]
    return _yes_no(truth), None, axes, "yes/no"


def _obj_what_general(plan, ctx):
    rule = ctx.semantics.interaction_rule("objWhatGeneral")
    present = registry.lookup("contacted")(ctx.batch, ctx.flat, rule)  # [V, O]
    obj, one = registry.lookup("only_item")(present)
    return obj, one, [_window_axis(ctx)], "object"


def _ids_at(ids: torch.Tensor, video: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """ids[video[v], pos[v, ...]]: ids int64[B, K], video int64[V], pos int64[V, ...]."""
    V = pos.shape[0]
    return ids[video].gather(1, pos.reshape(V, -1).clamp(min=0)).reshape(pos.shape)


def _obj_what(plan, ctx):
    ax = ctx.axes(plan.domain)
    pos, one = registry.lookup("only_item")(ctx.relate_rows(plan.domain).transpose(1, 2))  # over objects: [V, Kr]
    obj = _ids_at(ax.oids, ctx.flat.video, pos)
    return obj, one, [_window_axis(ctx), ("relation", ax.rids, ax.rvalid)], "object"


def _forward(plan) -> bool:
    return bool(SHAPES[plan.shape].forward)


def _episode(plan, ctx):
    ax = ctx.axes(plan.domain)
    obj, ok = ctx.episodes(plan.domain, _forward(plan))
    return obj, ok, [_window_axis(ctx), ("relation", ax.rids, ax.rvalid)], "object"


def _episode_verify(plan, ctx):
    ax = ctx.axes(plan.domain)
    obj, ok = ctx.episodes(plan.domain, _forward(plan))  # [V, Kr]
    same = registry.lookup("equals")(obj[..., None], ax.oids[ctx.flat.video][:, None, :])  # [V, Kr, Ko]
    defined = ok[..., None].expand_as(same)
    axes = [_window_axis(ctx), ("relation", ax.rids, ax.rvalid), ("object", ax.oids, ax.ovalid)]
    return _yes_no(same), defined, axes, "yes/no"


def _shared_grid(ctx: GridContext, key: str, make):
    """``make()`` -> (answer, defined) once per context, for templates whose grids are the same
    (their rules, applied later, differ); ``_run`` then shares ``defined & real`` too."""
    def made():
        answer, ok = make()
        ctx._get("shared_defined", list).append(ok)
        return answer, ok
    return ctx._get(key, made)


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
    axes = [_window_axis(ctx), ("relation", ax.rids, ax.rvalid), ("object", ax.oids, ax.ovalid),
            ("object2", ax.oids, ax.ovalid)]
    return answer, ok, axes, "object"


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


def _longer(plan) -> bool:
    return bool(SHAPES[plan.shape].longer)


def _length_winner(plan, ctx):
    """(winner, defined) of every pair of present actions, shared by the Choose and Verify
    templates of one comparison (longer or shorter)."""
    longer = _longer(plan)
    return ctx._get(f"length/{longer}", lambda: registry.lookup("length_compare")(
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
    frames = _gather_axis(frames, 2, ax.oids) & ax.ovalid[:, None, :]
    side, ok = registry.lookup("side_of")(frames, ctx.compare, ctx.batch.frame_mask.sum(1))  # [B, K, Ko]
    return side, ok, [("action", ids, valid), ("object", ax.oids, ax.ovalid)], "before/after"


_EVALUATORS = {
    "obj_exists": _obj_exists, "obj_rel_exists": _obj_rel_exists, "rel_exists": _rel_exists,
    "act_exists": _act_exists, "and_or_xor": _and_or_xor, "obj_what_general": _obj_what_general,
    "obj_what": _obj_what, "choose": _choose, "act_what": _act_what, "episode": _episode,
    "episode_verify": _episode_verify, "act_edge": _act_edge, "length_choose": _length_choose,
    "length_verify": _length_verify, "superlative": _superlative, "act_time": _act_time,
    "rel_time": _rel_time, "obj_time": _obj_time,
}
