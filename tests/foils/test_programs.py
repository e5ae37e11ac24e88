"""The foils' own scalar forms (Count, Order, Extreme) and the AGQA-syntax ones on hand-worked videos."""

from __future__ import annotations

from helpers import make_scene
from tensorqa import vocab
from tensorqa.foils import programs as P
from tensorqa.foils.programs import Text, evaluate, holds

FRAMES = [(10, 1.0), (20, 2.0), (30, 3.0), (40, 4.0), (50, 5.0), (60, 6.0)]


def scene():
    # holding a pillow 0.5-2.5 s (frames 10, 20) and again 4.5-5.5 s (frame 50);
    # opening a door 3.0-3.5 s (frame 30); sitting in a chair 5.8-6.2 s (frame 60);
    # an instance 6.5-7.0 s covers no keyframe and is not in the graph
    return make_scene(
        "hand", FRAMES,
        relations=[(0, "pillow", "holding"), (1, "pillow", "holding"), (2, "door", "touching"),
                   (3, "chair", "infrontof"), (5, "chair", "sittingon")],
        actions=[("holding a pillow", 0.5, 2.5), ("opening a door", 3.0, 3.5), ("holding a pillow", 4.5, 5.5),
                 ("sitting in a chair", 5.8, 6.2), ("closing a door", 6.5, 7.0)],
    )


def test_counts():
    s, v = scene(), vocab()
    # interacted with (contact relations other than "not contacting"): pillow, door, chair -> 3
    # (the chair's "in front of" at frame 40 is spatial, but "sitting on" at frame 60 is contact)
    assert evaluate(P.COUNT_OBJECTS, s) == "3"
    assert evaluate(P.count_times(v.action_index("holding a pillow")), s) == "2"
    assert evaluate(P.count_times(v.action_index("closing a door")), s) == "0"  # covers no keyframe
    assert holds(Text(P.count_times(v.action_index("holding a pillow")), "several"), s) is True
    assert holds(Text(P.count_times(v.action_index("opening a door")), "several"), s) is False
    assert holds(Text(P.count_times(v.action_index("opening a door")), "1"), s) is True


def test_order_first_last():
    s, v = scene(), vocab()
    door, chair, pillow = (v.action_index(x) for x in ("opening a door", "sitting in a chair", "holding a pillow"))
    assert evaluate(P.order(door, chair), s) == "before"  # 3.5 < 5.8
    assert evaluate(P.order(chair, door), s) == "after"
    assert evaluate(P.order(pillow, door), s) is None  # pillow at 0.5-2.5 and 4.5-5.5: on both sides
    assert evaluate(P.extreme("first"), s) == "holding a pillow"  # starts at 0.5
    assert evaluate(P.extreme("last"), s) == "sitting in a chair"  # ends at 6.2; 6.5-7.0 is not in the graph
    assert holds(Text(P.extreme("last"), "holding a pillow"), s) is False


def test_agqa_forms_go_to_the_scalar_executor():
    s, v = scene(), vocab()
    pillow, door, chair = (v.object_index(x) for x in ("pillow", "door", "chair"))
    assert evaluate(P.exists_object(pillow), s) == "yes"
    # while the first "opening a door" (frame 30): the door is touched, the pillow is not
    assert evaluate(P.exists_object(door, v.action_index("opening a door")), s) == "yes"
    assert evaluate(P.exists_object(pillow, v.action_index("opening a door")), s) == "no"
    assert evaluate(P.exists_relation(chair, v.relation_index("infrontof")), s) == "yes"
    assert evaluate(P.exists_relation(chair, v.relation_index("behind")), s) == "no"
    assert evaluate(P.exists_action(v.action_index("opening a door")), s) == "yes"
    assert evaluate(P.exists_action(v.action_index("closing a door")), s) == "no"
