"""``sg_grounding`` of question records: character spans of the question -> AGQA graph vertex ids.

AGQA's released records carry ``sg_grounding = {"start-end": [vertex ids]}`` (agqa.md §2.5,
agqa_semantics.md §e). This module computes it for tensorqa's records after they are rendered:

    grounding_column(records, scenes, semantics="agqa") -> string array      # JSON object text per row
    with_grounding(records, scenes, semantics="agqa") -> pa.Table            # sg_grounding filled in
    ground_record(record, scene, semantics="agqa") -> dict[str, list[str]]   # one record (scalar)
    check_grounding(grounding, question, vertex_ids) -> list[str]            # §e's validation rules

``records`` is a RECORD_SCHEMA table (the columns of :data:`COLUMNS` suffice; the
``window_action*_ref`` ones may be absent); ``scenes`` is a
``SceneBatch``, a ``{video_id: VideoScene}`` mapping or a ``SceneStore``: the scenes the records
were generated from, with the semantics they were generated with. Vertex ids are those of
:func:`tensorqa.export_agqa.video_graph` on that scene: keyframe ``'000105'``, object
``'o4/000105'``, relation ``'r15/000105'`` / ``'v029/000105'``, action instance ``'c076/1'``.
The text is what ``json.dumps`` writes for the dict (``", "`` and ``": "`` separators).

Spans (§e)
----------
The question is read through its frame (``TEMPLATES[template].frames[frame]``): literal fragments
and slot phrases follow each other in textual order, each phrase being one that the vocabulary
and the catalogue produce for the record's slot columns. Keys are ``"start-end"`` offsets into
the question (Python string indices, ``end`` exclusive). Per argument, in textual order:

* object / object2 / relation slot: the span of its phrase (``a blanket``, ``holding``, or a whole
  reference phrase such as ``the object they were holding first``);
* action / action2 slot: for an indirect-object action (``ToAction(verb, <reference>)``), first
  the span of each occurrence of its object reference phrase; then the whole action phrase;
* window slot: first X's keys as for an action slot (then Y's, for between), then the
  localization phrase without its leading space (``while holding a pillow``). The whole video has
  an empty phrase and gives a zero-width key (below).

The relation an indirect-object action's reference goes through is not a record column; it is
read from the program: the k-th ``ToAction(`` belongs to the k-th indirect action slot in the
program's slot order, and its relation is the first ``[relations, R, objects]`` after it.

Keys inside an argument precede the argument's own key, the order of the real records
(YSKX3-8: ``"27-36"`` object, ``"43-59"`` action, ``"37-59"`` localization; LSKA2-2205: relation,
inner object reference, indirect-object action).

Values (§e)
-----------
Ids are listed in keyframe order (AGQA lists them in no particular order). The question's
*evidence keyframes* E are the keyframes that make its answer, always a contiguous run:

* exists / what templates (objExists, objRelExists, relExists, and / xor, objWhat,
  objWhatChoose): the window;
* objFirst / objLast and their Verify forms: the answer's stretch inside the window (objFirst:
  the relation's first keyframe through the keyframe where it stops; objLast: from
  ``obj_last_extra_keyframes`` before the gap through its last keyframe), as the scalar executor
  (``tensorqa.reference``) defines it; objFirstChoose / objLastChoose: the chosen object's
  stretch, its stopping keyframe included when ``choose_stretch_includes_stop``;
* relTime / objTime: the compare side that the answer names (§a.2: strictly before X's first
  keyframe, or strictly after its last).

Then:

* an object lists its vertices ``oN/f`` at the keyframes of E where it takes part: it stands in
  the question's relation (objRelExists, and / xor, the verify and choose templates) or it is
  interacted with under the template's §c.1 rule (objExists, objTime). Empty when it never does:
  the answer is then "no" (for a choose template: it is not the answer);
* a relation lists ``rN/f`` / ``vNNN/f`` at the keyframes of E where it holds with one of the
  question's objects (objRelExists, and / xor, the choose templates) or with any object
  (relExists, objWhat, relTime, and the objFirst / objLast family, whose stretch is the
  relation's whatever the object);
* an action argument (actTime, relTime, objTime, the length templates) is its instance-1 id
  ``cNNN/1``; an object reference inside an indirect-object action: see the decisions below;
* a localization lists the window's keyframes on its span (before / after / between: the window;
  while: the action's keyframes, the same run), and ``cNNN/1`` on the span of each of its actions;
* the whole video (a window slot filled by nothing) lists every keyframe on a zero-width key.

Decisions where §e is silent
----------------------------
* **Zero-width key position.** The real record YSKX3-9 ("Was a blanket one of the things they
  were interacting with?", 59 characters, ``?`` at 58) has ``"57-57"``: one character before the
  point where a localization phrase would be inserted (58). The key is placed there
  (:data:`ZERO_WIDTH_SHIFT`), reproducing that record.
* **"In the video,"**: §e maps an opening "In the video," to its 12 characters. In tensorqa's
  frames that opening occurs only as wording of the time templates (actTime, relTime, objTime);
  such a question gets ``"0-12"`` listing every keyframe (it names the whole video), before the
  other keys. Frames never start with a placeholder (``check_frame``), so §e's capitalized
  sentence-start localization never arises.
* **Object references in object slots** (``the object they were holding first`` as objRelExists'
  object) are grounded like a direct object: their referent's vertices at E, in the question's
  relation. The relation inside the reference phrase gets no key of its own (LSKA2-2205's inner
  reference has none either).
* **Object references inside indirect-object actions** (action slots and localizing actions
  alike) have no part in the question's relation,
  so they list the keyframes that define them: the referent's vertices where the reference's
  relation holds with it, over that relation's whole-video first stretch ("first"), last stretch
  ("last", with ``obj_last_extra_keyframes``) or the whole video ("whole"). For LSKA2-2205 this is
  the one id the record has. An action phrase naming its object twice ("watching {object} or
  something on {object}") gives a key per occurrence, with the same ids.
* **Action instance ids** are always ``cNNN/1`` (§f 2, "grounding always instance 1"), also for
  between's X, whose window starts after X's last instance. The id exists in the exported graph
  whenever the class has an instance, even one without keyframes (the export numbers them all).
* **actTime's first action** and the **length templates' actions** get ``[cNNN/1]`` like every
  action argument (LSKA2-2205 grounds its action that way), not keyframes.
* **Templates with nothing to point at**: objWhatGeneral, actWhatAfterAll, actWhatBefore, actFirst
  and actLast have only their localization's keys (their answer is not in the question);
  actLongest / actShortest have no argument and no window: ``{}``.
* **Registry ablations** (``primitives.registry.ablate``) are ignored: windows follow the
  semantics' own rules, as the records' programs state them.

Two implementations
-------------------
:func:`ground_record` is the scalar reference, written to be read: one record, plain loops over
its frame's parts; a reference phrase's wording variant is found by matching the question text.
:func:`grounding_column` is the bulk path, with no Python loop over rows: rows are taken video
block by video block (scene tables: keyframe names, instance keyframe ranges, interaction masks,
built once per block) and laid out per (template, frame, window shape, indirect-action shape)
group, where every row has the same keys in the same order; windows, evidence runs, offsets and
id lists are numpy columns, and each distinct (video, id source, o, o2, r, run) list is built
once. The JSON texts and the re-rendered questions are each one gather over a string pool
(``text.gather_text``). The bulk path assumes the wording variants ``records.render`` picks
(frame variant ``v``: object and action ``v % 3``, object2 and action2 ``(v + 1) % 3``, X
``(v + 2) % 3``, Y ``v % 3``), re-renders each question with them and compares: a row whose text
differs (a record from elsewhere) goes to the scalar path, which matches any variant, or raises
:class:`TensorQAError` when the question does not follow its frame.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from ..errors import TensorQAError
from ..primitives.localize import KIND_NAMES, class_instances
from ..program import Call, Items, Node, Word, match, parse_program
from ..program_shapes import PROGRAM_SHAPES
from ..scene import SceneBatch, VideoScene
from ..semantics import ANY_PRESENT, Semantics, get_semantics, interaction_relations
from ..templates import (
    ACTION_REFERENCE_FRAMES,
    OBJECT_REFERENCE_FRAMES,
    TEMPLATES,
    WINDOW_FRAMES,
)
from ..vocab import vocab
from .records import OBJECT_ARTICLE
from .text import CHUNK_ROWS, gather_text

# the record columns the grounding reads; the optional ones default to "" (direct / unnamed)
COLUMNS = ("question_id", "video_id", "template", "frame", "question", "answer", "program", "window",
           "window_action", "window_action2", "window_action_ref", "window_action2_ref", "relation", "object",
           "object_ref", "object_ref_relation", "object2", "object2_ref", "object2_ref_relation", "action",
           "action_ref", "action2", "action2_ref")
OPTIONAL_COLUMNS = ("question_id", "window_action_ref", "window_action2_ref")

# slots that hold an action, possibly an indirect-object one, and the wording variant records.render
# gives its object reference: (frame variant + shift) % 3
ACTION_SLOTS = ("action", "action2", "window_action", "window_action2")
VARIANT_SHIFT = {"object": 0, "object2": 1, "action": 0, "action2": 1, "window_action": 2, "window_action2": 3}

VIDEO_OPENING = "In the video,"
VIDEO_OPENING_SPAN = 12  # §e: the opening maps to "In the video" (its 12 characters)
ZERO_WIDTH_SHIFT = -1  # whole-video key: one character before the insertion point (YSKX3-9)
REF_KINDS = ("", "first", "last", "whole")

# how each program (TemplateSpec.program) picks its evidence keyframes and what it grounds
NOTHING, ACTIONS, EXISTS_OBJ, ACT_EXISTS, REL_ANY, OBJ_REL, STRETCH, CHOOSE, SIDE_REL, SIDE_OBJ = range(10)
_CATEGORY = {
    "objExists": EXISTS_OBJ, "actExists": ACT_EXISTS, "relExists": REL_ANY, "objWhat": REL_ANY,
    "objRelExists": OBJ_REL, "andObjRelExists": OBJ_REL, "xorObjRelExists": OBJ_REL, "objWhatChoose": OBJ_REL,
    "objFirst": STRETCH, "objLast": STRETCH, "objFirstVerify": STRETCH, "objLastVerify": STRETCH,
    "objFirstChoose": CHOOSE, "objLastChoose": CHOOSE, "relTime": SIDE_REL, "objTime": SIDE_OBJ,
    "actTime": ACTIONS, "actLengthLongerChoose": ACTIONS, "actLengthShorterChoose": ACTIONS,
    "actLengthLongerVerify": ACTIONS, "actLengthShorterVerify": ACTIONS,
    "objWhatGeneral": NOTHING, "actWhatAfterAll": NOTHING, "actWhatBefore": NOTHING, "actFirst": NOTHING,
    "actLast": NOTHING, "actLongest": NOTHING, "actShortest": NOTHING,
}
assert set(_CATEGORY) == set(PROGRAM_SHAPES)
_FORWARD = frozenset({"objFirst", "objFirstVerify", "objFirstChoose"})  # the rest of STRETCH / CHOOSE scan backward

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


# ====================================================================================================
# Text tables shared by both implementations
# ====================================================================================================
def _parts(text: str) -> tuple[tuple[bool, str], ...]:
    """A format string as ((is_slot, literal text or slot name), ...), empty literals dropped."""
    out, last = [], 0
    for m in _PLACEHOLDER.finditer(text):
        if m.start() > last:
            out.append((False, text[last:m.start()]))
        out.append((True, m.group(1)))
        last = m.end()
    if last < len(text):
        out.append((False, text[last:]))
    return tuple(out)


@functools.cache
def _frame_parts(template: str, frame: int) -> tuple[tuple[bool, str], ...]:
    spec = TEMPLATES.get(template)
    if spec is None:
        raise TensorQAError(f"sg_grounding: unknown template {template!r}")
    if not 0 <= frame < len(spec.frames):
        raise TensorQAError(f"sg_grounding: template {template} has no frame {frame}")
    return _parts(spec.frames[frame])


@functools.cache
def _window_parts(kind: str) -> tuple[tuple[bool, str], ...]:
    """" before {action}" -> ((False, " before "), (True, "action")); X is {action}, Y {action2}."""
    return _parts(WINDOW_FRAMES[kind])


@functools.cache
def _ids() -> dict[str, dict[str, int]]:
    v = vocab()
    return {"object": {x: i for i, x in enumerate(v.object_ids)},
            "relation": {x: i for i, x in enumerate(v.relation_ids)},
            "action": {x: i for i, x in enumerate(v.actions)}}


@functools.cache
def _object_phrases() -> tuple[str, ...]:
    return tuple(OBJECT_ARTICLE.get(e, f"a {e}") for e in vocab().object_english)


@functools.cache
def _object_reference_phrases(kind: str, relation: int) -> tuple[str, ...]:
    """The wording variants of an object reference through ``relation``."""
    if kind not in OBJECT_REFERENCE_FRAMES:
        raise TensorQAError(f"sg_grounding: unknown object reference kind {kind!r}")
    english = vocab().relation_english[relation]
    return tuple(f.format(relation=english) for f in OBJECT_REFERENCE_FRAMES[kind])


@functools.cache
def _action_reference_layout(action: int) -> tuple[int, ...]:
    """Characters of an indirect-object action's frame before each of its ``{object}``s (literals only)."""
    frame = ACTION_REFERENCE_FRAMES.get(vocab().actions[action])
    if frame is None:
        raise TensorQAError(f"sg_grounding: action {vocab().actions[action]} has no indirect-object wording")
    before, n = [], 0
    for is_slot, part in _parts(frame):
        if is_slot:
            before.append(n)
        else:
            n += len(part)
    return tuple(before)


def _action_reference_text(action: int, phrase: str) -> str:
    return ACTION_REFERENCE_FRAMES[vocab().actions[action]].format(object=phrase)


@functools.lru_cache(maxsize=256)
def _lit(text: str) -> pa.Scalar:
    """A cached string scalar: kernels given plain Python strings convert them slowly each call."""
    return pa.scalar(text, pa.string())


# -- the relation of each indirect-object action's reference, read from the program -------------------
@functools.cache
def _skeleton(program: str) -> Node:
    return parse_program(PROGRAM_SHAPES[program])


@functools.lru_cache(maxsize=1 << 14)
def _action_reference_relations(program: str, text: str) -> dict[str, int]:
    """{action slot (``ACTION_SLOTS``): the relation its object reference goes through}, for the
    slots that hold ``ToAction(verb, <reference>)`` in program ``text`` of shape ``program``."""
    bound: dict[str, Node] = {}
    if not match(_skeleton(program), parse_program(text), bound, exact_words=False):
        raise TensorQAError(f"sg_grounding: program {text!r} does not have the shape of {program}")
    nodes = {"action": bound.get("action"), "action2": bound.get("action2")}
    window = bound.get("window")
    if isinstance(window, Call) and window.func == "Localize":
        actions = window.args[1].items if isinstance(window.args[1], Items) else window.args[1:]
        nodes.update(zip(("window_action", "window_action2"), actions))
    out = {}
    for slot, node in nodes.items():
        if isinstance(node, Call) and node.func == "ToAction":
            for n in node.args[1].walk():  # Query(class, OnlyItem(... Filter(frame, [relations, R, objects])))
                if isinstance(n, Call) and n.func == "Filter" and isinstance(n.args[1], Items) \
                        and len(n.args[1]) == 3 and isinstance(n.args[1][1], Word):
                    out[slot] = vocab().relation_index(n.args[1][1].text)
            if slot not in out:
                raise TensorQAError(f"sg_grounding: no object reference relation in {text!r}")
    return out


# ====================================================================================================
# Scalar reference: one record at a time
# ====================================================================================================
class _Video:
    """One video's scene for the scalar path. Keyframe positions index the scene's keyframes in
    frame order (``VideoScene.sorted``); runs of keyframes are half-open ``(lo, hi)``."""

    def __init__(self, scene: VideoScene, sem: Semantics):
        s = scene.sorted()
        self.video_id, self.sem, self.F = s.video_id, sem, s.num_frames
        self.names = [f"{f:06d}" for f in s.frame_ids.tolist()]
        self.rel = s.rel  # bool[F, O, R]
        self.obj = s.obj  # bool[F, O]
        # instances with keyframes (start <= secs <= end in float32, as SceneBatch.inst_frames), in
        # (start, end, class) order: class -> [(first keyframe, last keyframe), ...]
        self.ranges: dict[int, list[tuple[int, int]]] = {}
        for n, a in enumerate(s.inst_cls.tolist()):
            kf = [f for f in range(self.F) if s.inst_start[n] <= s.frame_secs[f] <= s.inst_end[n]]
            if kf:
                self.ranges.setdefault(a, []).append((kf[0], kf[-1]))
        self.classes = set(s.inst_cls.tolist())  # every class with an instance has a cNNN/1 vertex

    # -- id lists --------------------------------------------------------------------------------------
    def frames(self, lo: int, hi: int) -> list[str]:
        return self.names[lo:hi]

    def where(self, prefix: str, test: Callable[[int], bool], lo: int, hi: int) -> list[str]:
        return [f"{prefix}/{self.names[f]}" for f in range(lo, hi) if test(f)]

    def instance(self, a: int) -> list[str]:
        return [f"{vocab().actions[a]}/1"] if a in self.classes else []

    def occurs(self, f: int, r: int) -> bool:
        return bool(self.rel[f, :, r].any())

    def interacts(self, f: int, o: int, context: str) -> bool:
        rule = self.sem.interaction_rule(context)
        if rule == ANY_PRESENT:
            return bool(self.obj[f, o])
        return bool(self.rel[f, o, interaction_relations(rule)].any())

    # -- runs of keyframes ---------------------------------------------------------------------------------
    def instance_range(self, a: int, last_instance: bool = False) -> tuple[int, int]:
        ranges = self.ranges.get(a)
        if not ranges:
            raise TensorQAError(f"sg_grounding: video {self.video_id}: action {vocab().actions[a]} has no keyframe")
        return ranges[-1] if last_instance else ranges[0]

    def window(self, kind: str, x: int, y: int) -> tuple[int, int]:
        """Localization window (agqa_semantics.md §a.1)."""
        if kind == "video":
            return 0, self.F
        first, last = self.instance_range(x)
        if kind == "before":
            return 0, first + 1 if self.sem.localize_before_includes_x else first
        if kind == "after":
            return last + 1, self.F
        if kind == "while":
            return first, last + 1
        if kind == "between":
            x_last = self.instance_range(x, self.sem.between_x_instance == "last")[1]
            return x_last + 1, self.instance_range(y)[0]
        raise TensorQAError(f"sg_grounding: unknown window kind {kind!r}")

    def side(self, a: int, answer: str) -> tuple[int, int]:
        """The compare side (§a.2) that a relTime / objTime answer names."""
        first, last = self.instance_range(a)
        if answer == "before":
            return 0, first + 1 if self.sem.compare_before_includes_x else first
        if answer == "after":
            return last + 1, self.F
        raise TensorQAError(f"sg_grounding: video {self.video_id}: compare answer {answer!r} is not before / after")

    def stretch(self, r: int, lo: int, hi: int, forward: bool) -> tuple[int, int]:
        """objFirst (forward) / objLast (backward) stretch of relation r inside [lo, hi)."""
        hits = [f for f in range(lo, hi) if self.occurs(f, r)]
        if hits and forward:
            stops = [f for f in range(hits[0], hi) if not self.occurs(f, r)]
            if stops:
                return hits[0], stops[0] + 1
        if hits and not forward:
            gaps = [f for f in range(lo, hits[-1] + 1) if not self.occurs(f, r)]
            if gaps:
                return max(gaps[-1] - self.sem.obj_last_extra_keyframes, lo), hits[-1] + 1
        raise TensorQAError(f"sg_grounding: video {self.video_id}: relation {vocab().relation_ids[r]} has no "
                            f"{'first' if forward else 'last'} stretch in keyframes {lo}..{hi - 1}")

    def choose_stretch(self, r: int, o1: int, o2: int, lo: int, hi: int, forward: bool) -> tuple[int, int]:
        """The chosen object's stretch of objFirstChoose / objLastChoose (``reference.py``)."""
        rel = self.rel
        hits = [f for f in range(lo, hi) if rel[f, o1, r] or rel[f, o2, r]]
        if hits:
            at = hits[0] if forward else hits[-1]
            item = o1 if rel[at, o1, r] else o2
            keep = self.sem.choose_stretch_includes_stop
            if forward:
                ends = [f for f in range(at, hi) if not rel[f, item, r]]
                if ends:
                    return at, ends[0] + (1 if keep else 0)
            else:
                ends = [f for f in range(lo, at + 1) if not rel[f, item, r]]
                if ends:
                    return ends[-1] + (0 if keep else 1), at + 1
        raise TensorQAError(f"sg_grounding: video {self.video_id}: no choose stretch for relation "
                            f"{vocab().relation_ids[r]} in keyframes {lo}..{hi - 1}")

    # -- the ids of a question's arguments -----------------------------------------------------------------
    def arguments(self, program: str, answer: str, o1: int, o2: int, r: int, a1: int, a2: int,
                  window: tuple[int, int]) -> dict[str, list[str]]:
        """{slot: ids} for the object / object2 / relation / action / action2 slots."""
        v, rel = vocab(), self.rel
        cat = _CATEGORY[program]
        if cat == NOTHING:
            return {}
        if cat == ACTIONS:
            return {"action": self.instance(a1), "action2": self.instance(a2)}
        if cat == ACT_EXISTS:
            return {"action": self.instance(a1)}
        if cat in (SIDE_REL, SIDE_OBJ):
            lo, hi = self.side(a1, answer)
            if cat == SIDE_REL:
                return {"relation": self.where(v.relation_ids[r], lambda f: self.occurs(f, r), lo, hi),
                        "action": self.instance(a1)}
            return {"object": self.where(v.object_ids[o1], lambda f: self.interacts(f, o1, "objTime"), lo, hi),
                    "action": self.instance(a1)}
        lo, hi = window
        if cat == STRETCH:
            lo, hi = self.stretch(r, lo, hi, program in _FORWARD)
        elif cat == CHOOSE:
            lo, hi = self.choose_stretch(r, o1, o2, lo, hi, program in _FORWARD)
        if cat == EXISTS_OBJ:
            return {"object": self.where(v.object_ids[o1], lambda f: self.interacts(f, o1, "objExists"), lo, hi)}
        out = {}
        if o1 >= 0:
            out["object"] = self.where(v.object_ids[o1], lambda f: rel[f, o1, r], lo, hi)
        if o2 >= 0:
            out["object2"] = self.where(v.object_ids[o2], lambda f: rel[f, o2, r], lo, hi)
        if cat in (REL_ANY, STRETCH):
            out["relation"] = self.where(v.relation_ids[r], lambda f: self.occurs(f, r), lo, hi)
        else:
            out["relation"] = self.where(v.relation_ids[r], lambda f: rel[f, o1, r] or (o2 >= 0 and rel[f, o2, r]), lo, hi)
        return out

    def reference(self, kind: str, r: int, referent: int) -> list[str]:
        """An object reference inside an indirect-object action: the referent where the reference's
        relation holds with it, over the keyframes that define the reference."""
        lo, hi = (0, self.F) if kind == "whole" else self.stretch(r, 0, self.F, kind == "first")
        return self.where(vocab().object_ids[referent], lambda f: self.rel[f, referent, r], lo, hi)


def _index(table: str, value: str | None) -> int:
    if not value:
        return -1
    try:
        return _ids()[table][value]
    except KeyError:
        raise TensorQAError(f"sg_grounding: unknown {table} id {value!r}") from None


def _ground_one(video: _Video, row: Mapping[str, Any]) -> dict[str, list[str]]:
    """The sg_grounding of one record on its video (scalar reference)."""
    v = vocab()
    template, question = row["template"], row["question"]
    spec = TEMPLATES.get(template)
    if spec is None:
        raise TensorQAError(f"sg_grounding: record {row.get('question_id')}: unknown template {template!r}")
    parts = _frame_parts(template, int(row["frame"]))
    o1, o2 = _index("object", row["object"]), _index("object", row["object2"])
    r = _index("relation", row["relation"])
    act = {slot: _index("action", row[slot]) for slot in ACTION_SLOTS}
    kind = row["window"] if spec.has_window else "video"
    window = video.window(kind, act["window_action"], act["window_action2"])
    args = video.arguments(spec.program, row["answer"], o1, o2, r, act["action"], act["action2"], window)
    indirect = any(row.get(slot + "_ref") for slot in ACTION_SLOTS)
    refs = _action_reference_relations(spec.program, row["program"]) if indirect else {}

    keys: list[tuple[int, int, list[str]]] = []
    pos = 0

    def fail(what: str) -> TensorQAError:
        return TensorQAError(f"sg_grounding: record {row.get('question_id')}: question {question!r} does not "
                             f"follow frame {spec.frames[int(row['frame'])]!r} of {template} ({what} at {pos})")

    def match(candidates: Iterable[str]) -> str:
        for text in candidates:
            if question.startswith(text, pos):
                return text
        raise fail("no phrase of the record's slots")

    def action(slot: str) -> str:
        """Match an action slot's phrase at ``pos``; key the inner object reference phrase(s)."""
        a, ref = act[slot], row.get(slot + "_ref") or ""
        if not ref:
            return match((v.action_phrases[a],))
        for phrase in _object_reference_phrases(ref, refs[slot]):  # any wording variant
            text = _action_reference_text(a, phrase)
            if question.startswith(text, pos):
                inner = video.reference(ref, refs[slot], v.action_object[a])
                for k, before in enumerate(_action_reference_layout(a)):
                    start = pos + before + k * len(phrase)
                    keys.append((start, start + len(phrase), inner))
                return text
        raise fail(f"no wording of the indirect-object action {v.actions[a]}")

    if question.startswith(VIDEO_OPENING):
        keys.append((0, VIDEO_OPENING_SPAN, video.frames(0, video.F)))
    for is_slot, part in parts:
        if not is_slot:
            if not question.startswith(part, pos):
                raise fail(f"{part!r} expected")
            pos += len(part)
        elif part in ("object", "object2"):
            o, ref = (o1, row["object_ref"]) if part == "object" else (o2, row["object2_ref"])
            if ref:
                text = match(_object_reference_phrases(ref, _index("relation", row[part + "_ref_relation"])))
            else:
                text = match((_object_phrases()[o],))
            keys.append((pos, pos + len(text), args.get(part, [])))
            pos += len(text)
        elif part == "relation":
            text = match((v.relation_english[r],))
            keys.append((pos, pos + len(text), args.get("relation", [])))
            pos += len(text)
        elif part in ("action", "action2"):
            text = action(part)
            keys.append((pos, pos + len(text), args.get(part, [])))
            pos += len(text)
        elif part == "window":
            if kind == "video":
                z = max(pos + ZERO_WIDTH_SHIFT, 0)
                keys.append((z, z, video.frames(0, video.F)))
                continue
            start = pos
            for is_s, piece in _window_parts(kind):
                if not is_s:
                    if not question.startswith(piece, pos):
                        raise fail(f"{piece!r} expected")
                    pos += len(piece)
                else:
                    slot = "window_action" if piece == "action" else "window_action2"
                    text = action(slot)
                    keys.append((pos, pos + len(text), video.instance(act[slot])))
                    pos += len(text)
            keys.append((start + 1, pos, video.frames(*window)))
        else:
            raise fail(f"unknown placeholder {{{part}}}")
    if pos != len(question):
        raise fail("text left over")
    return {f"{a}-{b}": ids for a, b, ids in keys}


# ====================================================================================================
# Bulk path: columns
# ====================================================================================================
# sources of id lists; a request is one int64 row (source, video, o, o2, r, lo, hi)
SRC_NONE, SRC_OBJ_REL, SRC_PAIR_REL, SRC_REL_ANY, SRC_INTERACT_EXISTS, SRC_INTERACT_TIME, SRC_FRAMES = range(7)
_MAX_FRAMES = 64  # frame variants per template (records.render's group key uses the same bound)


@functools.cache
def _tables() -> dict[str, Any]:
    """Constant tables of the bulk path.

    ``lexicon``: every string a question is re-rendered from (slot phrases, frame literals), one
    pyarrow array addressed by ``base[section] + index`` or ``literal[text]``, with ``length``
    int64 per entry. ``json_static``: the fixed atoms of the JSON texts (``JSON_END``,
    ``JSON_EMPTY``, then ``'"cNNN/1"'`` per action from ``JSON_INSTANCE``, "" for none)."""
    v = vocab()
    R, A = v.num_relations, v.num_actions
    counts = {len(f) for f in OBJECT_REFERENCE_FRAMES.values()}
    assert len(counts) == 1, "every reference kind has the same number of wordings"
    V = counts.pop()
    strings, base = [""], {}

    def section(name: str, xs) -> None:
        base[name] = len(strings)
        strings.extend(xs)

    # object reference phrases [((kind - 1) * V + variant) * R + relation]
    ref_phrases = [_object_reference_phrases(k, r)[var] for k in REF_KINDS[1:] for var in range(V) for r in range(R)]
    has_frame = [a_id in ACTION_REFERENCE_FRAMES for a_id in v.actions]
    section("object_phrase", _object_phrases())
    section("relation_word", v.relation_english)
    section("action_phrase", v.action_phrases)
    section("ref_phrase", ref_phrases)
    # indirect-object action texts [action * len(ref_phrases) + reference phrase index]
    section("action_ref", (_action_reference_text(a, p) if has_frame[a] else "" for a in range(A) for p in ref_phrases))
    pre = [WINDOW_FRAMES[k].split("{action}")[0] for k in KIND_NAMES]  # " before ", ... by time kind
    section("window_pre", pre)
    between_mid = WINDOW_FRAMES["between"].split("{action}")[1].split("{action2}")[0]  # " and "
    literal = {}
    names = list(TEMPLATES)
    opening = np.zeros((len(names), _MAX_FRAMES), bool)
    for i, t in enumerate(names):
        assert len(TEMPLATES[t].frames) <= _MAX_FRAMES
        for f, text in enumerate(TEMPLATES[t].frames):
            opening[i, f] = text.startswith(VIDEO_OPENING)
            for is_slot, part in _frame_parts(t, f):
                if not is_slot and part not in literal:
                    literal[part] = len(strings)
                    strings.append(part)
    literal.setdefault(between_mid, len(strings))
    strings.append(between_mid)
    before = np.zeros((A + 1, 2), np.int64)  # literal characters before the action's 1st / 2nd {object}
    n_inner = np.zeros(A + 1, np.int64)
    for a in range(A):
        if has_frame[a]:
            layout = _action_reference_layout(a)
            n_inner[a], before[a, :len(layout)] = len(layout), layout
    assert n_inner.max() <= 2
    return {
        "V": V, "R": R, "A": A, "n_ref": len(ref_phrases),
        "lexicon": pa.array(strings, pa.string()), "length": np.array([len(x) for x in strings], np.int64),
        "base": base, "literal": literal, "between_mid": between_mid,
        "action_ref_before": before, "action_ref_inner": n_inner,
        "prefix": pa.array([f"{x}/" for x in v.object_ids] + [f"{x}/" for x in v.relation_ids] + [""], pa.string()),
        "json_static": pa.array(["", "]}", "{}"] + [f'"{a}/1"' for a in v.actions] + [""], pa.string()),
        "templates": names, "opening": opening,
        "category": np.array([_CATEGORY[TEMPLATES[t].program] for t in names], np.int64),
        "forward": np.array([TEMPLATES[t].program in _FORWARD for t in names]),
        "has_window": np.array([TEMPLATES[t].has_window for t in names]),
        "action_object": np.asarray(v.action_object, np.int64),
    }


JSON_END, JSON_EMPTY, JSON_INSTANCE = 1, 2, 3  # atoms of _tables()["json_static"]


def _codes(records: pa.Table, column: str, values: list[str], what: str) -> np.ndarray:
    """int64[M]: index of each value of a column in ``values``; -1 for "" / null / an absent
    optional column; an unknown value raises."""
    if column not in records.column_names:
        return np.full(records.num_rows, -1, np.int64)
    col = records.column(column)
    out = pc.index_in(col, value_set=pa.array(values, pa.string())).fill_null(-1).to_numpy(zero_copy_only=False)
    out = out.astype(np.int64)
    given = pc.fill_null(pc.not_equal(col, _lit("")), False).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero((out < 0) & given)
    if bad.size:
        raise TensorQAError(f"sg_grounding: unknown {what} {col[int(bad[0])].as_py()!r} in column {column}")
    return out


def _first(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position of the first True in each row of m bool[n, F], whether the row has one)."""
    return m.argmax(1), m.any(1)


def _last(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return m.shape[1] - 1 - m[:, ::-1].argmax(1), m.any(1)


def _run(lo: np.ndarray, hi: np.ndarray, F: int) -> np.ndarray:
    """bool[n, F]: keyframe positions in [lo, hi)."""
    pos = np.arange(F)
    return (pos >= lo[:, None]) & (pos < hi[:, None])


def _stretches(occ: np.ndarray, lo: np.ndarray, hi: np.ndarray, forward: bool, extra: int,
               check: Callable[[np.ndarray], None]) -> tuple[np.ndarray, np.ndarray]:
    """objFirst (forward) / objLast stretches [lo, hi) of rows occ bool[n, F] inside [lo, hi)."""
    inwin = _run(lo, hi, occ.shape[1])
    pos = np.arange(occ.shape[1])
    if forward:
        start, ok = _first(occ & inwin)
        stop, ok2 = _first(~occ & inwin & (pos >= start[:, None]))
        check(ok & ok2)
        return start, stop + 1
    last, ok = _last(occ & inwin)
    gap, ok2 = _last(~occ & inwin & (pos <= last[:, None]))
    check(ok & ok2)
    return np.maximum(gap - extra, lo), last + 1


@dataclass
class _SceneTables:
    """B videos as numpy arrays (F keyframes, padded) and their keyframe names."""

    rel: np.ndarray  # bool[B, F, O, R]
    occurs: np.ndarray  # bool[B, F, R]: the relation holds with some object
    interact: dict  # "objExists" / "objTime" -> bool[B, F, O] (§c.1 rules)
    nf: np.ndarray  # int64[B] real keyframes
    names: pa.Array  # [B * F] "000105"
    count: np.ndarray  # int64[B, A + 1] instances with keyframes (column A: "no action", 0)
    first0: np.ndarray  # int64[B, A + 1] first / last keyframe of the first instance
    last0: np.ndarray
    last1: np.ndarray  # int64[B, A + 1] last keyframe of the last instance
    present: np.ndarray  # bool[B, A + 1] some instance, with or without keyframes: cNNN/1 exists

    @classmethod
    def build(cls, batch: SceneBatch, sem: Semantics) -> _SceneTables:
        batch = batch.to("cpu")
        A = vocab().num_actions
        B = len(batch)
        rel = batch.rel.numpy()
        ci = class_instances(batch, torch.arange(A).expand(B, A))

        def pad(t: torch.Tensor) -> np.ndarray:
            return np.concatenate([t.numpy(), np.zeros((B, 1), np.int64)], 1)

        present = np.zeros((B, A + 1), bool)
        b, n = np.nonzero(batch.inst_mask.numpy())
        present[b, batch.inst_cls.numpy()[b, n]] = True
        interact = {}
        for context in ("objExists", "objTime"):
            rule = sem.interaction_rule(context)
            interact[context] = batch.obj.numpy() if rule == ANY_PRESENT else rel[..., interaction_relations(rule)].any(-1)
        fids = pa.array(batch.frame_ids.numpy().reshape(-1).astype(np.int64)).cast(pa.string())
        return cls(rel=rel, occurs=rel.any(2), interact=interact, nf=batch.frame_mask.sum(1).numpy().astype(np.int64),
                   names=pc.utf8_lpad(fids, 6, "0"), count=pad(ci.count), first0=pad(ci.first_kf0),
                   last0=pad(ci.last_kf0), last1=pad(ci.last_kf1), present=present)

    @property
    def F(self) -> int:
        return self.rel.shape[1]


@functools.cache
def _action_slot_order() -> np.ndarray:
    """int64[T, 4]: per template, the action slots (``ACTION_SLOTS`` indices, -1 padding) in the
    order their ``ToAction`` calls first appear in the program text (``<window>`` holds X then Y)."""
    names = _tables()["templates"]
    out = np.full((len(names), len(ACTION_SLOTS)), -1, np.int64)
    for i, t in enumerate(names):
        text = PROGRAM_SHAPES[TEMPLATES[t].program]
        found = []
        for m in re.finditer(r"<(action2?|window)>", text):
            for slot in (("window_action", "window_action2") if m.group(1) == "window" else (m.group(1),)):
                if slot not in found:
                    found.append(slot)
        out[i, :len(found)] = [ACTION_SLOTS.index(slot) for slot in found]
    return out


_REFERENCE_RELATION = r"\[relations, (?P<relation>[^,\]]+), objects\]"


def _reference_relations(records: pa.Table, template: np.ndarray, aref: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{action slot: int64[M] relation of its indirect-object action's reference (-1: direct)}.

    Read from the program text without parsing it: the k-th ``ToAction(`` of a program belongs to
    the k-th indirect action slot in the template's order (:func:`_action_slot_order`), and the
    reference's relation is the first ``[relations, R, objects]`` after it."""
    M = records.num_rows
    out = {s: np.full(M, -1, np.int64) for s in ACTION_SLOTS}
    rows = np.flatnonzero(np.any([aref[s] > 0 for s in ACTION_SLOTS], 0))
    if not rows.size:
        return out
    pieces = pc.split_pattern(records.column("program").take(pa.array(rows)).combine_chunks(), "ToAction(")
    offsets = pieces.offsets.to_numpy().astype(np.int64)
    start = offsets[:-1] - offsets[0]  # a row's piece start + k: the text after its k-th ToAction(
    n_pieces = np.diff(offsets)
    words = pc.extract_regex(pieces.flatten(), _REFERENCE_RELATION).field("relation")
    rel = pc.index_in(words, value_set=pa.array(vocab().relation_english)).fill_null(-1).to_numpy(zero_copy_only=False)
    order = _action_slot_order()[template[rows]]  # [n, 4]
    seen = np.zeros(rows.size, np.int64)
    for k in range(order.shape[1]):
        for j, slot in enumerate(ACTION_SLOTS):
            hit = (order[:, k] == j) & (aref[slot][rows] > 0)
            seen = seen + hit
            ok = hit & (seen < n_pieces)
            out[slot][rows[ok]] = rel[start[ok] + seen[ok]]
    return out


class _Rows:
    """A block of records as integer columns (int64[M]; -1 where a slot is unused), with their
    windows [lo, hi) and evidence runs [elo, ehi) as keyframe positions (module docstring)."""

    def __init__(self, records: pa.Table, video: np.ndarray, st: _SceneTables, sem: Semantics):
        t, v = _tables(), vocab()
        self.M = records.num_rows
        self.qid = records.column("question_id") if "question_id" in records.column_names else None
        self.b = video
        self.template = _codes(records, "template", t["templates"], "template")
        self.check(self.template >= 0, np.arange(self.M), "template")
        self.frame = records.column("frame").to_numpy(zero_copy_only=False).astype(np.int64)
        n_frames = np.array([len(TEMPLATES[n].frames) for n in t["templates"]])[self.template]
        self.check((self.frame >= 0) & (self.frame < n_frames), np.arange(self.M), "frame of its template")
        self.o1, self.o2 = (_codes(records, c, list(v.object_ids), "object id") for c in ("object", "object2"))
        self.r = _codes(records, "relation", list(v.relation_ids), "relation id")
        self.oref1, self.oref2 = (_codes(records, c, list(REF_KINDS), "reference kind").clip(min=0)
                                  for c in ("object_ref", "object2_ref"))
        self.oref_rel1, self.oref_rel2 = (_codes(records, c, list(v.relation_ids), "relation id")
                                          for c in ("object_ref_relation", "object2_ref_relation"))
        self.act = {s: _codes(records, s, list(v.actions), "action id") for s in ACTION_SLOTS}
        self.aref = {s: _codes(records, s + "_ref", list(REF_KINDS), "reference kind").clip(min=0) for s in ACTION_SLOTS}
        self.aref_rel = _reference_relations(records, self.template, self.aref)
        for s in ACTION_SLOTS:
            self.check((self.aref[s] == 0) | (self.aref_rel[s] >= 0), np.arange(self.M), f"ToAction reference for {s}")
        self.category = t["category"][self.template]
        self.has_window = t["has_window"][self.template]
        self.kind = np.where(self.has_window, _codes(records, "window", list(KIND_NAMES), "window kind").clip(min=0), 0)
        answer = records.column("answer")
        self.before = pc.fill_null(pc.equal(answer, _lit("before")), False).to_numpy(zero_copy_only=False)
        self._check_actions(st)
        self.lo, self.hi = self._windows(st, sem)
        self.elo, self.ehi = self._evidence(st, sem)

    def name(self, i: int) -> str:
        return str(self.qid[i]) if self.qid is not None else f"at row {i}"

    def check(self, ok: np.ndarray, rows: np.ndarray, what: str) -> None:
        if not ok.all():
            raise TensorQAError(f"sg_grounding: record {self.name(int(rows[~ok][0]))}: no {what} "
                                "(record and scene disagree)")

    def checker(self, rows: np.ndarray, what: str) -> Callable[[np.ndarray], None]:
        return lambda ok: self.check(ok, rows, what)

    def _check_actions(self, st: _SceneTables) -> None:
        """Localizing and compared actions must have keyframes in the video."""
        A = vocab().num_actions
        for used, a in ((self.has_window & (self.kind > 0), self.act["window_action"]),
                        (self.has_window & (self.kind == 4), self.act["window_action2"]),
                        (np.isin(self.category, (SIDE_REL, SIDE_OBJ)), self.act["action"])):
            ok = ~used | ((a >= 0) & (st.count[self.b, np.where(a < 0, A, a)] > 0))
            self.check(ok, np.arange(self.M), "keyframe of a localizing or compared action in its video")

    def _windows(self, st: _SceneTables, sem: Semantics) -> tuple[np.ndarray, np.ndarray]:
        """[lo, hi) of the localization window (§a.1); the whole video without one."""
        b, kind = self.b, self.kind
        x, y = self.act["window_action"].clip(min=0), self.act["window_action2"].clip(min=0)
        first, last = st.first0[b, x], st.last0[b, x]
        x_last = st.last1[b, x] if sem.between_x_instance == "last" else last
        before_stop = first + 1 if sem.localize_before_includes_x else first
        lo = np.select([kind == 2, kind == 3, kind == 4], [last + 1, first, x_last + 1], 0)
        hi = np.select([kind == 1, kind == 3, kind == 4], [before_stop, last + 1, st.first0[b, y]], st.nf[b])
        return lo, hi

    def _evidence(self, st: _SceneTables, sem: Semantics) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.lo.copy(), self.hi.copy()
        F, b, r = st.F, self.b, self.r
        forward = _tables()["forward"][self.template]
        pos = np.arange(F)
        for fwd in (True, False):
            # objFirst / objLast and their Verify forms: the relation's stretch
            i = np.flatnonzero((self.category == STRETCH) & (forward == fwd))
            if i.size:
                lo[i], hi[i] = _stretches(st.occurs[b[i], :, r[i]], self.lo[i], self.hi[i], fwd,
                                          sem.obj_last_extra_keyframes, self.checker(i, "stretch of the relation"))
            # objFirstChoose / objLastChoose: the chosen object's stretch
            i = np.flatnonzero((self.category == CHOOSE) & (forward == fwd))
            if i.size:
                inwin = _run(self.lo[i], self.hi[i], F)
                rel1, rel2 = st.rel[b[i], :, self.o1[i], r[i]], st.rel[b[i], :, self.o2[i], r[i]]
                at, ok = (_first if fwd else _last)((rel1 | rel2) & inwin)
                holds = np.where(rel1[np.arange(i.size), at][:, None], rel1, rel2)
                side = (pos >= at[:, None]) if fwd else (pos <= at[:, None])
                end, ok2 = (_first if fwd else _last)(~holds & inwin & side)
                self.check(ok & ok2, i, "stretch of the chosen object")
                keep = int(sem.choose_stretch_includes_stop)
                lo[i], hi[i] = (at, end + keep) if fwd else (end + 1 - keep, at + 1)
        # relTime / objTime: the compare side the answer names (§a.2)
        i = np.flatnonzero(np.isin(self.category, (SIDE_REL, SIDE_OBJ)))
        if i.size:
            bi, a, before = b[i], self.act["action"][i], self.before[i]
            lo[i] = np.where(before, 0, st.last0[bi, a] + 1)
            hi[i] = np.where(before, st.first0[bi, a] + int(sem.compare_before_includes_x), st.nf[bi])
        return lo, hi


_READS = {  # the request fields (o, o2, r) each source reads; the others are zeroed so equal lists meet
    SRC_OBJ_REL: (True, False, True), SRC_PAIR_REL: (True, True, True), SRC_REL_ANY: (False, False, True),
    SRC_INTERACT_EXISTS: (True, False, False), SRC_INTERACT_TIME: (True, False, False),
    SRC_FRAMES: (False, False, False),
}


def _lists(st: _SceneTables, req: np.ndarray) -> pa.Array:
    """JSON list bodies (``"o4/000105", "o4/000134"``) of distinct requests int64[U, 7] (source,
    video, o, o2 + 1, r, lo, hi) -> string [U]."""
    src, b, o, o2, r, lo, hi = req.T
    F, O = st.F, vocab().num_objects
    fills = {
        SRC_OBJ_REL: lambda i: st.rel[b[i], :, o[i], r[i]],
        SRC_PAIR_REL: lambda i: st.rel[b[i], :, o[i], r[i]] | (st.rel[b[i], :, (o2[i] - 1).clip(min=0), r[i]]
                                                               & (o2[i] > 0)[:, None]),
        SRC_REL_ANY: lambda i: st.occurs[b[i], :, r[i]],
        SRC_INTERACT_EXISTS: lambda i: st.interact["objExists"][b[i], :, o[i]],
        SRC_INTERACT_TIME: lambda i: st.interact["objTime"][b[i], :, o[i]],
        SRC_FRAMES: lambda i: np.ones((i.size, F), bool),
    }
    m = np.zeros((len(req), F), bool)
    for s, fill in fills.items():
        i = np.flatnonzero(src == s)
        if i.size:
            m[i] = fill(i)
    m &= _run(lo, hi, F)
    row, f = np.nonzero(m)
    prefix = np.select([np.isin(src, (SRC_OBJ_REL, SRC_INTERACT_EXISTS, SRC_INTERACT_TIME)),
                        np.isin(src, (SRC_PAIR_REL, SRC_REL_ANY))], [o, O + r], -1)[row]
    prefixes = _tables()["prefix"]
    quote = _lit('"')
    items = pc.binary_join_element_wise(quote, prefixes.take(pa.array(np.where(prefix < 0, len(prefixes) - 1, prefix))),
                                        st.names.take(pa.array(b[row] * F + f)), quote, _lit(""))
    offsets = np.concatenate([[0], np.cumsum(m.sum(1))]).astype(np.int32)
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), items), _lit(", "))


def _id_lists(rows: _Rows, st: _SceneTables, sem: Semantics) -> tuple[dict[str, np.ndarray], pa.Array]:
    """({list name: int64[M] atom of each row's list}, the block's distinct list bodies).

    Atoms index ``json_static`` followed by the bodies. Lists: object, object2, relation, window
    (its keyframes), video (all keyframes), ``inner:<slot>`` (the object reference inside an
    indirect-object action) and ``instance:<slot>`` (``"cNNN/1"``) for the action slots; an
    unused list is the empty string (atom 0). Each distinct (source, video, o, o2, r, run) is
    built once: requests are packed into one int64 key each and deduplicated."""
    t = _tables()
    M, b, o1, o2, r, cat = rows.M, rows.b, rows.o1, rows.o2, rows.r, rows.category
    zero = np.zeros(M, np.int64)
    radix = np.array([len(_READS) + 1, st.rel.shape[0], vocab().num_objects, vocab().num_objects + 1,
                      vocab().num_relations, st.F + 1, st.F + 1], np.int64)
    if np.prod(radix.astype(float)) >= 2.0 ** 62:
        raise TensorQAError(f"sg_grounding: block too large ({st.rel.shape[0]} videos of {st.F} keyframes); "
                            "lower block_videos")
    fields, owners = [], []  # per request kind: used rows' fields int64[n, 7], (name, rows)

    def request(name, use, src, o=zero, o_2=zero - 1, rr=zero, lo=rows.elo, hi=rows.ehi) -> None:
        i = np.flatnonzero(use)
        src = np.broadcast_to(src, (M,))[i]
        reads = np.array([_READS.get(s, (False, False, False)) for s in range(len(_READS) + 1)])[src]
        f = np.stack([src, b[i], o[i] * reads[:, 0], (o_2[i] + 1) * reads[:, 1], rr[i] * reads[:, 2],
                      np.broadcast_to(lo, (M,))[i], np.broadcast_to(hi, (M,))[i]], 1)
        fields.append(f)
        owners.append((name, i))

    with_objects = np.isin(cat, (OBJ_REL, STRETCH, CHOOSE)) & (o1 >= 0)
    pair = np.isin(cat, (OBJ_REL, CHOOSE))
    request("object", with_objects | np.isin(cat, (EXISTS_OBJ, SIDE_OBJ)),
            np.select([cat == EXISTS_OBJ, cat == SIDE_OBJ], [SRC_INTERACT_EXISTS, SRC_INTERACT_TIME], SRC_OBJ_REL),
            o1, rr=r)
    request("object2", with_objects & (o2 >= 0), SRC_OBJ_REL, o2, rr=r)
    request("relation", np.isin(cat, (REL_ANY, STRETCH, SIDE_REL)) | pair, np.where(pair, SRC_PAIR_REL, SRC_REL_ANY),
            o1.clip(min=0), o2, r)
    request("window", rows.has_window & (rows.kind > 0), SRC_FRAMES, lo=rows.lo, hi=rows.hi)
    request("video", (rows.has_window & (rows.kind == 0)) | t["opening"][rows.template, rows.frame], SRC_FRAMES,
            lo=zero, hi=st.nf[b])
    # object references inside indirect-object actions: the keyframes that define the reference
    for slot in ACTION_SLOTS:
        kind, ref_rel = rows.aref[slot], rows.aref_rel[slot]
        lo, hi = zero.copy(), st.nf[b].copy()
        for k, fwd in ((1, True), (2, False)):
            i = np.flatnonzero(kind == k)
            if i.size:
                lo[i], hi[i] = _stretches(st.occurs[b[i], :, ref_rel[i]], lo[i], hi[i], fwd,
                                          sem.obj_last_extra_keyframes,
                                          rows.checker(i, "stretch of an object reference"))
        referent = t["action_object"][rows.act[slot].clip(min=0)]
        request("inner:" + slot, kind > 0, SRC_OBJ_REL, referent, rr=ref_rel.clip(min=0), lo=lo, hi=hi)
    every = np.concatenate(fields)
    key = np.zeros(len(every), np.int64)
    for k in range(every.shape[1]):
        key = key * radix[k] + every[:, k]
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    bodies = _lists(st, every[first])
    atoms = len(t["json_static"]) + inverse.reshape(-1)
    out, k = {}, 0
    for name, i in owners:
        out[name] = np.zeros(M, np.int64)
        out[name][i] = atoms[k:k + len(i)]
        k += len(i)
    A = t["A"]
    for slot in ACTION_SLOTS:
        a = np.where(rows.act[slot] < 0, A, rows.act[slot])
        out["instance:" + slot] = JSON_INSTANCE + np.where(st.present[b, a], a, A)
    return out, bodies


class _Group:
    """Rows with the same (template, frame, window shape, indirect-action shape), laid out
    together: ``pos`` int64[n] advances through the questions, ``atoms`` collects their lexicon
    ids piece by piece (the re-rendered question) and ``keys`` the (start, end, list atom) of
    each key in output order."""

    def __init__(self, rows: _Rows, idx: np.ndarray, lists: dict[str, np.ndarray]):
        self.rows, self.idx, self.lists = rows, idx, lists
        self.frame = int(rows.frame[idx[0]])
        self.pos = np.zeros(len(idx), np.int64)
        self.atoms: list[np.ndarray] = []
        self.keys: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def key(self, start: np.ndarray, end: np.ndarray, name: str) -> None:
        self.keys.append((start, end, self.lists[name][self.idx]))

    def literal(self, text: str) -> None:
        self.atoms.append(np.full(len(self.idx), _tables()["literal"][text], np.int64))
        self.pos = self.pos + len(text)

    def phrase(self, ids: np.ndarray, name: str | None) -> None:
        """A slot phrase (lexicon ids) at ``pos``, keyed with list ``name`` unless None."""
        end = self.pos + _tables()["length"][ids]
        if name is not None:
            self.key(self.pos, end, name)
        self.atoms.append(ids)
        self.pos = end

    def object(self, slot: str) -> None:
        """An object slot: the object's phrase or its reference's (records.render's wording variant)."""
        t, rows, idx = _tables(), self.rows, self.idx
        o, ref, ref_rel = ((rows.o1, rows.oref1, rows.oref_rel1) if slot == "object"
                           else (rows.o2, rows.oref2, rows.oref_rel2))
        o, ref, ref_rel = o[idx], ref[idx], ref_rel[idx]
        variant = (self.frame + VARIANT_SHIFT[slot]) % t["V"]
        k = ((ref - 1).clip(min=0) * t["V"] + variant) * t["R"] + ref_rel.clip(min=0)
        direct = np.where(o < 0, 0, t["base"]["object_phrase"] + o)
        self.phrase(np.where(ref > 0, t["base"]["ref_phrase"] + k, direct), slot)

    def action(self, slot: str, inner: int, name: str) -> None:
        """An action slot: direct, or an indirect-object action naming its object ``inner`` times."""
        t, rows, idx = _tables(), self.rows, self.idx
        a = rows.act[slot][idx]
        if not inner:
            self.phrase(np.where(a < 0, 0, t["base"]["action_phrase"] + a), name)
            return
        variant = (self.frame + VARIANT_SHIFT[slot]) % t["V"]
        k = ((rows.aref[slot][idx] - 1) * t["V"] + variant) * t["R"] + rows.aref_rel[slot][idx]
        length = t["length"][t["base"]["ref_phrase"] + k]
        for j in range(inner):
            start = self.pos + t["action_ref_before"][a, j] + j * length
            self.key(start, start + length, "inner:" + slot)
        self.phrase(t["base"]["action_ref"] + a * t["n_ref"] + k, name)


def _layout(rows: _Rows, lists: dict[str, np.ndarray]) -> list[_Group]:
    """Every row's keys and question atoms, group by group."""
    t = _tables()
    inner = {s: np.where(rows.aref[s] > 0, t["action_ref_inner"][rows.act[s].clip(min=0)], 0) for s in ACTION_SLOTS}
    shape = np.where(rows.has_window, np.minimum(rows.kind, 1) + (rows.kind == 4), 0)  # no / one / two actions
    key = (rows.template * _MAX_FRAMES + rows.frame) * 3 + shape
    for s in ACTION_SLOTS:
        key = key * 3 + inner[s]
    order = np.argsort(key, kind="stable")
    groups = []
    for idx in np.split(order, np.flatnonzero(np.diff(key[order])) + 1):
        g = _Group(rows, idx, lists)
        i0 = idx[0]
        template = t["templates"][rows.template[i0]]
        if t["opening"][rows.template[i0], g.frame]:
            g.key(np.zeros(len(idx), np.int64), np.full(len(idx), VIDEO_OPENING_SPAN), "video")
        for is_slot, part in _frame_parts(template, g.frame):
            if not is_slot:
                g.literal(part)
            elif part in ("object", "object2"):
                g.object(part)
            elif part == "relation":
                g.phrase(np.where(rows.r[idx] < 0, 0, t["base"]["relation_word"] + rows.r[idx]), "relation")
            elif part in ("action", "action2"):
                g.action(part, int(inner[part][i0]), "instance:" + part)
            elif part == "window" and shape[i0] == 0:
                z = np.maximum(g.pos + ZERO_WIDTH_SHIFT, 0)
                g.key(z, z, "video")
            elif part == "window":
                start = g.pos
                g.phrase(t["base"]["window_pre"] + rows.kind[idx], None)  # " before ", " between ", ...
                g.action("window_action", int(inner["window_action"][i0]), "instance:window_action")
                if shape[i0] == 2:
                    g.literal(t["between_mid"])
                    g.action("window_action2", int(inner["window_action2"][i0]), "instance:window_action2")
                g.key(start + 1, g.pos, "window")  # the phrase without its leading space
            else:
                raise TensorQAError(f"sg_grounding: frame of {template} has an unknown placeholder {{{part}}}")
        groups.append(g)
    return groups


def _ragged(M: int, blocks: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Row-major ragged ids from (rows int64[n], ids int64[n, k]) blocks: (ids, lengths int64[M])."""
    lengths = np.zeros(M, np.int64)
    for idx, ids in blocks:
        lengths[idx] = ids.shape[1]
    start = np.concatenate([[0], np.cumsum(lengths)])
    out = np.zeros(start[-1], np.int64)
    for idx, ids in blocks:
        out[start[idx][:, None] + np.arange(ids.shape[1])] = ids
    return out, lengths


def _assemble(rows: _Rows, lists: dict[str, np.ndarray], bodies: pa.Array,
              questions: pa.Array) -> tuple[pa.Array | pa.ChunkedArray, np.ndarray]:
    """(JSON texts [M], bool[M]: the question re-rendered from the record's slots with
    records.render's wording variants equals its text)."""
    t = _tables()
    M = rows.M
    groups = _layout(rows, lists)
    # the questions, re-rendered: one gather over the lexicon
    ids, lengths = _ragged(M, [(g.idx, np.stack(g.atoms, 1)) for g in groups if g.atoms])
    rebuilt = gather_text(t["lexicon"], ids, lengths)
    same = pc.fill_null(pc.equal(rebuilt, questions), False).to_numpy(zero_copy_only=False)
    # the JSON texts: '{"s-e": [' body '], "s-e": [' body ... ']}' (or '{}'), one gather over the
    # static atoms, the block's list bodies and its distinct key openers
    starts = np.concatenate([s for g in groups for s, _, _ in g.keys] or [np.zeros(0, np.int64)])
    ends = np.concatenate([e for g in groups for _, e, _ in g.keys] or [np.zeros(0, np.int64)])
    firsts = np.concatenate([np.full(len(g.idx), k == 0) for g in groups for k in range(len(g.keys))]
                            or [np.zeros(0, bool)])
    width = int(ends.max(initial=0)) + 1
    openers, opener = np.unique((starts * width + ends) * 2 + firsts, return_inverse=True)
    opener_text = [('{"' if c % 2 else '], "') + f"{c // 2 // width}-{c // 2 % width}" + '": [' for c in openers.tolist()]
    opener_base = len(t["json_static"]) + len(bodies)
    blocks, k0 = [], 0
    for g in groups:
        n, k = len(g.idx), len(g.keys)
        if not k:
            blocks.append((g.idx, np.full((n, 1), JSON_EMPTY, np.int64)))
            continue
        atoms = np.empty((n, 2 * k + 1), np.int64)
        for j, (_, _, body) in enumerate(g.keys):
            atoms[:, 2 * j] = opener_base + opener[k0 + j * n:k0 + (j + 1) * n]
            atoms[:, 2 * j + 1] = body
        atoms[:, -1] = JSON_END
        k0 += k * n
        blocks.append((g.idx, atoms))
    pool = pa.concat_arrays([t["json_static"], bodies, pa.array(opener_text, pa.string())])
    ids, lengths = _ragged(M, blocks)
    return gather_text(pool, ids, lengths), same


# ====================================================================================================
# Public API
# ====================================================================================================
def _scene_getter(scenes) -> Callable[[str], VideoScene | None]:
    """video_id -> VideoScene (None when absent) over a SceneBatch, a mapping or a SceneStore."""
    if isinstance(scenes, SceneBatch):
        index = {v: i for i, v in enumerate(scenes.video_ids)}
        return lambda video_id: scenes[index[video_id]].scenes()[0] if video_id in index else None
    if isinstance(scenes, Mapping):
        return scenes.get
    if hasattr(scenes, "scene") and hasattr(scenes, "video_ids"):  # SceneStore (store.py needs h5py)
        known = set(scenes.video_ids)
        return lambda video_id: scenes.scene(video_id) if video_id in known else None
    raise TensorQAError(f"sg_grounding: cannot read scenes from a {type(scenes).__name__}")


def _batch_of(scenes, names: list[str], get: Callable[[str], VideoScene | None]) -> SceneBatch:
    """The videos ``names`` as one SceneBatch, in that order."""
    if isinstance(scenes, SceneBatch):
        index = {v: i for i, v in enumerate(scenes.video_ids)}
        missing = [v for v in names if v not in index]
        if missing:
            raise TensorQAError(f"sg_grounding: no scene for video {missing[0]!r} in the batch")
        positions = [index[v] for v in names]
        return scenes if positions == list(range(len(scenes))) else scenes[positions].trim()
    found = [get(v) for v in names]
    missing = [v for v, s in zip(names, found) if s is None]
    if missing:
        raise TensorQAError(f"sg_grounding: no scene for video {missing[0]!r}")
    return SceneBatch.from_scenes([s.sorted() for s in found])


def grounding_column(records: pa.Table, scenes, semantics: Semantics | str = "agqa",
                     block_videos: int = 64) -> pa.Array | pa.ChunkedArray:
    """sg_grounding of every record: strings [M] (an Array, or a ChunkedArray past 256K rows per
    block), one JSON object text per row, in row order (``{"start-end": [vertex ids], ...}``,
    ``json.dumps`` spacing).

    records: a RECORD_SCHEMA table (at least the non-optional :data:`COLUMNS`). scenes: the scenes
    the records were generated from (``SceneBatch``, ``{video_id: VideoScene}`` or ``SceneStore``).
    semantics: the semantics they were generated with. block_videos: videos whose scene tables are
    held at once (about ``block_videos * F * 2 KiB`` for F keyframes); their rows are grounded
    ``text.CHUNK_ROWS`` at a time. Rows already grouped by video (as the generator writes them) are
    read in place; otherwise they are gathered video by video and the result is put back in row
    order. A pool-scale table is best grounded block by block, as the generator writes it.
    """
    missing = [c for c in COLUMNS if c not in OPTIONAL_COLUMNS and c not in records.column_names]
    if missing:
        raise TensorQAError(f"sg_grounding: records lack column(s) {missing}")
    if block_videos < 1:
        raise TensorQAError(f"sg_grounding: block_videos must be at least 1, got {block_videos}")
    sem = get_semantics(semantics)
    if records.num_rows == 0:
        return pa.array([], pa.string())
    if records.column("video_id").null_count:
        raise TensorQAError("sg_grounding: a record has no video_id")
    encoded = pc.dictionary_encode(records.column("video_id")).combine_chunks()
    video_ids = encoded.dictionary.to_pylist()  # each has rows, in order of first appearance
    code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    get = _scene_getter(scenes)
    order = np.argsort(code, kind="stable")
    bounds = np.searchsorted(code[order], np.arange(0, len(video_ids) + block_videos, block_videos))
    in_order = bool((order == np.arange(len(order))).all())  # rows already grouped by video
    texts: list[pa.Array] = []
    for n, (a, z) in enumerate(itertools.pairwise(bounds)):
        st = _SceneTables.build(_batch_of(scenes, video_ids[n * block_videos:(n + 1) * block_videos], get), sem)
        for c in range(a, z, CHUNK_ROWS):  # bounded memory: the texts of at most CHUNK_ROWS rows at once
            idx = order[c:min(c + CHUNK_ROWS, z)]
            block = records.slice(c, len(idx)) if in_order else records.take(pa.array(idx))
            texts += _ground_block(block, code[idx] - n * block_videos, st, sem, get)
    out = pa.chunked_array(texts, pa.string())
    if not in_order:
        out = out.take(pa.array(np.argsort(order, kind="stable")))
    return out.combine_chunks() if out.num_chunks == 1 else out


def _ground_block(block: pa.Table, video: np.ndarray, st: _SceneTables, sem: Semantics,
                  get: Callable[[str], VideoScene | None]) -> list[pa.Array]:
    """The JSON texts of a block of records whose videos are ``st``'s (``video``: their positions)."""
    rows = _Rows(block, video, st, sem)
    lists, bodies = _id_lists(rows, st, sem)
    text, same = _assemble(rows, lists, bodies, block.column("question").combine_chunks())
    chunks = text.chunks if isinstance(text, pa.ChunkedArray) else [text]
    other = np.flatnonzero(~same)
    if other.size:  # not records.render's wording: the scalar path (any wording variant, or an error)
        present = [c for c in COLUMNS if c in block.column_names]
        found = [json.dumps(ground_record(row, get(row["video_id"]), sem))
                 for row in block.select(present).take(pa.array(other)).to_pylist()]
        mask = np.zeros(block.num_rows, bool)
        mask[other] = True
        chunks = [pc.replace_with_mask(pa.chunked_array(chunks, pa.string()).combine_chunks(), pa.array(mask),
                                       pa.array(found, pa.string()))]
    return chunks


def with_grounding(records: pa.Table, scenes, semantics: Semantics | str = "agqa", block_videos: int = 64) -> pa.Table:
    """``records`` with its ``sg_grounding`` column (replaced, or appended) from :func:`grounding_column`."""
    column = grounding_column(records, scenes, semantics, block_videos)
    if "sg_grounding" in records.column_names:
        return records.set_column(records.column_names.index("sg_grounding"), "sg_grounding", column)
    return records.append_column("sg_grounding", column)


def ground_record(record: Mapping[str, Any], scene: VideoScene, semantics: Semantics | str = "agqa") -> dict[str, list[str]]:
    """The sg_grounding of one record (a RECORD_SCHEMA row as a dict) on its video's scene: the
    scalar reference of :func:`grounding_column`. A reference phrase may use any wording variant."""
    if record.get("video_id") not in (None, scene.video_id):
        raise TensorQAError(f"sg_grounding: record is about video {record['video_id']!r}, the scene is {scene.video_id!r}")
    row = {c: record.get(c) or "" for c in COLUMNS}
    row["frame"] = record.get("frame", 0)
    return _ground_one(_Video(scene, get_semantics(semantics)), row)


def check_grounding(grounding: Mapping[str, list[str]] | str, question: str, vertex_ids: Iterable[str]) -> list[str]:
    """Problems with a grounding under AGQA's own validation (§e): keys are ``"start-end"`` with
    0 <= start <= end <= len(question), and every id is a vertex of the video's graph. One line per
    problem; empty when valid. ``vertex_ids``: e.g. ``export_agqa.video_graph(scene).keys()``."""
    g = json.loads(grounding) if isinstance(grounding, str) else grounding
    known = vertex_ids if isinstance(vertex_ids, (set, frozenset, Mapping)) else set(vertex_ids)
    problems = []
    for key, ids in g.items():
        m = re.fullmatch(r"(-?\d+)-(-?\d+)", key)
        if m is None:
            problems.append(f"key {key!r} is not 'start-end'")
            continue
        a, b = int(m.group(1)), int(m.group(2))
        if a < 0 or b < 0:
            problems.append(f"key {key!r} has a negative offset")
        elif a > b or b > len(question):
            problems.append(f"key {key!r} is not within the question ({len(question)} characters)")
        problems += [f"key {key!r}: id {i!r} is not a vertex of the graph" for i in ids if i not in known]
    return problems
