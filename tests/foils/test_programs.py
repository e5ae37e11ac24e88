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


def test_existence_before_and_after_windows():
    """AGQA's Localize(before|after, <action>), by the engine's scalar executor (its window rule):
    before = keyframes up to the action's first instance's first keyframe (AGQA includes it),
    after = those after the first instance's last keyframe."""
    s, v = scene(), vocab()
    pillow, door, chair = (v.object_index(x) for x in ("pillow", "door", "chair"))
    opening, sitting = v.action_index("opening a door"), v.action_index("sitting in a chair")
    # before opening a door (frame 30): frames 10, 20, 30; the pillow is held at 10 and 20
    assert evaluate(P.exists_object(pillow, opening, "before"), s) == "yes"
    assert evaluate(P.exists_object(chair, opening, "before"), s) == "no"
    # after opening a door: frames 40, 50, 60: the chair (in front at 40, sat on at 60); the pillow is
    # held only at 10 and 20, the door touched only at 30
    assert evaluate(P.exists_object(chair, opening, "after"), s) == "yes"
    assert evaluate(P.exists_object(pillow, opening, "after"), s) == "no"
    assert evaluate(P.exists_object(door, opening, "after"), s) == "no"
    # after sitting in a chair (its only keyframe is the last): no window, so no answer
    assert evaluate(P.exists_object(pillow, sitting, "after"), s) is None
    assert P.exists_object(pillow, opening, "before") == \
        "Exists(pillow, Iterate(Localize(before, opening a door), Filter(frame, [objects])))"


def test_together_and_its_actant_swap():
    v = vocab()
    # frame 10: holding a cup while sitting on a chair; frame 20: holding the chair (sitting on nothing)
    s = make_scene("swap", FRAMES[:2], relations=[(0, "cup", "holding"), (0, "chair", "sittingon"),
                                                  (1, "chair", "holding")])
    holding, sitting = v.relation_index("holding"), v.relation_index("sittingon")
    cup, chair = v.object_index("cup"), v.object_index("chair")
    assert evaluate(P.together(holding, cup, sitting, chair), s) == "yes"  # frame 10
    # swapped: holding the chair (frame 20) and sitting on the cup (never) in one keyframe: no
    assert evaluate(P.together(holding, chair, sitting, cup), s) == "no"
    from tensorqa.foils.text import together

    assert together(holding, cup, sitting, chair) == "The person is holding a cup while sitting on a chair."
