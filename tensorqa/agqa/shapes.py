"""The program skeleton of each AGQA template, in AGQA's program syntax with typed slots.

``PROGRAM_SHAPES[template]`` is the program AGQA prints with its arguments replaced by slots
(``<object>``, ``<relation>``, ``<action>``, ``<window>``: ``WINDOW_FORMS``; a slot named twice takes
one value), as AGQA 2.0's released records, docs/reference/agqa.md §2.4 and AGQA's generator print
them (and/xor filters print the singular ``relation``, objWhatChoose is a ``Choose`` over a one-object
query, the length templates keep the generator's names). ``SHAPES`` adds what the grid needs."""

from __future__ import annotations

from dataclasses import dataclass

from tensorqa.engine.windows import WINDOW_KINDS

_OBJ_REL = "Filter(frame, [relations, <relation>, objects])"
_OBJ_REL_SINGULAR = "Filter(frame, [relation, <relation>, objects])"
_STRETCH = "Exists(<relation>, Filter(frame, [relations])), " + _OBJ_REL
_CHOOSE_XOR = "XOR(Exists(<object>, " + _OBJ_REL + "), Exists(<object2>, " + _OBJ_REL + "))"
_LENGTH = "Subtract(Query(end, action), Query(start, action))"
_PAIR = "[Filter(video, [actions, <action>]), Filter(video, [actions, <action2>])]"

_EXISTS_PAIR = ("{}(Exists(<object>, Iterate(<window>, " + _OBJ_REL_SINGULAR + ")), "
                "Exists(<object2>, Iterate(<window>, " + _OBJ_REL_SINGULAR + ")))")
_ACT_EDGE = ("Query(class, OnlyItem(IterateUntil({}, <window>, HasItem(Filter(frame, [actions])), "
             "Filter(frame, [actions]))))")
_CHOOSE_EDGE = "Choose(<object>, <object2>, IterateUntil({}, <window>, " + _CHOOSE_XOR + ", " + _OBJ_REL + "))"
_COMPARE = "Compare([before, after], Exists(<{}>, Iterate(Localize(temporal tag, <{}>), Filter(frame, [{}]))))"

PROGRAM_SHAPES: dict[str, str] = {
    # -- exists / logic ---------------------------------------------------------------------
    "objExists": "Exists(<object>, Iterate(<window>, Filter(frame, [objects])))",
    "objRelExists": "Exists(<object>, Iterate(<window>, " + _OBJ_REL + "))",
    "relExists": "Exists(<relation>, Iterate(<window>, Filter(frame, [relations])))",
    "actExists": "Exists(<action>, Iterate(<window>, Filter(frame, [actions])))",
    "andObjRelExists": _EXISTS_PAIR.format("AND"),
    "xorObjRelExists": _EXISTS_PAIR.format("XOR"),
    # -- what ---------------------------------------------------------------------------------
    "objWhatGeneral": "Query(class, OnlyItem(Iterate(<window>, Filter(frame, [objects]))))",
    "objWhat": "Query(class, OnlyItem(Iterate(<window>, " + _OBJ_REL + ")))",
    "objWhatChoose": "Choose(<object>, <object2>, Query(class, OnlyItem(Iterate(<window>, " + _OBJ_REL + "))))",
    "actWhatAfterAll": "Query(class, OnlyItem(Iterate(<window>, Filter(frame, [actions]))))",
    "actWhatBefore": "Query(class, OnlyItem(Iterate(<window>, Filter(frame, [actions]))))",
    # -- first ----------------------------------------------------------------------------------
    "objFirst": "Query(class, OnlyItem(IterateUntil(forward, <window>, " + _STRETCH + ")))",
    "objFirstChoose": _CHOOSE_EDGE.format("forward"),
    "objFirstVerify": "Equals(<object>, OnlyItem(IterateUntil(forward, <window>, " + _STRETCH + ")))",
    "actFirst": _ACT_EDGE.format("forward"),
    # -- last -----------------------------------------------------------------------------------
    "objLast": "Query(class, OnlyItem(IterateUntil(backward, <window>, " + _STRETCH + ")))",
    "objLastChoose": _CHOOSE_EDGE.format("backward"),
    "objLastVerify": "Equals(<object>, OnlyItem(IterateUntil(backward, <window>, " + _STRETCH + ")))",
    "actLast": _ACT_EDGE.format("backward"),
    # -- length ---------------------------------------------------------------------------------
    "actLengthLongerChoose": "Superlative(max, " + _PAIR + ", " + _LENGTH + ")",
    "actLengthShorterChoose": "Superlative(min, " + _PAIR + ", " + _LENGTH + ")",
    "actLengthLongerVerify": "Equals(<action>, Superlative(max, " + _PAIR + ", " + _LENGTH + "))",
    "actLengthShorterVerify": "Equals(<action>, Superlative(min, " + _PAIR + ", " + _LENGTH + "))",
    "actLongest": "Superlative(max, Filter(video, [actions]), " + _LENGTH + ")",
    "actShortest": "Superlative(min, Filter(video, [actions]), " + _LENGTH + ")",
    # -- time (compare windows, docs/reference/agqa_semantics.md a.2) ------------------------------------------
    "actTime": _COMPARE.format("action", "action2", "actions"),
    "relTime": _COMPARE.format("relation", "action", "relations"),
    "objTime": _COMPARE.format("object", "action", "objects"),
}

# What a ``<window>`` slot is filled with, per time kind ("video" = the whole video).
WINDOW_FORMS: dict[str, str] = {
    k: "video" if k == "video" else f"Localize({k}, {'[<action>, <action2>]' if k == 'between' else '<action>'})"
    for k in WINDOW_KINDS
}


@dataclass(frozen=True)
class ShapeSpec:
    """What the grid knows of one program shape: its skeleton, its evaluator
    (``agqa/grid/evaluators.py``), the scan direction of first / last shapes (``forward``), which
    length wins (``longer``) and whether it has a two-object slot (``pair``)."""

    name: str
    program: str
    evaluator: str
    forward: bool | None = None
    longer: bool | None = None
    pair: bool = False


_F, _B = True, False
_SHAPE_ROWS: dict[str, tuple] = {  # name: (evaluator, forward, longer, pair)
    "objExists": ("obj_exists", None, None, False),
    "objRelExists": ("obj_rel_exists", None, None, False),
    "relExists": ("rel_exists", None, None, False),
    "actExists": ("act_exists", None, None, False),
    "andObjRelExists": ("and_or_xor", None, None, True),
    "xorObjRelExists": ("and_or_xor", None, None, True),
    "objWhatGeneral": ("obj_what_general", None, None, False),
    "objWhat": ("obj_what", None, None, False),
    "objWhatChoose": ("choose", _F, None, True),  # answered with the first-keyframe rule
    "actWhatAfterAll": ("act_what", None, None, False),
    "actWhatBefore": ("act_what", None, None, False),
    "objFirst": ("episode", _F, None, False),
    "objFirstChoose": ("choose", _F, None, True),
    "objFirstVerify": ("episode_verify", _F, None, False),
    "actFirst": ("act_edge", _F, None, False),
    "objLast": ("episode", _B, None, False),
    "objLastChoose": ("choose", _B, None, True),
    "objLastVerify": ("episode_verify", _B, None, False),
    "actLast": ("act_edge", _B, None, False),
    "actLengthLongerChoose": ("length_choose", None, True, False),
    "actLengthShorterChoose": ("length_choose", None, False, False),
    "actLengthLongerVerify": ("length_verify", None, True, False),
    "actLengthShorterVerify": ("length_verify", None, False, False),
    "actLongest": ("superlative", None, True, False),
    "actShortest": ("superlative", None, False, False),
    "actTime": ("act_time", None, None, False),
    "relTime": ("rel_time", None, None, False),
    "objTime": ("obj_time", None, None, False),
}
SHAPES: dict[str, ShapeSpec] = {
    name: ShapeSpec(name, PROGRAM_SHAPES[name], *row) for name, row in _SHAPE_ROWS.items()
}
assert len(PROGRAM_SHAPES) == 28 and set(SHAPES) == set(PROGRAM_SHAPES)
