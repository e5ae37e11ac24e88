"""Text tables shared by the two implementations of :mod:`.grounding`: the record columns it
reads, the constants of docs/reference/agqa_semantics.md §e it follows, and a question's parts (frame and window
fragments, slot phrases, reference wordings), each computed once."""

from __future__ import annotations

import functools

import pyarrow as pa

from tensorqa.errors import TensorQAError
from tensorqa.agqa.program import Call, Items, Node, Word, match, parse_program
from tensorqa.agqa.shapes import PROGRAM_SHAPES
from tensorqa.agqa.templates import ACTION_REFERENCE_FRAMES, OBJECT_REFERENCE_FRAMES, TEMPLATES, WINDOW_FRAMES
from tensorqa.scenes.vocab import indefinite, vocab
from tensorqa.agqa.text import split_pattern

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

# how each program (TemplateSpec.program) picks its evidence keyframes and what it grounds
NOTHING, ACTIONS, EXISTS_OBJ, ACT_EXISTS, REL_ANY, OBJ_REL, STRETCH, CHOOSE, SIDE_REL, SIDE_OBJ = range(10)
EVIDENCE = {  # TemplateSpec.evidence -> its code
    "nothing": NOTHING, "actions": ACTIONS, "exists-object": EXISTS_OBJ, "action-exists": ACT_EXISTS,
    "relation-any": REL_ANY, "object-relation": OBJ_REL, "stretch": STRETCH, "choose": CHOOSE,
    "side-relation": SIDE_REL, "side-object": SIDE_OBJ,
}
EVIDENCE_OF_PROGRAM = {spec.program: EVIDENCE[spec.evidence] for spec in TEMPLATES.values()}  # program -> code
FORWARD_PROGRAMS = frozenset(spec.program for spec in TEMPLATES.values() if spec.shape.forward)  # first scans; the rest backward

def _parts(text: str) -> tuple[tuple[bool, str], ...]:
    """A format string as ((is_slot, literal text or slot name), ...), empty literals dropped."""
    return tuple((i % 2 == 1, part) for i, part in enumerate(split_pattern(text)) if i % 2 or part)


@functools.cache
def frame_parts(template: str, frame: int) -> tuple[tuple[bool, str], ...]:
    spec = TEMPLATES.get(template)
    if spec is None:
        raise TensorQAError(f"sg_grounding: unknown template {template!r}")
    if not 0 <= frame < len(spec.frames):
        raise TensorQAError(f"sg_grounding: template {template} has no frame {frame}")
    return _parts(spec.frames[frame])


@functools.cache
def window_parts(kind: str) -> tuple[tuple[bool, str], ...]:
    """" before {action}" -> ((False, " before "), (True, "action")); X is {action}, Y {action2}."""
    return _parts(WINDOW_FRAMES[kind])


@functools.cache
def vocabulary_ids() -> dict[str, dict[str, int]]:
    v = vocab()
    return {"object": {x: i for i, x in enumerate(v.object_ids)},
            "relation": {x: i for i, x in enumerate(v.relation_ids)},
            "action": {x: i for i, x in enumerate(v.actions)}}


@functools.cache
def object_phrases() -> tuple[str, ...]:
    return tuple(indefinite(e) for e in vocab().object_english)


@functools.cache
def object_reference_phrases(kind: str, relation: int) -> tuple[str, ...]:
    """The wording variants of an object reference through ``relation``."""
    if kind not in OBJECT_REFERENCE_FRAMES:
        raise TensorQAError(f"sg_grounding: unknown object reference kind {kind!r}")
    english = vocab().relation_english[relation]
    return tuple(f.format(relation=english) for f in OBJECT_REFERENCE_FRAMES[kind])


@functools.cache
def action_reference_layout(action: int) -> tuple[int, ...]:
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


def action_reference_text(action: int, phrase: str) -> str:
    return ACTION_REFERENCE_FRAMES[vocab().actions[action]].format(object=phrase)


@functools.lru_cache(maxsize=256)
def string_scalar(text: str) -> pa.Scalar:
    """A cached string scalar: kernels given plain Python strings convert them slowly each call."""
    return pa.scalar(text, pa.string())


# -- the relation of each indirect-object action's reference, read from the program -------------------
@functools.cache
def _skeleton(program: str) -> Node:
    return parse_program(PROGRAM_SHAPES[program])


@functools.lru_cache(maxsize=1 << 14)
def action_reference_relations(program: str, text: str) -> dict[str, int]:
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
