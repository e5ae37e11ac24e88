"""Scalar reference executor: run one AGQA program on one video, the way AGQA's generator answers it.

This is the oracle the vectorized primitives are tested against, so it is written to be read,
not to be fast: plain Python loops over one video's keyframes and action instances.

    run_program(program, source, video_id, semantics=AGQA) -> str | Undefined

Answers are AGQA's released strings: ``yes`` / ``no``, ``before`` / ``after``, an object's English
name (``vocab().object_english``) or an action's phrase (``vocab().action_phrases``).
``Undefined(reason)`` (falsy) means the question does not exist on this video.

What the executor decides and what it leaves to the template layer
-----------------------------------------------------------------
AGQA computes an answer with a solver, then filters it with per-template qualifiers. The executor
implements the solvers (every rule of agqa_semantics.md §a and the "Answer" rules of §b) and
everything that makes the answer itself undefined: a window that is not offered, an action that
does not occur, no or several candidates where one is needed, a stretch that does not end inside
the window, a margin not met, a single instance required to define a duration or a side. It does
NOT apply validity qualifiers (P-notInAction, P-validObjRel, P-pair, P-unambiguous, negative
relations, "the answer is not X", transition / taking / putting exclusions, "more than one
candidate" / "more than one object" triviality checks, "both objects in W" for the choose
templates, reference-building rules): the template layer applies those.

Keyframes and instances
-----------------------
* Keyframes are ordered by frame number (``VideoScene.sorted``); a window is a list of them.
* An instance's keyframes are the keyframes with start <= secs <= end (float32, as
  ``SceneBatch.inst_frames``). Instances without any keyframe are ignored everywhere (AGQA's graph
  only has actions with annotated frames: its windows read an action's first / last frame).
* Instances are ordered by (start, end, class); "first" / "last" instance of X follow that order.
* "Action(s) at a keyframe" = the classes of the instances whose keyframes include it.
* An object is "present" at a keyframe when ``obj[f, o]``; relation r "occurs" at f when
  ``rel[f, o, r]`` for some object o. Times are compared in float32.

Windows (§a.1): ``video`` = all keyframes. ``Localize(before, X)``: from the first keyframe up to
X's first keyframe, included (``localize_before_includes_x``); not offered when X's first keyframe
is the video's first. ``Localize(after, X)``: keyframes strictly after X's last keyframe; not
offered when empty. ``Localize(while, X)``: X's first through last keyframe. Before / after / while
use X's first instance. ``Localize(between, [X, Y])`` (or ``Localize(between, X, Y)``): keyframes
strictly after the last instance of X's last keyframe and strictly before the first instance of
Y's first keyframe; not offered when X's keyframe is at or after Y's (reversed, overlapping,
shared keyframe) or when nothing lies between. c044 never localizes (``never_localize``).

Interaction ("contacted", §c.1) is decided by where ``Filter(frame, [objects])`` stands:
* ``Exists(o, Iterate(W, Filter(frame, [objects])))`` (objExists, also inside AND / XOR): any
  contact relation except not contacting (other relationship counts);
* inside ``Compare([before, after], ...)`` (objTime): contact except not contacting and other
  relationship;
* ``Query(class, OnlyItem(Iterate(W, Filter(frame, [objects]))))`` (objWhatGeneral): any object
  present in the keyframe.
``semantics.interaction == "unified"`` uses the objTime rule in all three.

Program shapes (``program_shapes.PROGRAM_SHAPES``) and their rules:
* Exists over ``Filter(frame, [relations])`` / ``[relations, r, objects]`` / ``[actions]``: some
  keyframe of W has the relation / the relation with the object / an instance of the action.
* ``AND``; ``XOR(A, B)`` is "A and not B" (``xor_is_and_not``), as AGQA's solver.
* ``Query(class, OnlyItem(Iterate(W, Filter(frame, [relations, r, objects]))))`` (objWhat and the
  "whole" object reference): the union of r's objects over W must be exactly one object.
* ``IterateUntil(forward, W, Exists(r, ...), Filter(frame, [relations, r, objects]))`` (objFirst):
  first keyframe of W with r; the stretch runs to the first later keyframe without r, which must
  exist in W; the union of r's objects over the stretch must be one object. ``backward`` (objLast):
  last keyframe with r; scanning back, the nearest keyframe g without r must exist in W; the union
  runs from ``obj_last_extra_keyframes`` keyframes before g (clamped to W) to the last occurrence.
  ``OnlyItem`` of either (objFirstVerify / objLastVerify, in ``Equals``) is the same object.
* ``Choose(o1, o2, IterateUntil(dir, W, XOR(Exists(o1, F), Exists(o2, F)), F))`` (objFirstChoose,
  objLastChoose) and ``Choose(o1, o2, Query(class, OnlyItem(Iterate(W, F))))`` (objWhatChoose, which
  AGQA answers like objFirstChoose): the first (last) keyframe of W where r holds with o1 or o2
  (AGQA's solver tests "or", whatever the printed XOR says); o1 if it holds there, else o2; its
  stretch (forward: to the keyframe where it stops; backward: from the nearest earlier keyframe g
  where it does not hold) must end inside W; if the stretch, stop keyframe included
  (``choose_stretch_includes_stop``), has r with both objects the answer is undefined.
* ``IterateUntil(forward, W, HasItem(Filter(frame, [actions])), Filter(frame, [actions]))``
  (actFirst): the keyframes of W within ``act_window_s`` of W's first show at most one class; t =
  W's first keyframe time - ``act_first_slack_s`` (0 at the video's first keyframe); the instance
  with the earliest start among those starting at or after t, unique. ``backward`` (actLast): the
  keyframes of W within ``act_window_s`` before W's last show at most one class; t = W's last
  keyframe time (+inf at the video's end only when ``act_last_video_end_is_last_keyframe`` is
  False); the instance with the latest end among those ending before t, unique.
* ``Query(class, OnlyItem(Iterate(W, Filter(frame, [actions]))))``: AGQA prints this for two
  templates and tells them apart by the window. After X or the whole video (actWhatAfterAll): W's
  first keyframe has at most one action; t as for actFirst; exactly one instance ends at or after
  t. Before X (actWhatBefore): W's last keyframe has at most one action; t = its time (+inf at the
  video's last keyframe); exactly one instance ends strictly before t. While / between: undefined.
* ``Superlative(max|min, Filter(video, [actions]), Subtract(Query(end, action), Query(start,
  action)))`` (actLongest / actShortest): at least two instances; rank all instances by end -
  start; the top (bottom) two must differ by more than ``duration_margin_s``.
  ``Superlative(max|min, [Filter(video, [actions, A]), Filter(video, [actions, B])], ...)`` (length
  choose; ``Equals(A, ...)`` for verify): A and B have exactly one instance each and their lengths
  differ by more than the margin.
* ``Compare([before, after], Exists(x, Iterate(Localize(temporal tag, A), Filter(frame, [k]))))``
  (actTime / relTime / objTime, §a.2): A has exactly one instance; compare-before = keyframes
  strictly before A's first keyframe (``compare_before_includes_x``), compare-after = strictly
  after its last, during = A's keyframes. Actions: x has exactly one instance; undefined if all of
  x's keyframes are within A's; "before" if all precede A (and, with
  ``act_time_persistence_check``, x's (object, verb) relation occurs in no keyframe after A),
  "after" symmetrically, else undefined. Relations / objects: undefined if x occurs during A;
  the answer is the one side where it occurs, undefined if both or neither.

Indirect references: an object argument may be ``Query(class, OnlyItem(...))`` (first / last /
whole reference; its referent must exist and be unique); an action argument may be
``ToAction(verb, <object>)``: the action class with that verb and object (merged-away classes
excluded); when several classes share the pair, the one occurring in the video, and undefined
unless exactly one does.

Malformed programs (unknown shape, a relation where an object is needed, unfilled slots) raise
``TensorQAError``; they are not questions at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.engine.program import Call, Items, Node, Slot, Word, parse_program, verb_index
from tensorqa.scenes.batch import SceneBatch, VideoScene
from tensorqa.engine.semantics import AGQA, ANY_PRESENT, Semantics, get_semantics, interaction_relations
from tensorqa.scenes.vocab import NO_OBJECT, vocab


@dataclass(frozen=True)
class Undefined:
    """The program has no answer on this video (the question would not be generated). Falsy."""

    reason: str

    def __bool__(self) -> bool:
        return False


class _Undefined(Exception):
    """Raised inside the executor; ``run_program`` turns it into :class:`Undefined`."""


@dataclass(frozen=True)
class _Entity:
    kind: str  # "object" or "action"
    index: int


@dataclass
class _Instance:
    cls: int
    start: np.float32
    end: np.float32
    frames: list[int]  # keyframe positions, ascending


@dataclass
class _Window:
    kind: str  # "video", "before", "after", "while", "between"
    frames: list[int]  # keyframe positions, ascending


# -- the video ----------------------------------------------------------------------------------------
class _Video:
    """One video's keyframes and instances as plain lists (positions index the sorted keyframes)."""

    def __init__(self, scene: VideoScene):
        s = scene.sorted()
        self.video_id = s.video_id
        self.num_frames = s.num_frames
        self.frame_ids = [int(x) for x in s.frame_ids]
        self.secs = [np.float32(x) for x in s.frame_secs]
        self.rel = s.rel
        self.obj = s.obj
        self.instances: list[_Instance] = []
        for n in range(s.num_instances):
            start, end = np.float32(s.inst_start[n]), np.float32(s.inst_end[n])
            frames = [f for f in range(self.num_frames) if start <= self.secs[f] <= end]
            if frames:  # an instance without keyframes is not in AGQA's graph
                self.instances.append(_Instance(int(s.inst_cls[n]), start, end, frames))

    def instances_of(self, cls: int) -> list[_Instance]:
        return [i for i in self.instances if i.cls == cls]

    def classes_at(self, f: int) -> set[int]:
        return {i.cls for i in self.instances if f in i.frames}

    def relation_occurs(self, f: int, r: int) -> bool:
        return any(self.rel[f, o, r] for o in range(self.rel.shape[1]))

    def objects_with(self, f: int, r: int) -> set[int]:
        return {o for o in range(self.rel.shape[1]) if self.rel[f, o, r]}


# -- source handling -----------------------------------------------------------------------------------
def _scene_of(source, video_id: str | None) -> VideoScene:
    if isinstance(source, VideoScene):
        if video_id is not None and video_id != source.video_id:
            raise TensorQAError(f"run_program: scene is video {source.video_id!r}, not {video_id!r}")
        return source
    if video_id is None:
        raise TensorQAError("run_program: a video_id is needed to pick a video from the source")
    if isinstance(source, SceneBatch):
        if video_id not in source.video_ids:
            raise TensorQAError(f"run_program: no video {video_id!r} in the batch")
        return source[source.video_ids.index(video_id)].scenes()[0]
    if isinstance(source, Mapping):
        if video_id not in source:
            raise TensorQAError(f"run_program: no video {video_id!r} in the mapping")
        return source[video_id]
    if hasattr(source, "scene"):  # SceneStore (imported lazily: it needs h5py)
        return source.scene(video_id)
    raise TensorQAError(f"run_program: cannot read videos from a {type(source).__name__}")


class VideoExecutor:
    """The scalar executor bound to one video: its tables are built once, then any number of
    programs run on it (``run_program`` builds them on every call). The public face of the
    executor for callers that ask many programs of one video (``decompose``)."""

    def __init__(self, scene: VideoScene, semantics: Semantics | str = AGQA):
        self.video = _Video(scene)
        self.semantics = get_semantics(semantics)
        self._executor = _Executor(self.video, self.semantics)

    def run(self, program: Node | str) -> "str | Undefined":
        """The released answer of ``program`` (text or tree) on this video, or Undefined."""
        node = parse_program(program) if isinstance(program, str) else program
        try:
            return _render(self._executor.answer(node))
        except _Undefined as u:
            return Undefined(str(u))

    def window_frames(self, window: Node | str) -> "list[int] | Undefined":
        """A window's keyframes (Charades frame numbers, ascending), or Undefined when the window
        is not offered on this video."""
        node = parse_program(window) if isinstance(window, str) else window
        try:
            w = self._executor.window(node)
        except _Undefined as u:
            return Undefined(str(u))
        return [self.video.frame_ids[f] for f in w.frames]


def run_program(program: Node | str, source, video_id: str | None = None,
                semantics: Semantics | str = AGQA) -> "str | Undefined":
    """Answer ``program`` on one video.

    program: a program tree or AGQA program text (no unfilled slots).
    source: a ``SceneStore``, a ``SceneBatch``, a ``VideoScene`` or a dict video_id -> VideoScene.
    video_id: the video (optional when ``source`` is a VideoScene).
    semantics: a :class:`Semantics` or a preset name ("agqa", "strict").
    Returns the released answer string, or :class:`Undefined` with the reason.
    """
    return VideoExecutor(_scene_of(source, video_id), semantics).run(program)


def localize_frames(window: Node | str, source, video_id: str | None = None,
                    semantics: Semantics | str = AGQA) -> "list[int] | Undefined":
    """The keyframes (Charades frame numbers, ascending) of a window: ``video``,
    ``Localize(before|after|while, X)`` or ``Localize(between, [X, Y])``; Undefined when the window
    is not offered on this video."""
    return VideoExecutor(_scene_of(source, video_id), semantics).window_frames(window)


def _render(value) -> str:
    v = vocab()
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, _Entity):
        return v.object_english[value.index] if value.kind == "object" else v.action_phrases[value.index]
    raise AssertionError(f"unexpected value {value!r}")


# -- shape helpers -----------------------------------------------------------------------------------------
def _is_word(node: Node, *texts: str) -> bool:
    return isinstance(node, Word) and (not texts or node.text in texts)


def _is_call(node: Node, func: str, nargs: int | None = None) -> bool:
    return isinstance(node, Call) and node.func == func and (nargs is None or len(node.args) == nargs)


def _unsupported(node: Node, why: str = "") -> TensorQAError:
    return TensorQAError(f"program: unsupported shape {str(node)!r}" + (f" ({why})" if why else ""))


def _frame_filter(node: Node) -> tuple:
    """Decode ``Filter(frame, [keys])`` -> ("objects",) | ("relations",) | ("actions",) |
    ("relations", <relation node>)."""
    if not (_is_call(node, "Filter", 2) and _is_word(node.args[0], "frame") and isinstance(node.args[1], Items)):
        raise _unsupported(node, "expected Filter(frame, [...])")
    keys = node.args[1].items
    if len(keys) == 1 and _is_word(keys[0], "objects", "relations", "relation", "actions"):
        k = keys[0].text
        return ("relations",) if k == "relation" else (k,)
    if len(keys) == 3 and _is_word(keys[0], "relations", "relation") and _is_word(keys[2], "objects"):
        return ("relations", keys[1])
    raise _unsupported(node, "unknown Filter keys")


def _is_length(node: Node) -> bool:
    """``Subtract(Query(end, action), Query(start, action))``."""
    return (_is_call(node, "Subtract", 2)
            and _is_call(node.args[0], "Query", 2) and _is_word(node.args[0].args[0], "end")
            and _is_word(node.args[0].args[1], "action")
            and _is_call(node.args[1], "Query", 2) and _is_word(node.args[1].args[0], "start")
            and _is_word(node.args[1].args[1], "action"))


# -- the executor --------------------------------------------------------------------------------------------
class _Executor:
    def __init__(self, video: _Video, sem: Semantics):
        self.v = video
        self.sem = sem
        self.vocab = vocab()
        self._rule_relations: dict[str, list[int]] = {}

    # -- entry ------------------------------------------------------------------------------------------
    def answer(self, node: Node):
        if isinstance(node, Call) and node.func in ("Exists", "AND", "XOR", "Equals", "Compare", "Choose"):
            return self.value(node)
        if _is_call(node, "Query", 2) or _is_call(node, "Superlative", 3):
            return self.value(node)
        raise _unsupported(node, "not an answer-producing program")

    def value(self, node: Node):
        if isinstance(node, Slot):
            raise TensorQAError(f"program: unfilled slot {node} in the program")
        if not isinstance(node, Call):
            raise _unsupported(node)
        f, a = node.func, node.args
        if f == "Exists":
            return self.exists(node)
        if f == "AND":
            return bool(self.boolean(a[0]) and self.boolean(a[1]))
        if f == "XOR":
            x, y = self.boolean(a[0]), self.boolean(a[1])
            return (x and not y) if self.sem.xor_is_and_not else (x != y)
        if f == "Equals":
            return self.entity(a[0]) == self.entity(a[1])
        if f == "Query":
            if not _is_word(a[0], "class") or not _is_call(a[1], "OnlyItem", 1):
                raise _unsupported(node, "expected Query(class, OnlyItem(...))")
            return self.only_item(a[1].args[0])
        if f == "OnlyItem":
            return self.only_item(a[0])
        if f == "Choose":
            return self.choose(node)
        if f == "Superlative":
            return self.superlative(node)
        if f == "Compare":
            return self.compare(node)
        raise _unsupported(node)

    def boolean(self, node: Node) -> bool:
        value = self.value(node)
        if not isinstance(value, bool):
            raise _unsupported(node, "expected a yes/no sub-program")
        return value

    # -- arguments --------------------------------------------------------------------------------------
    def entity(self, node: Node) -> _Entity:
        """An object or action argument of Equals: a word, a reference or a sub-program."""
        if isinstance(node, Word):
            kinds = []
            for kind, lookup in (("object", self.vocab.object_index), ("action", self.vocab.action_index)):
                try:
                    kinds.append(_Entity(kind, lookup(node.text)))
                except TensorQAError:
                    pass
            if len(kinds) != 1:
                raise TensorQAError(f"program: {node.text!r} is not an object or an action")
            return kinds[0]
        if _is_call(node, "ToAction"):
            return _Entity("action", self.action(node))
        value = self.value(node)
        if not isinstance(value, _Entity):
            raise _unsupported(node, "expected an object or an action")
        return value

    def object(self, node: Node) -> int:
        if isinstance(node, Slot):
            raise TensorQAError(f"program: unfilled slot {node} in the program")
        if isinstance(node, Word):
            try:
                return self.vocab.object_index(node.text)
            except TensorQAError:
                raise TensorQAError(f"program: {node.text!r} is not an object") from None
        value = self.value(node)
        if not (isinstance(value, _Entity) and value.kind == "object"):
            raise _unsupported(node, "expected an object reference")
        return value.index

    def relation(self, node: Node) -> int:
        if isinstance(node, Slot):
            raise TensorQAError(f"program: unfilled slot {node} in the program")
        if not isinstance(node, Word):
            raise _unsupported(node, "relations are always plain words")
        try:
            return self.vocab.relation_index(node.text)
        except TensorQAError:
            raise TensorQAError(f"program: {node.text!r} is not a relation") from None

    def action(self, node: Node) -> int:
        if isinstance(node, Slot):
            raise TensorQAError(f"program: unfilled slot {node} in the program")
        if isinstance(node, Word):
            try:
                return self.vocab.action_index(node.text)
            except TensorQAError:
                raise TensorQAError(f"program: {node.text!r} is not an action") from None
        if _is_call(node, "ToAction", 2):
            return self.to_action(node)
        raise _unsupported(node, "expected an action phrase or ToAction(verb, object)")

    def to_action(self, node: Call) -> int:
        verb_word, obj_node = node.args
        if not isinstance(verb_word, Word):
            raise _unsupported(node, "ToAction's first argument is a verb")
        try:
            verb = verb_index(verb_word.text)
        except TensorQAError:
            raise TensorQAError(f"program: {verb_word.text!r} is not a verb") from None
        o = self.object(obj_node)
        voc = self.vocab
        classes = voc.actions_named(verb, o)
        if len(classes) == 1:
            return classes[0]
        if not classes:
            raise _Undefined(f"no action has verb {verb_word.text!r} and object {voc.object_english[o]!r}")
        present = [a for a in classes if self.v.instances_of(a)]
        if len(present) != 1:
            raise _Undefined(f"ToAction({verb_word.text}, {voc.object_english[o]}) matches "
                             f"{len(present)} actions of the video")
        return present[0]

    # -- windows (§a.1) -----------------------------------------------------------------------------------
    def window(self, node: Node) -> _Window:
        v = self.v
        if _is_word(node, "video"):
            return _Window("video", list(range(v.num_frames)))
        if isinstance(node, Slot):
            raise TensorQAError(f"program: unfilled slot {node} in the program")
        if not (_is_call(node, "Localize") and isinstance(node.args[0], Word)):
            raise _unsupported(node, "expected video or Localize(...)")
        kind = node.args[0].text
        if kind == "between":
            if len(node.args) == 3:
                x_node, y_node = node.args[1], node.args[2]
            elif isinstance(node.args[1], Items) and len(node.args[1]) == 2:
                x_node, y_node = node.args[1].items
            else:
                raise _unsupported(node, "between takes two actions")
            return self.between(self.action(x_node), self.action(y_node))
        if kind not in ("before", "after", "while") or len(node.args) != 2:
            raise _unsupported(node, "expected Localize(before|after|while, action)")
        x = self.action(node.args[1])
        self.check_localizable(x)
        inst = self.first_instance(x)
        first, last = inst.frames[0], inst.frames[-1]
        if kind == "before":
            if first == 0:
                raise _Undefined("before: the action starts at the video's first keyframe")
            stop = first + 1 if self.sem.localize_before_includes_x else first
            return _Window("before", list(range(0, stop)))
        if kind == "after":
            frames = list(range(last + 1, v.num_frames))
            if not frames:
                raise _Undefined("after: no keyframe after the action")
            return _Window("after", frames)
        return _Window("while", list(range(first, last + 1)))

    def check_localizable(self, x: int) -> None:
        if self.vocab.actions[x] in self.sem.never_localize:
            raise _Undefined(f"{self.vocab.actions[x]} never localizes")

    def first_instance(self, x: int) -> _Instance:
        instances = self.v.instances_of(x)
        if not instances:
            raise _Undefined(f"action {self.vocab.action_phrases[x]!r} does not occur")
        return instances[0]

    def between(self, x: int, y: int) -> _Window:
        if not self.sem.between_enabled:
            raise _Undefined("between is switched off")
        self.check_localizable(x)
        self.check_localizable(y)
        xs, ys = self.v.instances_of(x), self.v.instances_of(y)
        if not xs or not ys:
            raise _Undefined("between: an action does not occur")
        x_inst = xs[-1] if self.sem.between_x_instance == "last" else xs[0]
        x_last, y_first = x_inst.frames[-1], ys[0].frames[0]
        # frame numbers are ascending with positions, so positions compare like frame numbers
        if x_last >= y_first:
            raise _Undefined("between: the first action does not end before the second starts")
        frames = list(range(x_last + 1, y_first))
        if not frames:
            raise _Undefined("between: no keyframe between the actions")
        return _Window("between", frames)

    # -- exists ------------------------------------------------------------------------------------------
    def interacts(self, f: int, o: int, context: str) -> bool:
        rule = self.sem.interaction_rule(context)
        if rule == ANY_PRESENT:
            return bool(self.v.obj[f, o])
        if rule not in self._rule_relations:
            self._rule_relations[rule] = [int(r) for r in np.nonzero(interaction_relations(rule))[0]]
        return any(self.v.rel[f, o, r] for r in self._rule_relations[rule])

    def exists(self, node: Call) -> bool:
        item, coll = node.args
        if not (_is_call(coll, "Iterate", 2)):
            raise _unsupported(node, "expected Exists(x, Iterate(window, Filter(frame, [...])))")
        w = self.window(coll.args[0])
        keys = _frame_filter(coll.args[1])
        if keys == ("objects",):
            o = self.object(item)
            return any(self.interacts(f, o, "objExists") for f in w.frames)
        if keys == ("relations",):
            r = self.relation(item)
            return any(self.v.relation_occurs(f, r) for f in w.frames)
        if keys == ("actions",):
            a = self.action(item)
            return any(a in self.v.classes_at(f) for f in w.frames)
        r = self.relation(keys[1])
        o = self.object(item)
        return any(self.v.rel[f, o, r] for f in w.frames)

    # -- OnlyItem ------------------------------------------------------------------------------------------
    def only_item(self, node: Node) -> _Entity:
        if _is_call(node, "Iterate", 2):
            w = self.window(node.args[0])
            keys = _frame_filter(node.args[1])
            if keys == ("objects",):  # objWhatGeneral
                found = {o for f in w.frames for o in range(self.v.obj.shape[1])
                         if self.interacts(f, o, "objWhatGeneral")}
                return _Entity("object", self.one(found, "object"))
            if keys == ("actions",):
                return _Entity("action", self.act_what(w))
            if keys == ("relations",):
                raise _unsupported(node, "OnlyItem over relations")
            r = self.relation(keys[1])  # objWhat, whole references
            found = {o for f in w.frames for o in self.v.objects_with(f, r)}
            return _Entity("object", self.one(found, "object"))
        if _is_call(node, "IterateUntil", 4):
            direction, w_node, pred, then = node.args
            if not _is_word(direction, "forward", "backward"):
                raise _unsupported(node, "IterateUntil goes forward or backward")
            w = self.window(w_node)
            forward = direction.text == "forward"
            if _is_call(pred, "HasItem", 1) and _frame_filter(pred.args[0]) == ("actions",) \
                    and _frame_filter(then) == ("actions",):
                cls = self.act_first(w) if forward else self.act_last(w)
                return _Entity("action", cls)
            if _is_call(pred, "Exists", 2) and _frame_filter(pred.args[1]) == ("relations",):
                keys = _frame_filter(then)
                if len(keys) != 2:
                    raise _unsupported(node, "expected Filter(frame, [relations, r, objects])")
                r_stretch, r_objects = self.relation(pred.args[0]), self.relation(keys[1])
                found = self.obj_first(w, r_stretch, r_objects) if forward else self.obj_last(w, r_stretch, r_objects)
                return _Entity("object", self.one(found, "object"))
            raise _unsupported(node)
        raise _unsupported(node, "OnlyItem of an unknown collection")

    def one(self, found: set[int], what: str) -> int:
        if len(found) != 1:
            raise _Undefined(f"{len(found)} candidate {what}s, not one")
        return next(iter(found))

    # -- objFirst / objLast (§b.1) -----------------------------------------------------------------------------
    def obj_first(self, w: _Window, r_stretch: int, r_objects: int) -> set[int]:
        frames = w.frames
        occurs = [self.v.relation_occurs(f, r_stretch) for f in frames]
        if True not in occurs:
            raise _Undefined("first: the relation does not occur in the window")
        start = occurs.index(True)
        stop = None
        for j in range(start, len(frames)):
            if not occurs[j]:
                stop = j
                break
        if stop is None:
            raise _Undefined("first: the relation lasts to the end of the window")
        # AGQA's solver takes the stretch through the stopping keyframe (the relation is absent there)
        return {o for f in frames[start:stop + 1] for o in self.v.objects_with(f, r_objects)}

    def obj_last(self, w: _Window, r_stretch: int, r_objects: int) -> set[int]:
        frames = w.frames
        occurs = [self.v.relation_occurs(f, r_stretch) for f in frames]
        if True not in occurs:
            raise _Undefined("last: the relation does not occur in the window")
        last = len(occurs) - 1 - occurs[::-1].index(True)
        gap = None
        for j in range(last, -1, -1):
            if not occurs[j]:
                gap = j
                break
        if gap is None:
            raise _Undefined("last: the relation holds from the start of the window")
        start = max(gap - self.sem.obj_last_extra_keyframes, 0)
        return {o for f in frames[start:last + 1] for o in self.v.objects_with(f, r_objects)}

    # -- Choose (§b.1 objWhatChoose / objFirstChoose / objLastChoose) ----------------------------------------
    def choose(self, node: Call) -> _Entity:
        o1, o2 = self.object(node.args[0]), self.object(node.args[1])
        sub = node.args[2]
        if _is_call(sub, "IterateUntil", 4) and _is_word(sub.args[0], "forward", "backward"):
            direction, w_node, pred, then = sub.args
            keys = _frame_filter(then)
            if not (_is_call(pred, "XOR", 2) and len(keys) == 2):
                raise _unsupported(node)
            forward = direction.text == "forward"
        elif _is_call(sub, "Query", 2) and _is_word(sub.args[0], "class") and _is_call(sub.args[1], "OnlyItem", 1) \
                and _is_call(sub.args[1].args[0], "Iterate", 2):
            w_node, then = sub.args[1].args[0].args
            keys = _frame_filter(then)
            if len(keys) != 2:
                raise _unsupported(node)
            forward = True  # objWhatChoose: AGQA answers it with the first-keyframe rule
        else:
            raise _unsupported(node)
        w = self.window(w_node)
        r = self.relation(keys[1])
        rel = self.v.rel
        frames = w.frames
        hits = [bool(rel[f, o1, r] or rel[f, o2, r]) for f in frames]
        if True not in hits:
            raise _Undefined("choose: the relation holds with neither object in the window")
        at = hits.index(True) if forward else len(hits) - 1 - hits[::-1].index(True)
        item = o1 if rel[frames[at], o1, r] else o2
        holds = [bool(rel[f, item, r]) for f in frames]
        end = None
        steps = range(at, len(frames)) if forward else range(at, -1, -1)
        for j in steps:
            if not holds[j]:
                end = j
                break
        if end is None:
            raise _Undefined("choose: the chosen object's stretch does not end inside the window")
        keep_stop = self.sem.choose_stretch_includes_stop
        if forward:
            group = frames[at:end + 1] if keep_stop else frames[at:end]
        else:
            group = frames[end:at + 1] if keep_stop else frames[end + 1:at + 1]
        seen = {o for f in group for o in self.v.objects_with(f, r)}
        if o1 in seen and o2 in seen:
            raise _Undefined("choose: the stretch has both objects")
        return _Entity("object", item)

    # -- actions: first / last / what (§b.1) ---------------------------------------------------------------------
    def act_first_time(self, f0: int) -> float:
        if f0 == 0:
            return np.float32(0.0)
        return self.v.secs[f0] - np.float32(self.sem.act_first_slack_s)

    def act_first(self, w: _Window) -> int:
        v = self.v
        if not w.frames:
            raise _Undefined("actFirst: the window has no keyframe")
        f0 = w.frames[0]
        limit = v.secs[f0] + np.float32(self.sem.act_window_s)
        seen: set[int] = set()
        for f in w.frames:
            if v.secs[f] > limit:
                break
            seen |= v.classes_at(f)
        if len(seen) > 1:
            raise _Undefined(f"actFirst: {len(seen)} actions within the first seconds of the window")
        t = self.act_first_time(f0)
        candidates = [i for i in v.instances if i.start >= t]
        if not candidates:
            raise _Undefined("actFirst: no action starts in the window")
        earliest = min(i.start for i in candidates)
        firsts = [i for i in candidates if i.start == earliest]
        if len(firsts) != 1:
            raise _Undefined(f"actFirst: {len(firsts)} actions start first")
        if sum(i.end >= t for i in v.instances) < 2:
            raise _Undefined("actFirst: not more than one instance ends at or after t")
        return firsts[0].cls

    def act_last(self, w: _Window) -> int:
        v = self.v
        if not w.frames:
            raise _Undefined("actLast: the window has no keyframe")
        fl = w.frames[-1]
        limit = v.secs[fl] - np.float32(self.sem.act_window_s)
        scanned = w.frames[1:] if self.sem.act_last_scan_skips_window_start else w.frames
        seen: set[int] = set()
        for f in reversed(scanned):
            if v.secs[f] < limit:
                break
            seen |= v.classes_at(f)
        if len(seen) > 1:
            raise _Undefined(f"actLast: {len(seen)} actions within the last seconds of the window")
        # the generator means t = +inf at the video's last keyframe; its answer uses the keyframe's
        # time there (act_last_video_end_is_last_keyframe), its "more than one candidate" rule does not
        t_meant = math.inf if fl == v.num_frames - 1 else v.secs[fl]
        t = v.secs[fl] if self.sem.act_last_video_end_is_last_keyframe else t_meant
        candidates = [i for i in v.instances if i.end < t]
        if not candidates:
            raise _Undefined("actLast: no action ends in the window")
        latest = max(i.end for i in candidates)
        lasts = [i for i in candidates if i.end == latest]
        if len(lasts) != 1:
            raise _Undefined(f"actLast: {len(lasts)} actions end last")
        if sum(i.end < t_meant for i in v.instances) < 2:
            raise _Undefined("actLast: not more than one candidate instance")
        return lasts[0].cls

    def act_what(self, w: _Window) -> int:
        v = self.v
        if not w.frames:
            raise _Undefined("actWhat: the window has no keyframe")
        if w.kind in ("video", "after"):  # actWhatAfterAll
            f0 = w.frames[0]
            if len(v.classes_at(f0)) > 1:
                raise _Undefined("actWhatAfterAll: several actions at the window's first keyframe")
            t = self.act_first_time(f0)
            candidates = [i for i in v.instances if i.end >= t]
        elif w.kind == "before":  # actWhatBefore
            fl = w.frames[-1]
            if len(v.classes_at(fl)) > 1:
                raise _Undefined("actWhatBefore: several actions at the window's last keyframe")
            t = math.inf if fl == v.num_frames - 1 else v.secs[fl]
            candidates = [i for i in v.instances if i.end < t]
        else:
            raise _Undefined(f"no AGQA template asks what they did with a {w.kind} window")
        if len(candidates) != 1:
            raise _Undefined(f"{len(candidates)} candidate action instances, not one")
        return candidates[0].cls

    # -- durations (§b.1 length templates) -------------------------------------------------------------------------
    def superlative(self, node: Call) -> _Entity:
        mode, coll, func = node.args
        if not (_is_word(mode, "max", "min") and _is_length(func)):
            raise _unsupported(node, "expected Superlative(max|min, ..., Subtract(Query(end, action), Query(start, action)))")
        longest = mode.text == "max"
        margin = np.float32(self.sem.duration_margin_s)
        if _is_call(coll, "Filter", 2) and _is_word(coll.args[0], "video") and isinstance(coll.args[1], Items) \
                and len(coll.args[1]) == 1 and _is_word(coll.args[1][0], "actions"):
            # actLongest / actShortest: rank every instance
            insts = sorted(self.v.instances, key=lambda i: i.end - i.start)
            if len(insts) < 2:
                raise _Undefined("longest/shortest: fewer than two action instances")
            if longest:
                top, second = insts[-1], insts[-2]
                gap = (top.end - top.start) - (second.end - second.start)
            else:
                top, second = insts[0], insts[1]
                gap = (second.end - second.start) - (top.end - top.start)
            if not gap > margin:
                raise _Undefined("longest/shortest: the top two lengths are within the margin")
            return _Entity("action", top.cls)
        if isinstance(coll, Items) and len(coll) == 2:
            pair = []
            for item in coll.items:
                if not (_is_call(item, "Filter", 2) and _is_word(item.args[0], "video")
                        and isinstance(item.args[1], Items) and len(item.args[1]) == 2
                        and _is_word(item.args[1][0], "actions")):
                    raise _unsupported(node, "expected [Filter(video, [actions, A]), Filter(video, [actions, B])]")
                a = self.action(item.args[1][1])
                insts = self.v.instances_of(a)
                if len(insts) != 1:
                    raise _Undefined(f"length compare: {self.vocab.action_phrases[a]!r} has {len(insts)} instances, not one")
                pair.append((a, insts[0].end - insts[0].start))
            (a, la), (b, lb) = pair
            if not abs(la - lb) > margin:
                raise _Undefined("length compare: the lengths are within the margin")
            winner = (a if la > lb else b) if longest else (a if la < lb else b)
            return _Entity("action", winner)
        raise _unsupported(node)

    # -- compare windows (§a.2: actTime, relTime, objTime) ---------------------------------------------------------------
    def compare(self, node: Call) -> str:
        choices, sub = node.args
        if not (isinstance(choices, Items) and [str(c) for c in choices.items] == ["before", "after"]):
            raise _unsupported(node, "expected Compare([before, after], ...)")
        if not (_is_call(sub, "Exists", 2) and _is_call(sub.args[1], "Iterate", 2)):
            raise _unsupported(node)
        item, (loc, filt) = sub.args[0], sub.args[1].args
        if not (_is_call(loc, "Localize", 2) and _is_word(loc.args[0], "temporal tag")):
            raise _unsupported(node, "expected Localize(temporal tag, action)")
        keys = _frame_filter(filt)
        if len(keys) != 1:
            raise _unsupported(node)
        v = self.v
        anchor = self.action(loc.args[1])
        anchors = v.instances_of(anchor)
        if len(anchors) != 1:
            raise _Undefined(f"compare: {self.vocab.action_phrases[anchor]!r} has {len(anchors)} instances, not one")
        during = anchors[0].frames
        first, last = during[0], during[-1]
        before = list(range(0, first + 1 if self.sem.compare_before_includes_x else first))
        after = list(range(last + 1, v.num_frames))

        if keys == ("actions",):  # actTime
            x = self.action(item)
            xs = v.instances_of(x)
            if len(xs) != 1:
                raise _Undefined(f"actTime: {self.vocab.action_phrases[x]!r} has {len(xs)} instances, not one")
            inner = xs[0].frames
            if all(f in during for f in inner):
                raise _Undefined("actTime: the action lies within the other")
            if all(f in before for f in inner):
                if self.persists(x, after):
                    raise _Undefined("actTime: the action's relation persists after the other")
                return "before"
            if all(f in after for f in inner):
                if self.persists(x, before):
                    raise _Undefined("actTime: the action's relation persists before the other")
                return "after"
            raise _Undefined("actTime: the actions overlap")

        if keys == ("relations",):  # relTime
            r = self.relation(item)
            occurs = lambda f: v.relation_occurs(f, r)  # noqa: E731
        else:  # objTime
            o = self.object(item)
            occurs = lambda f: self.interacts(f, o, "objTime")  # noqa: E731
        if any(occurs(f) for f in during):
            raise _Undefined("compare: it occurs during the action")
        b = any(occurs(f) for f in before)
        a = any(occurs(f) for f in after)
        if b == a:
            raise _Undefined("compare: it occurs on both sides" if b else "compare: it does not occur")
        return "before" if b else "after"

    def persists(self, x: int, frames: list[int]) -> bool:
        """actTime's persistence check: x's (object, verb relation) occurs in one of ``frames``."""
        if not self.sem.act_time_persistence_check:
            return False
        voc = self.vocab
        o = voc.action_object[x]
        r = voc.verb_relation[voc.action_verb[x]]
        if o == NO_OBJECT or r < 0:
            return False
        return any(self.v.rel[f, o, r] for f in frames)
