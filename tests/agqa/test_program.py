"""AGQA program trees: parse / print round trips on real programs and on every template shape,
slot filling, and error messages with positions."""


import pytest

from tensorqa.errors import TensorQAError
from tensorqa.agqa.program import Call, Items, Slot, Word, localize, parse_program, slots, verb_index, word_kinds
from tensorqa.agqa.shapes import PROGRAM_SHAPES

from tensorqa.scenes.vocab import vocab


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
