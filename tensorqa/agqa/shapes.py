"""The program skeleton of each AGQA template, in AGQA's own program syntax with typed slots.

``PROGRAM_SHAPES[template]`` is the program AGQA prints for that template, with its arguments
replaced by slots (``tensorqa.agqa.program.parse_program`` reads them; ``Node.substitute`` fills them):

* ``<object>``, ``<object2>``: an object word (``blanket``) or an object reference, e.g. the first
  object held: ``Query(class, OnlyItem(IterateUntil(forward, video, Exists(holding, Filter(frame,
  [relations])), Filter(frame, [relations, holding, objects]))))``;
* ``<relation>``: a relation word (``holding``, ``on the side of``, verb relations ``walking``);
* ``<action>``, ``<action2>``: an action phrase (``holding a pillow``) or an indirect-object action
  ``ToAction(<verb>, <object reference>)``;
* ``<window>``: the optional localization, one of (``WINDOW_FORMS``)
  ``video`` | ``Localize(before, <action>)`` | ``Localize(after, <action>)`` |
  ``Localize(while, <action>)`` | ``Localize(between, [<action>, <action2>])``.

A slot name that occurs twice (``<relation>`` in the and/xor programs, ``<action>`` in the length
verify programs) takes one value.

Where the shapes come from:

* the 4 real records of AGQA 2.0's released ``test_balanced_example.json`` (objExists, and
  an indirect relTime), the real programs quoted in ``docs/reference/agqa.md`` §2.4 (objLastChoose,
  actLongest), and the program strings of AGQA's public question generator, which also agree with
  third-party AGQA 2.0 program parsers (STAIR) for every form below;
* the and/xor programs write the singular ``relation`` in their filters
  (``Filter(frame, [relation, holding, objects])``): that is how AGQA prints them;
* objWhatChoose is printed as a ``Choose`` over the one-object query
  ``Choose(<object>, <object2>, Query(class, OnlyItem(Iterate(...))))``, not with ``IterateUntil``;
  its answer rule is still the first-keyframe rule of docs/reference/agqa_semantics.md §b.1 (``engine/scalar/``);
* **between**: AGQA prints the two actions as a list, ``Localize(between, [X, Y])`` (the form that
  AGQA 2.0 program parsers consume). The three-argument form ``Localize(between, X, Y)`` is also
  parsed and executed (it round-trips as written), but generated programs use the list form;
* the length templates are named as AGQA's generator names them (``actLengthLongerChoose``...);
  the paper's Table 14 calls the Choose pair ``...Compare`` (the catalogue's alias);
* actExists was retired in AGQA 2.0 (docs/reference/agqa_semantics.md §b.2); its shape is kept so that all 28
  programs of the paper have one (``TemplateSpec.retired`` in ``agqa/templates``).

``SHAPES`` holds, per shape, what the engine needs beside the program: its grid evaluator, its
scan direction and which length wins (the template's other facts are in ``agqa/templates``).
"""

from __future__ import annotations

from dataclasses import dataclass

_OBJ_REL = "Filter(frame, [relations, <relation>, objects])"
_OBJ_REL_SINGULAR = "Filter(frame, [relation, <relation>, objects])"
_STRETCH = "Exists(<relation>, Filter(frame, [relations])), " + _OBJ_REL
_CHOOSE_XOR = (
    "XOR(Exists(<object>, " + _OBJ_REL + "), Exists(<object2>, " + _OBJ_REL + "))"
)
_LENGTH = "Subtract(Query(end, action), Query(start, action))"
_PAIR = "[Filter(video, [actions, <action>]), Filter(video, [actions, <action2>])]"

PROGRAM_SHAPES: dict[str, str] = {
    # -- exists / logic ---------------------------------------------------------------------
    "objExists": "Exists(<object>, Iterate(<window>, Filter(frame, [objects])))",
    "objRelExists": "Exists(<object>, Iterate(<window>, " + _OBJ_REL + "))",
    "relExists": "Exists(<relation>, Iterate(<window>, Filter(frame, [relations])))",
    "actExists": "Exists(<action>, Iterate(<window>, Filter(frame, [actions])))",
    "andObjRelExists": (
        "AND(Exists(<object>, Iterate(<window>, " + _OBJ_REL_SINGULAR + ")), "
        "Exists(<object2>, Iterate(<window>, " + _OBJ_REL_SINGULAR + ")))"
    ),
    "xorObjRelExists": (
        "XOR(Exists(<object>, Iterate(<window>, " + _OBJ_REL_SINGULAR + ")), "
        "Exists(<object2>, Iterate(<window>, " + _OBJ_REL_SINGULAR + ")))"
    ),
    # -- what ---------------------------------------------------------------------------------
    "objWhatGeneral": "Query(class, OnlyItem(Iterate(<window>, Filter(frame, [objects]))))",
    "objWhat": "Query(class, OnlyItem(Iterate(<window>, " + _OBJ_REL + ")))",
    "objWhatChoose": (
        "Choose(<object>, <object2>, Query(class, OnlyItem(Iterate(<window>, " + _OBJ_REL + "))))"
    ),
    "actWhatAfterAll": "Query(class, OnlyItem(Iterate(<window>, Filter(frame, [actions]))))",
    "actWhatBefore": "Query(class, OnlyItem(Iterate(<window>, Filter(frame, [actions]))))",
    # -- first ----------------------------------------------------------------------------------
    "objFirst": "Query(class, OnlyItem(IterateUntil(forward, <window>, " + _STRETCH + ")))",
    "objFirstChoose": (
        "Choose(<object>, <object2>, IterateUntil(forward, <window>, " + _CHOOSE_XOR + ", " + _OBJ_REL + "))"
    ),
    "objFirstVerify": "Equals(<object>, OnlyItem(IterateUntil(forward, <window>, " + _STRETCH + ")))",
    "actFirst": (
        "Query(class, OnlyItem(IterateUntil(forward, <window>, HasItem(Filter(frame, [actions])), "
        "Filter(frame, [actions]))))"
    ),
    # -- last -----------------------------------------------------------------------------------
    "objLast": "Query(class, OnlyItem(IterateUntil(backward, <window>, " + _STRETCH + ")))",
    "objLastChoose": (
        "Choose(<object>, <object2>, IterateUntil(backward, <window>, " + _CHOOSE_XOR + ", " + _OBJ_REL + "))"
    ),
    "objLastVerify": "Equals(<object>, OnlyItem(IterateUntil(backward, <window>, " + _STRETCH + ")))",
    "actLast": (
        "Query(class, OnlyItem(IterateUntil(backward, <window>, HasItem(Filter(frame, [actions])), "
        "Filter(frame, [actions]))))"
    ),
    # -- length ---------------------------------------------------------------------------------
    "actLengthLongerChoose": "Superlative(max, " + _PAIR + ", " + _LENGTH + ")",
    "actLengthShorterChoose": "Superlative(min, " + _PAIR + ", " + _LENGTH + ")",
    "actLengthLongerVerify": "Equals(<action>, Superlative(max, " + _PAIR + ", " + _LENGTH + "))",
    "actLengthShorterVerify": "Equals(<action>, Superlative(min, " + _PAIR + ", " + _LENGTH + "))",
    "actLongest": "Superlative(max, Filter(video, [actions]), " + _LENGTH + ")",
    "actShortest": "Superlative(min, Filter(video, [actions]), " + _LENGTH + ")",
    # -- time (compare windows, docs/reference/agqa_semantics.md a.2) ------------------------------------------
    "actTime": (
        "Compare([before, after], Exists(<action>, Iterate(Localize(temporal tag, <action2>), "
        "Filter(frame, [actions]))))"
    ),
    "relTime": (
        "Compare([before, after], Exists(<relation>, Iterate(Localize(temporal tag, <action>), "
        "Filter(frame, [relations]))))"
    ),
    "objTime": (
        "Compare([before, after], Exists(<object>, Iterate(Localize(temporal tag, <action>), "
        "Filter(frame, [objects]))))"
    ),
}

# What a ``<window>`` slot is filled with, per time kind ("video" = the whole video).
WINDOW_FORMS: dict[str, str] = {
    "video": "video",
    "before": "Localize(before, <action>)",
    "after": "Localize(after, <action>)",
    "while": "Localize(while, <action>)",
    "between": "Localize(between, [<action>, <action2>])",
}



@dataclass(frozen=True)
class ShapeSpec:
    """What the engine knows of one program shape (template programs are keyed by these names).

    program:   the skeleton text (``PROGRAM_SHAPES``).
    evaluator: the grid evaluator that answers it (``agqa/grid/evaluators.py``' table). actWhatAfterAll and
               actWhatBefore print one program and share an evaluator (the window's word picks the rule).
    forward:   for first / last shapes, whether the scan runs forward (first) or backward (last).
    longer:    for the length shapes, whether the longer (max) or the shorter (min) wins.
    pair:      the shape has a two-object slot (``<object>``, ``<object2>``).
    """

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
