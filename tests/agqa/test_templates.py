"""The AGQA template catalogue: Table 14 metadata, frames, reference phrases, real records."""

from __future__ import annotations

import importlib
import re
from importlib import resources

import pytest

from tensorqa import TensorQAError
from tensorqa import vocab
from tensorqa.agqa.templates import (
    ACTION_REFERENCE_FRAMES,
    ACTIVE_TEMPLATES,
    FRAME_SLOTS,
    OBJECT_REFERENCE_FRAMES,
    TEMPLATES,
    WINDOW_FRAMES,
    check_frame,
    template_spec,
)
from tensorqa.agqa.templates.catalogue import GLOBAL_CATEGORIES, LOCAL_SLOTS, REFERENCE_KINDS
from tensorqa.engine.windows import WINDOW_KINDS

# Table 14 of the AGQA paper, row order, as transcribed in docs/reference/agqa.md.
TABLE14_ORDER = [
    "objExists", "objRelExists", "relExists", "actExists", "andObjRelExists", "xorObjRelExists",
    "objWhatGeneral", "objWhat", "objWhatChoose", "actWhatAfterAll", "actWhatBefore",
    "objFirst", "objLast", "objFirstChoose", "objLastChoose", "objFirstVerify", "objLastVerify",
    "actFirst", "actLast", "actLengthLongerCompare", "actLengthShorterCompare",
    "actLengthLongerVerify", "actLengthShorterVerify", "actLongest", "actShortest",
    "actTime", "relTime", "objTime",
]

# Spot-checked rows: (structural, semantic, base steps, unbalanced K, balanced K), read off the
# Table 14 lines of docs/reference/agqa.md ("relationship" is the data's "relation"); steps from semantics §b.1.
TABLE14_ROWS = {
    "objExists": ("verify", "object", 1, 2316.0, 99.0),
    "objRelExists": ("verify", "relation", 1, 14297.9, 98.8),
    "relExists": ("verify", "relation", 1, 20465.7, 97.6),
    "actExists": ("verify", "action", 1, 66541.1, 98.6),
    "andObjRelExists": ("logic", "relation", 3, 26010.4, 93.4),
    "xorObjRelExists": ("logic", "relation", 3, 26010.4, 97.6),
    "objWhatGeneral": ("query", "object", 1, 34.2, 31.2),
    "objWhat": ("query", "object", 2, 1796.6, 1574.2),
    "objWhatChoose": ("choose", "object", 3, 4254.1, 194.3),
    "actWhatBefore": ("query", "action", 1, 1.4, 1.4),
    "objLast": ("query", "object", 2, 246.5, 223.9),
    "objLastVerify": ("verify", "object", 3, 5339.0, 98.8),
    "actLast": ("query", "action", 1, 1.3, 1.2),
    "actLengthShorterCompare": ("compare", "action", 5, 39.3, 12.6),
    "actLengthLongerVerify": ("compare", "action", 5, 39.3, 12.6),
    "actShortest": ("query", "action", 2, 0.5, 0.5),  # Table 14 prints 1 step; §b.1 says 2
    "actTime": ("compare", "action", 5, 921.9, 315.0),
    "relTime": ("compare", "relation", 5, 391.8, 206.1),
    "objTime": ("compare", "object", 5, 6.4, 0.5),
}

# Slots each template's frames must use (the brief and semantics §b.1 slot lists).
EXPECTED_SLOTS = {
    "objExists": {"object", "window"},
    "objRelExists": {"relation", "object", "window"},
    "relExists": {"relation", "window"},
    "actExists": {"action", "window"},
    "andObjRelExists": {"relation", "object", "object2", "window"},
    "xorObjRelExists": {"relation", "object", "object2", "window"},
    "objWhatGeneral": {"window"},
    "objWhat": {"relation", "window"},
    "objWhatChoose": {"relation", "object", "object2", "window"},
    "actWhatAfterAll": {"window"},
    "actWhatBefore": {"window"},
    "objFirst": {"relation", "window"},
    "objLast": {"relation", "window"},
    "objFirstChoose": {"relation", "object", "object2", "window"},
    "objLastChoose": {"relation", "object", "object2", "window"},
    "objFirstVerify": {"relation", "object", "window"},
    "objLastVerify": {"relation", "object", "window"},
    "actFirst": {"window"},
    "actLast": {"window"},
    "actLengthLongerCompare": {"action", "action2"},
    "actLengthShorterCompare": {"action", "action2"},
    "actLengthLongerVerify": {"action", "action2"},
    "actLengthShorterVerify": {"action", "action2"},
    "actLongest": set(),
    "actShortest": set(),
    "actTime": {"action", "action2"},
    "relTime": {"relation", "action"},
    "objTime": {"object", "action"},
}


def _fill(frame: str, **values: str) -> str:
    return frame.format(**values)


# -- metadata ---------------------------------------------------------------------------------
def test_all_28_templates_in_table14_order():
    assert list(TEMPLATES) == TABLE14_ORDER
    assert all(spec.name == name for name, spec in TEMPLATES.items())


def test_table14_rows_spot_checked():
    for name, (structural, semantic, steps, unbalanced, balanced) in TABLE14_ROWS.items():
        spec = TEMPLATES[name]
        assert (spec.structural, spec.semantic, spec.base_steps) == (structural, semantic, steps), name
        assert (spec.table14_unbalanced_k, spec.table14_balanced_k) == (unbalanced, balanced), name
    # The one steps disagreement between the paper and the generator is kept visible.
    assert TEMPLATES["actLongest"].table14_steps == 1 and TEMPLATES["actLongest"].base_steps == 2
    assert all(t.table14_steps == t.base_steps for n, t in TEMPLATES.items() if n not in ("actLongest", "actShortest"))


def test_global_categories():
    # Table 14's reasoning column; relTime/objTime also sequencing (AGQA 2.0); data spellings.
    assert TEMPLATES["objRelExists"].global_ == ("exists", "obj-rel")
    assert TEMPLATES["objWhatGeneral"].global_ == ()
    assert TEMPLATES["actWhatAfterAll"].global_ == ("sequencing", "action-recognition")
    assert TEMPLATES["objFirstVerify"].global_ == ("superlative", "obj-rel")
    assert TEMPLATES["actLongest"].global_ == ("superlative", "duration-comparison")
    assert TEMPLATES["actTime"].global_ == ("sequencing",)
    assert TEMPLATES["relTime"].global_ == ("rel-act", "sequencing")
    assert TEMPLATES["objTime"].global_ == ("obj-act", "sequencing")
    assert all(set(t.global_) <= set(GLOBAL_CATEGORIES) for t in TEMPLATES.values())


def test_families_answer_types_and_spaces():
    families = {}
    for name, spec in TEMPLATES.items():
        families.setdefault(spec.family, []).append(name)
        # README note: query is open answer, everything else binary (choose included).
        assert spec.ans_type == ("open" if spec.structural == "query" else "binary"), name
    # semantics §b.4 internal families
    assert families["exists"] == ["objExists", "objRelExists", "relExists", "actExists", "andObjRelExists", "xorObjRelExists"]
    assert families["what"] == ["objWhatGeneral", "objWhat", "objWhatChoose", "actWhatAfterAll", "actWhatBefore"]
    assert families["first"] == ["objFirst", "objFirstChoose", "objFirstVerify", "actFirst"]
    assert families["last"] == ["objLast", "objLastChoose", "objLastVerify", "actLast"]
    assert len(families["length"]) == 6 and families["time"] == ["actTime", "relTime", "objTime"]
    assert TEMPLATES["objExists"].answer_space == "yes-no"
    assert TEMPLATES["relTime"].answer_space == "before-after"
    assert TEMPLATES["objFirst"].answer_space == "object" and TEMPLATES["actFirst"].answer_space == "action"
    # choose templates are tagged with their own local (§b.4)
    for name in ("objWhatChoose", "objFirstChoose", "objLastChoose", "actLengthLongerCompare"):
        assert TEMPLATES[name].answer_space == TEMPLATES[name].local_format, name


def test_local_formats_only_use_id_placeholders():
    assert TEMPLATES["andObjRelExists"].local_format == "and-{relation}-{object}-{object2}"
    assert TEMPLATES["objWhatGeneral"].local_format == "object"
    assert TEMPLATES["actLast"].local_format == "action"  # §b.1: constant, unlike actFirst
    assert TEMPLATES["actFirst"].local_format == "{window_action}"
    assert TEMPLATES["actShortest"].local_format == "shortest"
    for spec in TEMPLATES.values():
        assert set(re.findall(r"\{(\w+)\}", spec.local_format)) <= set(LOCAL_SLOTS), spec.name


def test_windows_per_template():
    assert TEMPLATES["objFirst"].windows == ("video", "after", "while", "between")  # never before
    assert TEMPLATES["objLastVerify"].windows == ("video", "before", "while", "between")  # never after
    assert TEMPLATES["actWhatAfterAll"].windows == ("video", "after")
    assert TEMPLATES["actWhatBefore"].windows == ("before",)
    assert TEMPLATES["actLast"].windows == ("video", "before")
    assert TEMPLATES["objExists"].windows == WINDOW_KINDS
    for name in ("actTime", "relTime", "objTime", "actLongest", "actLengthLongerVerify"):
        assert TEMPLATES[name].windows == (), name  # compare windows or none
    for spec in TEMPLATES.values():
        assert set(spec.windows) <= set(WINDOW_KINDS)
        assert bool(spec.windows) == spec.has_window, spec.name


def test_reference_kinds_per_slot():
    refs = {name: spec.reference_kinds for name, spec in TEMPLATES.items()}
    assert refs["objRelExists"]["object"] == ("direct", "first", "last", "whole")
    assert refs["objExists"]["object"] == ("direct",)
    assert refs["objWhatChoose"]["object2"] == ("direct", "last")
    assert refs["objFirstVerify"]["object"] == ("direct", "last")
    assert refs["objLastChoose"]["object"] == ("direct", "first")
    assert refs["actTime"]["action2"] == ("direct", "indirect-object")
    assert refs["relTime"]["action"] == ("direct", "indirect-object")
    # §b.3: objTime's action slot takes indirect-object actions, like actTime and relTime
    assert refs["objTime"] == {"object": ("direct", "first", "last", "whole"), "action": ("direct", "indirect-object")}
    assert refs["actLengthLongerCompare"] == {"action": ("direct",), "action2": ("direct",)}
    for name, spec in TEMPLATES.items():
        assert list(spec.reference_kinds) == list(spec.slots), name
        assert all(set(kinds) <= set(REFERENCE_KINDS) for kinds in spec.reference_kinds.values())
        assert spec.reference_kinds.get("relation", ("direct",)) == ("direct",)  # no relation references


def test_retired_act_exists():
    assert TEMPLATES["actExists"].retired
    assert [n for n, t in TEMPLATES.items() if t.retired] == ["actExists"]
    assert "actExists" not in ACTIVE_TEMPLATES and len(ACTIVE_TEMPLATES) == 27


def test_reference_rules_per_template():
    # §b.1: objRelExists' references obey the touching restriction; and/xor add the own-relation
    # clause only under the clean semantics (AGQA's check never fires there); every other template
    # has the plain rules (own relation, no touching restriction)
    from tensorqa.agqa.indirect import reference_rule_for
    from tensorqa.agqa.semantics import AGQA, STRICT

    rules = {name: spec.reference_rule for name, spec in TEMPLATES.items() if spec.reference_rule}
    assert rules == {"objRelExists": "touching", "andObjRelExists": "and_xor", "xorObjRelExists": "and_xor"}
    assert reference_rule_for("objRelExists", AGQA) == {"own_relation": True, "touching": True}
    assert reference_rule_for("xorObjRelExists", AGQA) == {"own_relation": False, "touching": True}
    assert reference_rule_for("andObjRelExists", STRICT) == {"own_relation": True, "touching": True}
    assert reference_rule_for("objFirstVerify", AGQA) == {"own_relation": True, "touching": False}


def test_template_spec_lookup_accepts_both_names():
    assert template_spec("actLengthLongerChoose") is TEMPLATES["actLengthLongerCompare"]
    assert template_spec("objTime") is TEMPLATES["objTime"]
    with pytest.raises(TensorQAError, match="objCount"):
        template_spec("objCount")


def test_programs_name_program_shapes_entries():
    shapes = importlib.import_module("tensorqa.agqa.shapes")
    assert len({t.program for t in TEMPLATES.values()}) == 28
    for spec in TEMPLATES.values():
        shape = shapes.PROGRAM_SHAPES[spec.program]
        # the skeleton's slots are the frames' slots
        assert set(re.findall(r"<(\w+)>", shape)) == set(spec.slots), spec.name
        if hasattr(shapes, "TEMPLATE_WINDOWS"):
            assert shapes.TEMPLATE_WINDOWS[spec.program] == spec.windows, spec.name
    assert set(getattr(shapes, "RETIRED_TEMPLATES", {"actExists"})) == {"actExists"}


# -- frames -----------------------------------------------------------------------------------
def test_frames_are_package_data():
    assert resources.files("tensorqa.agqa.templates").joinpath("frames.tsv").is_file()


def test_frame_counts():
    counts = {name: len(spec.frames) for name, spec in TEMPLATES.items()}
    assert sum(counts.values()) >= 200
    assert min(counts.values()) >= 5, counts


def test_every_frame_uses_exactly_its_slots():
    for name, spec in TEMPLATES.items():
        assert set(spec.slots) == EXPECTED_SLOTS[name], name
        assert tuple(check_frame(spec.frames[0])) == spec.slots, name
        for frame in spec.frames:
            names = check_frame(frame)
            assert set(names) == EXPECTED_SLOTS[name] and len(names) == len(set(names)), frame
            assert set(names) <= set(FRAME_SLOTS) and frame.endswith("?"), frame


def test_no_duplicate_frames():
    frames = [f for spec in TEMPLATES.values() for f in spec.frames]
    assert len(frames) == len(set(frames))
    # whitespace variants would be duplicates to a reader
    assert len({" ".join(f.lower().split()) for f in frames}) == len(frames)


def test_frames_signal_their_answer_type():
    for spec in TEMPLATES.values():
        for frame in spec.frames:
            first_word = frame.split()[0].rstrip(",")
            if spec.structural == "query":
                assert first_word in ("What", "Which"), frame
            elif spec.answer_space == "before-after":
                assert "before or after" in frame, frame
            elif spec.structural == "choose" or spec.name.endswith("Compare"):
                # names both options, joined by "or" ("X or Y") or listed ("Of X and Y, which")
                a, b = ("{object}", "{object2}") if "{object}" in frame else ("{action}", "{action2}")
                assert f"{a} or {b}" in frame or f"{a} and {b}, which" in frame or f"of {a} and {b}" in frame, frame
            else:  # yes / no
                assert first_word not in ("What", "Which", "When", "Who", "How"), frame
                assert spec.answer_space == "yes-no"


SAMPLE_ACTION = max(vocab().action_phrases, key=len)  # "watching a laptop or something on a laptop"


def _fillers():
    """Many filler combinations: every relation, plain and reference objects, windows of every kind."""
    v = vocab()
    reference = OBJECT_REFERENCE_FRAMES["first"][0].format(relation="on the side of")
    indirect = ACTION_REFERENCE_FRAMES["c063"].format(object=reference)
    windows = [w.format(action=SAMPLE_ACTION, action2=indirect) for w in WINDOW_FRAMES.values()]
    for i, relation in enumerate(v.relation_english):
        yield {
            "relation": relation,
            "object": "a blanket" if i % 2 else reference,
            "object2": reference if i % 2 else "the thing they were holding",
            "action": SAMPLE_ACTION if i % 2 else indirect,
            "action2": "holding a pillow" if i % 2 else SAMPLE_ACTION,
            "window": windows[i % len(windows)],
        }


def test_filled_frames_have_no_leftover_braces_or_stray_spaces():
    for values in _fillers():
        for spec in TEMPLATES.values():
            for frame in spec.frames:
                text = _fill(frame, **values)
                assert "{" not in text and "}" not in text, text
                assert "  " not in text and " ?" not in text and " ," not in text and " :" not in text, text
                assert text[0].isupper() and text.endswith("?") and text.count("?") == 1, text


def test_check_frame_rejects_malformed_frames():
    assert check_frame("Were they {relation} {object}{window}?") == ["relation", "object", "window"]
    for bad, why in [
        ("Were they holding {thing}?", "unknown"),
        ("Were they {relation} {object} or {object}?", "more than once"),
        ("Were they {relation} {object}", "end with"),
        ("{object} was held?", "capital"),
        ("Were they holding it {window}?", "window"),
        ("Were they holding {}?", "plain named"),
        ("Were they holding {object!r}?", "plain named"),
        ("Were they holding {object?", "frame"),
    ]:
        with pytest.raises(TensorQAError, match=why):
            check_frame(bad)


# -- reference and window phrases ---------------------------------------------------------------
def test_object_reference_frames():
    assert set(OBJECT_REFERENCE_FRAMES) == {"first", "last", "whole"}
    for kind, frames in OBJECT_REFERENCE_FRAMES.items():
        assert len(frames) >= 3 and len(set(frames)) == len(frames)
        for frame in frames:
            assert re.findall(r"\{(\w+)\}", frame) == ["relation"], frame
            assert frame.startswith("the ")
            assert (kind in frame) == (kind != "whole"), frame  # "first"/"last" said; whole neither
            assert "first" not in frame or kind == "first"
            assert "last" not in frame or kind == "last"


def test_action_reference_frames_swap_only_the_object():
    # hand-worked from the vocabulary's phrases
    assert ACTION_REFERENCE_FRAMES["c063"] == "taking {object} from somewhere"  # "taking food from somewhere"
    assert ACTION_REFERENCE_FRAMES["c076"] == "holding {object}"
    assert ACTION_REFERENCE_FRAMES["c107"] == "holding {object} of something"
    assert ACTION_REFERENCE_FRAMES["c009"] == "putting something on {object}"
    assert ACTION_REFERENCE_FRAMES["c132"] == "watching {object}"  # no article in "watching television"
    assert ACTION_REFERENCE_FRAMES["c054"] == "putting {object} somewhere"  # plural "shoes"
    assert ACTION_REFERENCE_FRAMES["c051"] == "watching {object} or something on {object}"
    for action in ("c139", "c144", "c146", "c087", "c147"):  # no object, or none named in the phrase
        assert action not in ACTION_REFERENCE_FRAMES
    v = vocab()
    for action, frame in ACTION_REFERENCE_FRAMES.items():
        assert v.action_object[v.action_index(action)] >= 0 and "{object}" in frame, action
        assert set(re.findall(r"\{(\w+)\}", frame)) == {"object"}, action
    assert len(ACTION_REFERENCE_FRAMES) > 120


def test_window_frames():
    assert WINDOW_FRAMES == {
        "video": "",
        "before": " before {action}",
        "after": " after {action}",
        "while": " while {action}",
        "between": " between {action} and {action2}",
    }


# -- the real AGQA records ----------------------------------------------------------------------
def test_real_records_are_reproduced_by_frames_and_metadata(real_records):
    records = real_records
    exists, rel_time = TEMPLATES["objExists"], TEMPLATES["relTime"]

    # YSKX3-8: objExists, "while holding a pillow": steps 1 + 2 (a while window), local =
    # answer space + template local (o4 = blanket) + time kind + window action.
    r = records["YSKX3-8"]
    window = WINDOW_FRAMES["while"].format(action="holding a pillow")
    assert r["question"] == _fill(exists.frames[0], object="a blanket", window=window)
    assert (r["semantic"], r["structural"], r["global"]) == (exists.semantic, exists.structural, list(exists.global_))
    assert r["steps"] == exists.base_steps + 2
    assert r["local"] == "-".join([exists.answer_space, exists.local_format.format(object="o4"), "while", "c076"])
    assert r["ans_type"] == exists.ans_type

    # YSKX3-9: the same template over the whole video (empty window, "all" time kind).
    r = records["YSKX3-9"]
    assert r["question"] == _fill(exists.frames[1], object="a blanket", window=WINDOW_FRAMES["video"])
    assert r["steps"] == exists.base_steps
    assert r["local"] == "-".join([exists.answer_space, exists.local_format.format(object="o4"), "all", ""])

    # LSKA2-2205: relTime with an indirect-object action ("taking food from somewhere" with its
    # object replaced by the first-episode reference of "on the side of"): steps 5 + 1.
    r = records["LSKA2-2205"]
    reference = OBJECT_REFERENCE_FRAMES["first"][0].format(relation="on the side of")
    action = ACTION_REFERENCE_FRAMES["c063"].format(object=reference)
    assert r["question"] == _fill(rel_time.frames[0], relation="walking", action=action)
    assert (r["semantic"], r["structural"], r["global"]) == (rel_time.semantic, rel_time.structural, list(rel_time.global_))
    assert r["steps"] == rel_time.base_steps + 1
    assert r["local"] == "-".join([rel_time.answer_space, rel_time.local_format.format(relation="v029", action="c063"), "all", ""])
    assert "indirect-object" in rel_time.reference_kinds["action"]
    assert "first" in OBJECT_REFERENCE_FRAMES
