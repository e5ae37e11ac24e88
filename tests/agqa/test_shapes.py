"""``agqa.shapes``: the 28 program skeletons against the paper's template list, the catalogue's windows
and AGQA's released programs (filled with a record's words, a skeleton gives its program back)."""

import pytest

from tensorqa.agqa.program import parse_program, slots
from tensorqa.agqa.shapes import PROGRAM_SHAPES, SHAPES, WINDOW_FORMS
from tensorqa.agqa.templates import TEMPLATES

TEMPLATE_WINDOWS = {spec.program: spec.windows for spec in TEMPLATES.values()}  # the catalogue's windows


def test_shapes_cover_the_28_templates():
    paper = {"objExists", "objRelExists", "relExists", "actExists", "andObjRelExists", "xorObjRelExists",
             "objWhatGeneral", "objWhat", "objWhatChoose", "actWhatAfterAll", "actWhatBefore", "objFirst",
             "objLast", "objFirstChoose", "objLastChoose", "objFirstVerify", "objLastVerify", "actFirst",
             "actLast", "actLengthLongerChoose", "actLengthShorterChoose", "actLengthLongerVerify",
             "actLengthShorterVerify", "actLongest", "actShortest", "actTime", "relTime", "objTime"}
    assert set(PROGRAM_SHAPES) == paper
    assert {spec.program for spec in TEMPLATES.values() if spec.retired} == {"actExists"}
    assert all(SHAPES[name].program == text for name, text in PROGRAM_SHAPES.items())
    for name, shape in PROGRAM_SHAPES.items():
        tree = parse_program(shape)
        assert str(tree) == shape, name
        has_window = any(s.name == "window" for s in slots(tree))
        assert has_window == bool(TEMPLATE_WINDOWS[name]), name


def test_shapes_match_the_real_programs(real_records):
    # Filling the objExists / relTime shapes with the real records' words gives their programs back.
    records = real_records
    objexists = parse_program(PROGRAM_SHAPES["objExists"])
    assert str(objexists.substitute({"object": "blanket", "window": "Localize(while, holding a pillow)"})) \
        == records["YSKX3-8"]["program"]
    assert str(objexists.substitute({"object": "blanket", "window": "video"})) == records["YSKX3-9"]["program"]
    first_on_side = ("Query(class, OnlyItem(IterateUntil(forward, video, Exists(on the side of, Filter(frame, "
                     "[relations])), Filter(frame, [relations, on the side of, objects]))))")
    reltime = parse_program(PROGRAM_SHAPES["relTime"]).substitute(
        {"<relation>": "walking", "<action>": f"ToAction(taking, {first_on_side})"})
    assert str(reltime) == records["LSKA2-2205"]["program"]
    # the objFirst shape filled over the whole video is exactly the reference used inside it
    objfirst = parse_program(PROGRAM_SHAPES["objFirst"]).substitute({"relation": "on the side of", "window": "video"})
    assert str(objfirst) == first_on_side


WORDS = {"object": "cup", "object2": "phone", "relation": "holding", "action": "holding a pillow",
         "action2": "tidying up a blanket"}


@pytest.mark.parametrize("name", sorted(PROGRAM_SHAPES))
def test_every_shape_filled_with_real_words_round_trips(name):
    skeleton = parse_program(PROGRAM_SHAPES[name])
    windows = [WINDOW_FORMS[k] for k in TEMPLATE_WINDOWS[name]] or [None]
    for window in windows:
        values = dict(WORDS)
        if window is not None:
            values["window"] = parse_program(window).substitute(WORDS)
        filled = skeleton.substitute(values)
        assert slots(filled) == []
        text = str(filled)
        assert "<" not in text
        assert str(parse_program(text)) == text
        assert parse_program(text) == filled
