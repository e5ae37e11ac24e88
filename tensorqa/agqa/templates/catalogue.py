"""The AGQA template catalogue as data: ``TEMPLATES`` maps each of the 28 templates of the AGQA
paper's Table 14 (its order and spelling) to a frozen :class:`TemplateSpec`, transcribed from
docs/reference/agqa.md (Table 14, §2.3) and docs/reference/agqa_semantics.md (§b.1, §b.3, §b.4); the
question frames live in ``frames.tsv`` beside this module. Nothing here renders questions.

Frame placeholders (``FRAME_SLOTS``), each at most once per frame: ``{object}``, ``{object2}`` (a noun
phrase with its article or an ``OBJECT_REFERENCE_FRAMES`` phrase); ``{relation}``
(``Vocab.relation_english``); ``{action}``, ``{action2}`` (``Vocab.action_phrases`` or an
``ACTION_REFERENCE_FRAMES`` indirect-object action); ``{window}`` (a ``WINDOW_FRAMES`` phrase with its
leading space, or "" for the whole video: frames put it right after a word, so both fillings read).

Choices where the references leave room:

* ``global_`` uses the released data's spellings (agqa.md §2.3): ``action-recognition`` where Table 14
  prints ``activity-recognition``; ``duration-comparison`` as printed (its data spelling was never
  observed). relTime and objTime get ``sequencing`` appended (AGQA 2.0 change 7, as the real relTime
  record ``["rel-act", "sequencing"]``); objWhatGeneral has no category ("–"): an empty list.
* ``semantic`` uses the data's ``relation`` where Table 14 writes "relationship".
* ``base_steps`` follows semantics §b.1, ``table14_steps`` the paper (they differ for actLongest /
  actShortest: 2 vs 1).
* ``program`` is the ``PROGRAM_SHAPES`` key: the name, except actLength{Longer,Shorter}Compare, which
  AGQA's generator calls ``actLength{Longer,Shorter}Choose``.
* ``references`` (§b.3): a window's action may be direct or indirect-object in every template; the
  object slots of objExists and of the length templates are direct only.
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
    """One AGQA template: metadata plus its question frames (fields in the order of ``_ROWS``).

    program:        key of its skeleton in ``agqa/shapes.PROGRAM_SHAPES``; ``shape`` its engine facts.
    family:         balancing family (exists / what / first / last / length / time).
    ans_type:       ``open`` for query templates, ``binary`` for the others.
    base_steps:     steps before references and localization add theirs (semantics §b.1).
    answer_space:   ``yes-no``, ``before-after``, ``object``, ``action``, or for the choose templates
                    their local itself, as §b.4 tags them.
    local_format:   a constant (``object``, ``longest``) or a hyphen-joined pattern of AGQA ids:
                    ``{object}`` -> ``oN``, ``{relation}`` -> ``rN``/``vNNN``, ``{action}`` -> ``cNNN``,
                    ``{window_action}`` -> the window's action ("" for the whole video); a reference
                    gives its referent's id (real relTime record LSKA2-2205: ``v029-c063``).
    windows:        window kinds it is generated with; empty without a ``{window}``.
    references:     ``((slot, allowed reference kinds), ...)`` in slot order.
    retired:        actExists, which AGQA 2.0 removed; generation skips it by default.
    slots:          the frames' placeholders in order of first appearance in ``frames[0]``.
    frames:         question frames; the position is the frame variant index.
    validity:       a name of ``agqa/validity.RULES``; evidence: of ``agqa/grounding_text.EVIDENCE``.
    reference_rule: reference rules (agqa/indirect.reference_rule) beyond the plain ones:
                    "touching" (objRelExists, §b.1), "and_xor" (that, and the own-relation clause
                    under ``Semantics.and_xor_reference_relation_check``), or "".
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

RETIRED: frozenset[str] = frozenset({"actExists"})  # AGQA 2.0 removed it (semantics §b.2)

# name: (program, global_, family, semantic, structural, base_steps, table14_steps, answer_space, local_format,
#        windows, {slot: reference kinds} (object/action/window slots; relations are always direct),
#        unbalanced K, balanced K, slots in canonical order, validity rule (agqa/validity.RULES),
#        evidence category (agqa/grounding_text.EVIDENCE))
_ROWS: dict[str, tuple] = {
    "objExists": ("objExists", (EXISTS,), "exists", "object", "verify", 1, 1, "yes-no", "{object}", _ALL_WINDOWS,
        {"object": _DIRECT}, 2316.0, 99.0, ("object", "window"), "obj_exists", "exists-object"),
    "objRelExists": ("objRelExists", (EXISTS, OBJ_REL), "exists", "relation", "verify", 1, 1, "yes-no",
        "{relation}-{object}", _ALL_WINDOWS, {"object": _ANY_OBJECT}, 14297.9, 98.8, ("relation", "object", "window"),
        "obj_rel_exists", "object-relation"),
    "relExists": ("relExists", (EXISTS,), "exists", "relation", "verify", 1, 1, "yes-no", "{relation}", _ALL_WINDOWS,
        {}, 20465.7, 97.6, ("relation", "window"), "rel_exists", "relation-any"),
    "actExists": ("actExists", (EXISTS,), "exists", "action", "verify", 1, 1, "yes-no", "{action}", _ALL_WINDOWS,
        {"action": _DIRECT}, 66541.1, 98.6, ("action", "window"), "act_exists", "action-exists"),
    "andObjRelExists": ("andObjRelExists", (EXISTS, OBJ_REL), "exists", "relation", "logic", 3, 3, "yes-no",
        "and-{relation}-{object}-{object2}", _ALL_WINDOWS, {"object": _ANY_OBJECT, "object2": _ANY_OBJECT}, 26010.4,
        93.4, ("relation", "object", "object2", "window"), "and_xor", "object-relation"),
    "xorObjRelExists": ("xorObjRelExists", (EXISTS, OBJ_REL), "exists", "relation", "logic", 3, 3, "yes-no",
        "xor-{relation}-{object}-{object2}", _ALL_WINDOWS, {"object": _ANY_OBJECT, "object2": _ANY_OBJECT}, 26010.4,
        97.6, ("relation", "object", "object2", "window"), "and_xor", "object-relation"),
    "objWhatGeneral": ("objWhatGeneral", (), "what", "object", "query", 1, 1, "object", "object", _ALL_WINDOWS, {},
        34.2, 31.2, ("window",), "obj_what_general", "nothing"),
    "objWhat": ("objWhat", (OBJ_REL,), "what", "object", "query", 2, 2, "object", "{relation}", _ALL_WINDOWS, {},
        1796.6, 1574.2, ("relation", "window"), "obj_what", "relation-any"),
    "objWhatChoose": ("objWhatChoose", (OBJ_REL,), "what", "object", "choose", 3, 3, "{relation}-{object}-{object2}",
        "{relation}-{object}-{object2}", _ALL_WINDOWS, {"object": ("direct", "last"), "object2": ("direct", "last")},
        4254.1, 194.3, ("relation", "window", "object", "object2"), "choose", "object-relation"),
    "actWhatAfterAll": ("actWhatAfterAll", (SEQUENCING, RECOGNITION), "what", "action", "query", 1, 1, "action",
        "{window_action}", ("video", "after"), {}, 4.1, 4.0, ("window",), "act_answer_not_window_action", "nothing"),
    "actWhatBefore": ("actWhatBefore", (SEQUENCING, RECOGNITION), "what", "action", "query", 1, 1, "action",
        "{window_action}", ("before",), {}, 1.4, 1.4, ("window",), "act_answer_not_window_action", "nothing"),
    "objFirst": ("objFirst", (SUPERLATIVE, OBJ_REL), "first", "object", "query", 2, 2, "object", "{relation}",
        _FIRST_WINDOWS, {}, 146.2, 136.9, ("relation", "window"), "episode", "stretch"),
    "objLast": ("objLast", (SUPERLATIVE, OBJ_REL), "last", "object", "query", 2, 2, "object", "{relation}",
        _LAST_WINDOWS, {}, 246.5, 223.9, ("relation", "window"), "episode", "stretch"),
    "objFirstChoose": ("objFirstChoose", (SUPERLATIVE, OBJ_REL), "first", "object", "choose", 3, 3,
        "{relation}-{object}-{object2}", "{relation}-{object}-{object2}", _FIRST_WINDOWS,
        {"object": ("direct", "last"), "object2": ("direct", "last")}, 992.5, 197.8,
        ("relation", "window", "object", "object2"), "choose", "choose"),
    "objLastChoose": ("objLastChoose", (SUPERLATIVE, OBJ_REL), "last", "object", "choose", 3, 3,
        "{relation}-{object}-{object2}", "{relation}-{object}-{object2}", _LAST_WINDOWS,
        {"object": ("direct", "first"), "object2": ("direct", "first")}, 929.8, 196.2,
        ("relation", "window", "object", "object2"), "choose", "choose"),
    "objFirstVerify": ("objFirstVerify", (SUPERLATIVE, OBJ_REL), "first", "object", "verify", 3, 3, "yes-no",
        "{relation}-{object}", _FIRST_WINDOWS, {"object": ("direct", "last")}, 1213.4, 99.0,
        ("relation", "object", "window"), "episode_verify", "stretch"),
    "objLastVerify": ("objLastVerify", (SUPERLATIVE, OBJ_REL), "last", "object", "verify", 3, 3, "yes-no",
        "{relation}-{object}", _LAST_WINDOWS, {"object": ("direct", "first")}, 5339.0, 98.8,
        ("relation", "object", "window"), "episode_verify", "stretch"),
    "actFirst": ("actFirst", (SUPERLATIVE, RECOGNITION), "first", "action", "query", 1, 1, "action",
        "{window_action}", ("video", "after"), {}, 5.3, 5.0, ("window",), "act_first", "nothing"),
    # semantics §b.1: actLast's local is the constant "action", unlike actFirst's window action
    "actLast": ("actLast", (SUPERLATIVE, RECOGNITION), "last", "action", "query", 1, 1, "action", "action",
        ("video", "before"), {}, 1.3, 1.2, ("window",), "act_last", "nothing"),
    "actLengthLongerCompare": ("actLengthLongerChoose", (DURATION,), "length", "action", "compare", 5, 5,
        "longer-{action}-{action2}", "longer-{action}-{action2}", (), {"action": _DIRECT, "action2": _DIRECT}, 39.3,
        12.6, ("action", "action2"), "length", "actions"),
    "actLengthShorterCompare": ("actLengthShorterChoose", (DURATION,), "length", "action", "compare", 5, 5,
        "shorter-{action}-{action2}", "shorter-{action}-{action2}", (), {"action": _DIRECT, "action2": _DIRECT}, 39.3,
        12.6, ("action", "action2"), "length", "actions"),
    "actLengthLongerVerify": ("actLengthLongerVerify", (DURATION,), "length", "action", "compare", 5, 5, "yes-no",
        "longer-{action}-{action2}", (), {"action": _DIRECT, "action2": _DIRECT}, 39.3, 12.6, ("action", "action2"),
        "length", "actions"),
    "actLengthShorterVerify": ("actLengthShorterVerify", (DURATION,), "length", "action", "compare", 5, 5, "yes-no",
        "shorter-{action}-{action2}", (), {"action": _DIRECT, "action2": _DIRECT}, 39.3, 12.6, ("action", "action2"),
        "length", "actions"),
    "actLongest": ("actLongest", (SUPERLATIVE, DURATION), "length", "action", "query", 2, 1, "action", "longest", (),
        {}, 2.3, 2.3, (), "superlative", "nothing"),
    "actShortest": ("actShortest", (SUPERLATIVE, DURATION), "length", "action", "query", 2, 1, "action", "shortest",
        (), {}, 0.5, 0.5, (), "superlative", "nothing"),
    "actTime": ("actTime", (SEQUENCING,), "time", "action", "compare", 5, 5, "before-after", "{action}-{action2}", (),
        {"action": _ACTION_REF, "action2": _ACTION_REF}, 921.9, 315.0, ("action", "action2"), "act_time", "actions"),
    "relTime": ("relTime", (REL_ACT, SEQUENCING), "time", "relation", "compare", 5, 5, "before-after",
        "{relation}-{action}", (), {"action": _ACTION_REF}, 391.8, 206.1, ("relation", "action"), "rel_time",
        "side-relation"),
    "objTime": ("objTime", (OBJ_ACT, SEQUENCING), "time", "object", "compare", 5, 5, "before-after",
        "{object}-{action}", (), {"object": _ANY_OBJECT, "action": _ACTION_REF}, 6.4, 0.5, ("object", "action"),
        "obj_time", "side-object"),
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
         local_format, windows, refs, unbalanced_k, balanced_k, slots, validity, evidence) = row
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
            validity=validity, evidence=evidence,
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
