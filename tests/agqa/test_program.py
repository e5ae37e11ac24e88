"""AGQA program trees: parse / print round trips on real programs and on every template shape,
slot filling, and error messages with positions."""

import json

import pytest

from tensorqa.errors import TensorQAError
from tensorqa.agqa.program import Call, Items, Slot, Word, localize, parse_program, slots, verb_index, word_kinds
from tensorqa.agqa.templates import TEMPLATES
from tensorqa.agqa.shapes import PROGRAM_SHAPES, SHAPES, WINDOW_FORMS

TEMPLATE_WINDOWS = {spec.program: spec.windows for spec in TEMPLATES.values()}  # the catalogue's windows
from tensorqa.scenes.vocab import vocab


@pytest.fixture(scope="module")
def real_records(shared_data) -> dict:
    text = (shared_data / "agqa/test_balanced_example.json").read_text()
    records, _ = json.JSONDecoder().raw_decode(text)  # the file has a stray trailing '}'
    return records


def test_real_programs_round_trip(real_records):
    records = real_records
    assert len(records) == 4
    for record in records.values():
        program = record["program"]
        assert str(parse_program(program)) == program


def test_real_program_tree_structure(real_records):
    # YSKX3-8, parsed by hand: Exists(blanket, Iterate(Localize(while, <phrase>), Filter(frame, [objects])))
    tree = parse_program(real_records["YSKX3-8"]["program"])
    assert tree == Call("Exists", [
        Word("blanket"),
        Call("Iterate", [
            Call("Localize", [Word("while"), Word("holding a pillow")]),
            Call("Filter", [Word("frame"), Items([Word("objects")])]),
        ]),
    ])
    # LSKA2-2205: the keyword with a space and the ToAction indirect-object action
    tree = parse_program(real_records["LSKA2-2205"]["program"])
    localize_node = tree.args[1].args[1].args[0]
    assert localize_node.func == "Localize" and localize_node.args[0] == Word("temporal tag")
    to_action = localize_node.args[1]
    assert to_action.func == "ToAction" and to_action.args[0] == Word("taking")
    assert to_action.args[1].func == "Query" and to_action.args[1].args[0] == Word("class")


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


def test_slots_in_order_once_each():
    tree = parse_program(PROGRAM_SHAPES["objFirstChoose"])
    assert [s.name for s in slots(tree)] == ["object", "object2", "window", "relation"]
    assert [s.kind for s in slots(tree)] == ["object", "object", "window", "relation"]
    assert slots(parse_program(PROGRAM_SHAPES["actLongest"])) == []


def test_substitute_keeps_unfilled_slots_and_accepts_nodes():
    tree = parse_program(PROGRAM_SHAPES["objRelExists"]).substitute({"relation": Word("touching")})
    assert [s.name for s in slots(tree)] == ["object", "window"]
    assert str(tree) == "Exists(<object>, Iterate(<window>, Filter(frame, [relations, touching, objects])))"


def test_between_forms():
    # AGQA's data writes between with a list; the three-argument form also parses and prints back as written
    listed = "Exists(cup, Iterate(Localize(between, [holding a pillow, tidying up a blanket]), Filter(frame, [objects])))"
    three = "Exists(cup, Iterate(Localize(between, holding a pillow, tidying up a blanket), Filter(frame, [objects])))"
    assert str(parse_program(listed)) == listed
    assert str(parse_program(three)) == three
    assert str(localize("between", "holding a pillow", "tidying up a blanket")) == \
        "Localize(between, [holding a pillow, tidying up a blanket])"
    assert str(localize("after", "holding a pillow")) == "Localize(after, holding a pillow)"
    assert localize("video", "ignored") == Word("video")
    with pytest.raises(TensorQAError, match="Localize takes 2 or 3 arguments, got 3 at position 0"):
        parse_program("Localize(before, holding a pillow, tidying up a blanket)")


def test_words_resolve_against_the_vocabulary():
    v = vocab()
    assert word_kinds("temporal tag") == {"keyword"}
    assert word_kinds("blanket") == {"object"}
    assert word_kinds("on the side of") == {"relation"}
    assert word_kinds("holding a pillow") == {"action"}
    assert word_kinds("taking") == {"relation", "verb"}  # verb relation v023 and verb "take"
    assert v.verbs[verb_index("taking")] == "take"
    assert word_kinds("blankt") == frozenset()


@pytest.mark.parametrize("text, message", [
    ("Exsts(blanket, Iterate(video, Filter(frame, [objects])))", "unknown function 'Exsts' at position 0"),
    ("Exists(blanket, Iterate(video, Filtr(frame, [objects])))", "unknown function 'Filtr' at position 31"),
    ("Exists(blankt, Iterate(video, Filter(frame, [objects])))", "unknown word 'blankt' at position 7"),
    ("Exists(blanket, Iterate(video, Filter(frame, [objcts])))", "unknown word 'objcts' at position 46"),
    ("Exists(blanket, Iterate(video, Filter(frame, [objects]))",
     "unbalanced parentheses: '(' at position 6 is never closed"),
    ("Exists(blanket, Iterate(video, Filter(frame, [objects])))))",
     "unbalanced parentheses: unexpected ')' at position 57"),
    ("Exists(blanket, Iterate(video, Filter(frame, [objects)))",
     "unbalanced parentheses: ')' at position 53 does not close '[' at position 45"),
    ("Exists(blanket, Iterate(video, Filter(frame, [objects", "unbalanced parentheses: '[' at position 45 is never closed"),
    ("Exists(blanket)", "Exists takes 2 arguments, got 1 at position 0"),
    ("", "empty program at position 0"),
])
def test_errors_name_the_text_and_position(text, message):
    with pytest.raises(TensorQAError, match="^program: " + message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        parse_program(text)


def test_slot_nodes():
    assert parse_program("<object2>") == Slot("object2")
    assert Slot("object2").kind == "object"
    assert str(Slot("window")) == "<window>"
