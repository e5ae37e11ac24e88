"""The AGQA template catalogue as data: metadata, question frames and reference phrases.

``TEMPLATES`` maps each of the 28 templates of the AGQA paper's Table 14 (in that table's order,
with its spelling of the names) to a frozen :class:`TemplateSpec`. The metadata is transcribed from
``docs/reference/agqa.md`` (Table 14, §2.3) and ``docs/reference/agqa_semantics.md`` (§b.1,
§b.3, §b.4); the natural-language frames live in ``frames.tsv`` beside this module (package data,
read with ``importlib.resources``). Nothing here renders questions: the generation pipeline fills
the frames (vectorized, at write time) with slot strings it builds from the vocabulary.

Frame placeholders (``FRAME_SLOTS``), each used at most once per frame:

* ``{object}``, ``{object2}``: an object noun phrase with its article (``a blanket``) or an object
  reference phrase (``OBJECT_REFERENCE_FRAMES``, ``the object they were holding first``);
* ``{relation}``: a relation's English form, ``Vocab.relation_english`` (``holding``,
  ``in front of``, ``walking``);
* ``{action}``, ``{action2}``: an action phrase in -ing form, ``Vocab.action_phrases``
  (``holding a pillow``), or an indirect-object action (``ACTION_REFERENCE_FRAMES``);
* ``{window}``: a localization phrase with its leading space (``WINDOW_FRAMES``,
  `` before holding a pillow``) or the empty string for the whole video. Frames always put it
  right after a word (no space before it), mostly just before ``?``, so both fillings read
  correctly.

Choices made where the references leave room (all easy to change in the tables below):

* ``global_`` uses the released data's spellings (docs/reference/agqa.md §2.3): ``action-recognition`` (seen in
  the released train data) where Table 14 prints ``activity-recognition``, and
  ``duration-comparison`` as Table 14 prints it (its data spelling was never observed). The order
  inside a list is Table 14's; relTime and objTime get ``sequencing`` appended (AGQA 2.0 change 7),
  which matches the real relTime record ``["rel-act", "sequencing"]``. objWhatGeneral has no
  category in Table 14 ("–"), so its list is empty.
* ``semantic`` uses the data's ``relation`` where Table 14 writes "relationship".
* ``base_steps`` follows docs/reference/agqa_semantics.md §b.1; ``table14_steps`` keeps the paper's column. They
  differ only for actLongest / actShortest (2 vs 1).
* ``program`` is the key of ``tensorqa.agqa.shapes.PROGRAM_SHAPES``: equal to the name except
  actLengthLongerCompare / actLengthShorterCompare, which AGQA's generator (and PROGRAM_SHAPES)
  calls ``actLengthLongerChoose`` / ``actLengthShorterChoose``.
* ``references``: every slot lists its allowed reference kinds (§b.3). A window's action may be
  direct or an indirect-object action in every template ("localizations wrap direct and
  indirect-object actions alike"); object slots of objExists and of the length templates are
  direct only.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorqa.engine.windows import WINDOW_KINDS
from tensorqa.errors import TensorQAError
from tensorqa.agqa.shapes import SHAPES, ShapeSpec
from tensorqa.agqa.templates.frames import FRAME_SLOTS, check_frame, frame_placeholders, read_frames  # noqa: F401  (public here)
from tensorqa.agqa.templates.phrases import ACTION_REFERENCE_FRAMES, OBJECT_REFERENCE_FRAMES, WINDOW_FRAMES  # noqa: F401  (public here)

# -- vocabularies of the metadata --------------------------------------------------------------
REFERENCE_KINDS: tuple[str, ...] = ("direct", "first", "last", "whole", "indirect-object")
FAMILIES: tuple[str, ...] = ("exists", "what", "first", "last", "length", "time")
SEMANTICS: tuple[str, ...] = ("object", "relation", "action")
STRUCTURALS: tuple[str, ...] = ("query", "verify", "logic", "choose", "compare")
LOCAL_SLOTS: tuple[str, ...] = ("object", "object2", "relation", "action", "action2", "window_action")

# Released ``global`` reasoning categories (data spellings; see the module docstring).
EXISTS = "exists"
OBJ_REL = "obj-rel"
REL_ACT = "rel-act"
OBJ_ACT = "obj-act"
SUPERLATIVE = "superlative"
SEQUENCING = "sequencing"
DURATION = "duration-comparison"
RECOGNITION = "action-recognition"
GLOBAL_CATEGORIES: tuple[str, ...] = (EXISTS, OBJ_REL, REL_ACT, OBJ_ACT, SUPERLATIVE, SEQUENCING, DURATION, RECOGNITION)


@dataclass(frozen=True)
class TemplateSpec:
    """One AGQA template: metadata plus its question frames.

    name:          Table 14 name (``objRelExists``).
    program:       key of its program skeleton in ``tensorqa.agqa.shapes.PROGRAM_SHAPES``.
    global_:       released ``global`` list of reasoning categories.
    family:        internal balancing family (exists / what / first / last / length / time).
    semantic:      object / relation / action.
    structural:    query / verify / logic / choose / compare.
    ans_type:      ``open`` for query templates, ``binary`` for all others.
    base_steps:    steps before references and localization add theirs (semantics §b.1).
    table14_steps: the paper's steps column (differs from base_steps for actLongest/actShortest).
    answer_space:  ``yes-no``, ``before-after``, ``object``, ``action``, or, for the choose
                   templates, the template local itself (its ``local_format``), as §b.4 tags them.
    local_format:  how the template local is formed: a constant (``object``, ``action``,
                   ``longest``) or a hyphen-joined pattern of AGQA ids, ``{relation}-{object}``;
                   ``{object}``/``{object2}`` -> ``oN``, ``{relation}`` -> ``rN``/``vNNN``,
                   ``{action}``/``{action2}`` -> ``cNNN``, ``{window_action}`` -> the id of the
                   window's action (empty for the whole video). A reference contributes its
                   referent's id (the real relTime record LSKA2-2205 has ``v029-c063`` for the
                   indirect-object action "taking the object they were on the side of first from
                   somewhere").
    windows:       window kinds the template is generated with (subset of ``WINDOW_KINDS``);
                   empty for templates without a ``{window}`` (length, superlative, time).
    references:    ``((slot, allowed reference kinds), ...)`` for every slot, in slot order.
    table14_unbalanced_k, table14_balanced_k: Table 14's question counts, in thousands.
    retired:       True for actExists, which AGQA 2.0 removed; generation skips it by default.
    slots:         placeholders of the frames, in order of first appearance in ``frames[0]``.
    frames:        question frames; the position in this tuple is the frame variant index.
    validity:      its validity rule, a name of ``agqa/validity.RULES`` (docs/reference/agqa_semantics.md §b).
    evidence:      how its sg_grounding picks evidence keyframes and what it grounds (a name of
                   ``agqa/grounding_text.EVIDENCE``).
    reference_rule: which reference rules (agqa/indirect.reference_rule) its object references
                   obey beyond the plain ones: "touching" (§b.1 objRelExists' touching
                   restriction), "and_xor" (that, and the own-relation clause only under
                   ``Semantics.and_xor_reference_relation_check``), or "".
    shape:         the engine's facts of its program (``agqa/shapes.SHAPES``: grid
                   evaluator, scan direction, which length wins).
    """

    name: str
    program: str
    global_: tuple[str, ...]
    family: str
    semantic: str
    structural: str
    ans_type: str
    base_steps: int
    table14_steps: int
    answer_space: str
    local_format: str
    windows: tuple[str, ...]
    references: tuple[tuple[str, tuple[str, ...]], ...]
    table14_unbalanced_k: float
    table14_balanced_k: float
    slots: tuple[str, ...]
    frames: tuple[str, ...]
    retired: bool = False
    validity: str = ""
    evidence: str = ""
    reference_rule: str = ""

    @property
    def shape(self) -> ShapeSpec:
        return SHAPES[self.program]

    @property
    def reference_kinds(self) -> dict[str, tuple[str, ...]]:
        """{slot: allowed reference kinds}."""
        return dict(self.references)

    @property
    def has_window(self) -> bool:
        return "window" in self.slots


# -- the metadata table --------------------------------------------------------------------------
_ALL_WINDOWS = WINDOW_KINDS
_FIRST_WINDOWS = ("video", "after", "while", "between")  # objFirst family: never "before"
_LAST_WINDOWS = ("video", "before", "while", "between")  # objLast family: never "after"
_DIRECT = ("direct",)
_ANY_OBJECT = ("direct", "first", "last", "whole")
_ACTION_REF = ("direct", "indirect-object")
_WINDOW_REF = _ACTION_REF

# name: (program, global_, family, semantic, structural, base_steps, table14_steps, answer_space,
#        local_format, windows, {slot: reference kinds} (object/action/window slots; relations are
#        always direct), unbalanced K, balanced K, slots in canonical order)
_ROWS: dict[str, tuple] = {
    "objExists": (
        "objExists", (EXISTS,), "exists", "object", "verify", 1, 1, "yes-no",
        "{object}", _ALL_WINDOWS, {"object": _DIRECT}, 2316.0, 99.0,
        ("object", "window"),
    ),
    "objRelExists": (
        "objRelExists", (EXISTS, OBJ_REL), "exists", "relation", "verify", 1, 1, "yes-no",
        "{relation}-{object}", _ALL_WINDOWS, {"object": _ANY_OBJECT}, 14297.9, 98.8,
        ("relation", "object", "window"),
    ),
    "relExists": (
        "relExists", (EXISTS,), "exists", "relation", "verify", 1, 1, "yes-no",
        "{relation}", _ALL_WINDOWS, {}, 20465.7, 97.6,
        ("relation", "window"),
    ),
    "actExists": (
        "actExists", (EXISTS,), "exists", "action", "verify", 1, 1, "yes-no",
        "{action}", _ALL_WINDOWS, {"action": _DIRECT}, 66541.1, 98.6,
        ("action", "window"),
    ),
    "andObjRelExists": (
        "andObjRelExists", (EXISTS, OBJ_REL), "exists", "relation", "logic", 3, 3, "yes-no",
        "and-{relation}-{object}-{object2}", _ALL_WINDOWS, {"object": _ANY_OBJECT, "object2": _ANY_OBJECT},
        26010.4, 93.4,
        ("relation", "object", "object2", "window"),
    ),
    "xorObjRelExists": (
        "xorObjRelExists", (EXISTS, OBJ_REL), "exists", "relation", "logic", 3, 3, "yes-no",
        "xor-{relation}-{object}-{object2}", _ALL_WINDOWS, {"object": _ANY_OBJECT, "object2": _ANY_OBJECT},
        26010.4, 97.6,
        ("relation", "object", "object2", "window"),
    ),
    "objWhatGeneral": (
        "objWhatGeneral", (), "what", "object", "query", 1, 1, "object",
        "object", _ALL_WINDOWS, {}, 34.2, 31.2,
        ("window",),
    ),
    "objWhat": (
        "objWhat", (OBJ_REL,), "what", "object", "query", 2, 2, "object",
        "{relation}", _ALL_WINDOWS, {}, 1796.6, 1574.2,
        ("relation", "window"),
    ),
    "objWhatChoose": (
        "objWhatChoose", (OBJ_REL,), "what", "object", "choose", 3, 3, "{relation}-{object}-{object2}",
        "{relation}-{object}-{object2}", _ALL_WINDOWS, {"object": ("direct", "last"), "object2": ("direct", "last")},
        4254.1, 194.3,
        ("relation", "window", "object", "object2"),
    ),
    "actWhatAfterAll": (
        "actWhatAfterAll", (SEQUENCING, RECOGNITION), "what", "action", "query", 1, 1, "action",
        "{window_action}", ("video", "after"), {}, 4.1, 4.0,
        ("window",),
    ),
    "actWhatBefore": (
        "actWhatBefore", (SEQUENCING, RECOGNITION), "what", "action", "query", 1, 1, "action",
        "{window_action}", ("before",), {}, 1.4, 1.4,
        ("window",),
    ),
    "objFirst": (
        "objFirst", (SUPERLATIVE, OBJ_REL), "first", "object", "query", 2, 2, "object",
        "{relation}", _FIRST_WINDOWS, {}, 146.2, 136.9,
        ("relation", "window"),
    ),
    "objLast": (
        "objLast", (SUPERLATIVE, OBJ_REL), "last", "object", "query", 2, 2, "object",
        "{relation}", _LAST_WINDOWS, {}, 246.5, 223.9,
        ("relation", "window"),
    ),
    "objFirstChoose": (
        "objFirstChoose", (SUPERLATIVE, OBJ_REL), "first", "object", "choose", 3, 3, "{relation}-{object}-{object2}",
        "{relation}-{object}-{object2}", _FIRST_WINDOWS, {"object": ("direct", "last"), "object2": ("direct", "last")},
        992.5, 197.8,
        ("relation", "window", "object", "object2"),
    ),
    "objLastChoose": (
        "objLastChoose", (SUPERLATIVE, OBJ_REL), "last", "object", "choose", 3, 3, "{relation}-{object}-{object2}",
        "{relation}-{object}-{object2}", _LAST_WINDOWS, {"object": ("direct", "first"), "object2": ("direct", "first")},
        929.8, 196.2,
        ("relation", "window", "object", "object2"),
    ),
    "objFirstVerify": (
        "objFirstVerify", (SUPERLATIVE, OBJ_REL), "first", "object", "verify", 3, 3, "yes-no",
        "{relation}-{object}", _FIRST_WINDOWS, {"object": ("direct", "last")}, 1213.4, 99.0,
        ("relation", "object", "window"),
    ),
    "objLastVerify": (
        "objLastVerify", (SUPERLATIVE, OBJ_REL), "last", "object", "verify", 3, 3, "yes-no",
        "{relation}-{object}", _LAST_WINDOWS, {"object": ("direct", "first")}, 5339.0, 98.8,
        ("relation", "object", "window"),
    ),
    "actFirst": (
        "actFirst", (SUPERLATIVE, RECOGNITION), "first", "action", "query", 1, 1, "action",
        "{window_action}", ("video", "after"), {}, 5.3, 5.0,
        ("window",),
    ),
    "actLast": (
        # semantics §b.1: actLast's local is the constant "action", unlike actFirst's window action
        "actLast", (SUPERLATIVE, RECOGNITION), "last", "action", "query", 1, 1, "action",
        "action", ("video", "before"), {}, 1.3, 1.2,
        ("window",),
    ),
    "actLengthLongerCompare": (
        "actLengthLongerChoose", (DURATION,), "length", "action", "compare", 5, 5, "longer-{action}-{action2}",
        "longer-{action}-{action2}", (), {"action": _DIRECT, "action2": _DIRECT}, 39.3, 12.6,
        ("action", "action2"),
    ),
    "actLengthShorterCompare": (
        "actLengthShorterChoose", (DURATION,), "length", "action", "compare", 5, 5, "shorter-{action}-{action2}",
        "shorter-{action}-{action2}", (), {"action": _DIRECT, "action2": _DIRECT}, 39.3, 12.6,
        ("action", "action2"),
    ),
    "actLengthLongerVerify": (
        "actLengthLongerVerify", (DURATION,), "length", "action", "compare", 5, 5, "yes-no",
        "longer-{action}-{action2}", (), {"action": _DIRECT, "action2": _DIRECT}, 39.3, 12.6,
        ("action", "action2"),
    ),
    "actLengthShorterVerify": (
        "actLengthShorterVerify", (DURATION,), "length", "action", "compare", 5, 5, "yes-no",
        "shorter-{action}-{action2}", (), {"action": _DIRECT, "action2": _DIRECT}, 39.3, 12.6,
        ("action", "action2"),
    ),
    "actLongest": (
        "actLongest", (SUPERLATIVE, DURATION), "length", "action", "query", 2, 1, "action",
        "longest", (), {}, 2.3, 2.3,
        (),
    ),
    "actShortest": (
        "actShortest", (SUPERLATIVE, DURATION), "length", "action", "query", 2, 1, "action",
        "shortest", (), {}, 0.5, 0.5,
        (),
    ),
    "actTime": (
        "actTime", (SEQUENCING,), "time", "action", "compare", 5, 5, "before-after",
        "{action}-{action2}", (), {"action": _ACTION_REF, "action2": _ACTION_REF}, 921.9, 315.0,
        ("action", "action2"),
    ),
    "relTime": (
        "relTime", (REL_ACT, SEQUENCING), "time", "relation", "compare", 5, 5, "before-after",
        "{relation}-{action}", (), {"action": _ACTION_REF}, 391.8, 206.1,
        ("relation", "action"),
    ),
    "objTime": (
        "objTime", (OBJ_ACT, SEQUENCING), "time", "object", "compare", 5, 5, "before-after",
        "{object}-{action}", (), {"object": _ANY_OBJECT, "action": _ACTION_REF}, 6.4, 0.5,
        ("object", "action"),
    ),
}

RETIRED: frozenset[str] = frozenset({"actExists"})  # AGQA 2.0 removed it (semantics §b.2)

# per program: (validity rule, evidence category); the rules are agqa/validity.RULES, the
# categories agqa/grounding_text.EVIDENCE
_RULES: dict[str, tuple[str, str]] = {
    "objExists": ("obj_exists", "exists-object"),
    "objRelExists": ("obj_rel_exists", "object-relation"),
    "relExists": ("rel_exists", "relation-any"),
    "actExists": ("act_exists", "action-exists"),
    "andObjRelExists": ("and_xor", "object-relation"),
    "xorObjRelExists": ("and_xor", "object-relation"),
    "objWhatGeneral": ("obj_what_general", "nothing"),
    "objWhat": ("obj_what", "relation-any"),
    "objWhatChoose": ("choose", "object-relation"),
    "actWhatAfterAll": ("act_answer_not_window_action", "nothing"),
    "actWhatBefore": ("act_answer_not_window_action", "nothing"),
    "objFirst": ("episode", "stretch"),
    "objLast": ("episode", "stretch"),
    "objFirstChoose": ("choose", "choose"),
    "objLastChoose": ("choose", "choose"),
    "objFirstVerify": ("episode_verify", "stretch"),
    "objLastVerify": ("episode_verify", "stretch"),
    "actFirst": ("act_first", "nothing"),
    "actLast": ("act_last", "nothing"),
    "actLengthLongerChoose": ("length", "actions"),
    "actLengthShorterChoose": ("length", "actions"),
    "actLengthLongerVerify": ("length", "actions"),
    "actLengthShorterVerify": ("length", "actions"),
    "actLongest": ("superlative", "nothing"),
    "actShortest": ("superlative", "nothing"),
    "actTime": ("act_time", "actions"),
    "relTime": ("rel_time", "side-relation"),
    "objTime": ("obj_time", "side-object"),
}

# per program: the reference rules beyond the plain ones (TemplateSpec.reference_rule)
_REFERENCE_RULES: dict[str, str] = {"objRelExists": "touching", "andObjRelExists": "and_xor", "xorObjRelExists": "and_xor"}


def _build(frames: dict[str, list[str]]) -> dict[str, TemplateSpec]:
    unknown = sorted(set(frames) - set(_ROWS))
    if unknown:
        raise TensorQAError(f"frames.tsv: unknown template(s) {unknown}")
    specs = {}
    for name, row in _ROWS.items():
        (program, global_, family, semantic, structural, base_steps, table14_steps, answer_space,
         local_format, windows, refs, unbalanced_k, balanced_k, slots) = row
        own = frames.get(name, [])
        for frame in own:
            if sorted(check_frame(frame)) != sorted(slots):
                raise TensorQAError(f"frames.tsv: {name} frame {frame!r} does not use exactly the slots {list(slots)}")
        if own and tuple(check_frame(own[0])) != slots:
            raise TensorQAError(f"frames.tsv: the first {name} frame must list its slots in the order {list(slots)}")
        references = tuple(
            (slot, refs.get(slot, _WINDOW_REF if slot == "window" else _DIRECT)) for slot in slots
        )
        specs[name] = TemplateSpec(
            name=name, program=program, global_=global_, family=family, semantic=semantic,
            structural=structural, ans_type="open" if structural == "query" else "binary",
            base_steps=base_steps, table14_steps=table14_steps, answer_space=answer_space,
            local_format=local_format, windows=windows, references=references,
            table14_unbalanced_k=unbalanced_k, table14_balanced_k=balanced_k,
            slots=slots, frames=tuple(own), retired=name in RETIRED,
            validity=_RULES[program][0], evidence=_RULES[program][1],
            reference_rule=_REFERENCE_RULES.get(program, ""),
        )
    return specs


TEMPLATES: dict[str, TemplateSpec] = _build(read_frames())
ACTIVE_TEMPLATES: tuple[str, ...] = tuple(n for n, t in TEMPLATES.items() if not t.retired)
_BY_PROGRAM = {t.program: t for t in TEMPLATES.values()}


def template_spec(name: str) -> TemplateSpec:
    """The spec of a template given its Table 14 name or its program (generator) name."""
    spec = TEMPLATES.get(name) or _BY_PROGRAM.get(name)
    if spec is None:
        raise TensorQAError(f"unknown AGQA template {name!r}")
    return spec
