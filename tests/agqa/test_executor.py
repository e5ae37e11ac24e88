"""The scalar reference executor on hand-worked videos.

Most videos use the timeline ``T``: 10 keyframes at positions 0..9, frame numbers 10, 20, ..., 100
at 1, 2, ..., 10 seconds. An action instance [s, e] covers the keyframes with s <= secs <= e, so
[4, 6] covers positions 3, 4, 5 (frames 40, 50, 60). Each test states its expected answer from the
rules of docs/reference/agqa_semantics.md, independently of the code.
"""

from dataclasses import replace

import pytest

from helpers import make_scene
from tensorqa.errors import TensorQAError
from tensorqa.agqa.program import parse_program
from tensorqa.agqa.shapes import PROGRAM_SHAPES
from tensorqa.engine.scalar import Undefined
from tensorqa.agqa.executor import localize_frames, run_program
from tensorqa.scenes.batch import SceneBatch
from tensorqa.agqa.semantics import AGQA, STRICT, Semantics, get_semantics
from tensorqa.scenes.store import open_store, write_store

T = [(10 * (i + 1), float(i + 1)) for i in range(10)]
PILLOW = "holding a pillow"
BLANKET_TIDY = "tidying up a blanket"
OPEN_DOOR, CLOSE_DOOR = "opening a door", "closing a door"


def P(template: str, **values) -> str:
    """The template's program with its slots filled (values are program text)."""
    return str(parse_program(PROGRAM_SHAPES[template]).substitute(values))


def ask(program: str, scene, semantics="agqa"):
    return run_program(program, scene, scene.video_id, semantics)


def scene(relations=(), actions=(), objects=(), frames=T, video_id="VID01"):
    return make_scene(video_id, frames, relations=relations, objects=objects, actions=actions)


def undefined(x) -> bool:
    return isinstance(x, Undefined)


# -- semantics presets --------------------------------------------------------------------------------
def test_presets():
    assert get_semantics("agqa") is AGQA and get_semantics("STRICT") is STRICT
    assert AGQA.obj_last_extra_keyframes == 2 and STRICT.obj_last_extra_keyframes == 0
    assert AGQA.act_last_video_end_is_last_keyframe and not STRICT.act_last_video_end_is_last_keyframe
    assert AGQA.interaction_rule("objWhatGeneral") == "any_present"
    assert STRICT.interaction_rule("objExists") == STRICT.interaction_rule("objTime")
    assert AGQA.localize_before_includes_x and not AGQA.compare_before_includes_x  # kept in both
    assert STRICT.localize_before_includes_x and not STRICT.compare_before_includes_x
    with pytest.raises(TensorQAError, match="unknown semantics"):
        get_semantics("loose")
    assert not Undefined("x") and Undefined("x") == Undefined("x")


# -- windows (§a.1) ------------------------------------------------------------------------------------
# X = holding a pillow [4, 6] -> keyframes at positions 3, 4, 5 (frames 40, 50, 60).
def window_scene(touch_at: int):
    return scene(relations=[(touch_at, "cup", "touching")], actions=[(PILLOW, 4.0, 6.0)])


def test_window_frames():
    s = window_scene(0)
    assert localize_frames("video", s) == [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    # before includes X's first keyframe (40); after excludes X's last (60); while = 40..60
    assert localize_frames(f"Localize(before, {PILLOW})", s) == [10, 20, 30, 40]
    assert localize_frames(f"Localize(after, {PILLOW})", s) == [70, 80, 90, 100]
    assert localize_frames(f"Localize(while, {PILLOW})", s) == [40, 50, 60]
    strictly = Semantics(localize_before_includes_x=False)
    assert localize_frames(f"Localize(before, {PILLOW})", s, semantics=strictly) == [10, 20, 30]


@pytest.mark.parametrize("touch_at, before, after, during", [
    (2, "yes", "no", "no"),
    (3, "yes", "no", "yes"),   # X's first keyframe is inside "before X" and "while X"
    (5, "no", "no", "yes"),    # X's last keyframe is not inside "after X"
    (6, "no", "yes", "no"),
])
def test_temporal_words(touch_at, before, after, during):
    s = window_scene(touch_at)
    for word, expected in (("before", before), ("after", after), ("while", during)):
        program = P("relExists", relation="touching", window=f"Localize({word}, {PILLOW})")
        assert ask(program, s) == expected, word
        assert ask(program, s, "strict") == expected, word


def test_windows_not_offered():
    touch = [(4, "cup", "touching")]
    # X starts at the video's first keyframe: no "before X"
    s = scene(relations=touch, actions=[(PILLOW, 1.0, 3.0)])
    assert undefined(ask(P("relExists", relation="touching", window=f"Localize(before, {PILLOW})"), s))
    # X ends at the video's last keyframe: "after X" would be empty
    s = scene(relations=touch, actions=[(PILLOW, 8.0, 10.0)])
    assert undefined(ask(P("relExists", relation="touching", window=f"Localize(after, {PILLOW})"), s))
    # X does not occur
    s = scene(relations=touch, actions=[(OPEN_DOOR, 2.0, 3.0)])
    assert undefined(ask(P("relExists", relation="touching", window=f"Localize(while, {PILLOW})"), s))
    # c044 "taking something from a box" occurs but never localizes
    s = scene(relations=touch, actions=[("c044", 2.0, 3.0)])
    assert undefined(ask(P("relExists", relation="touching", window="Localize(after, taking something from a box)"), s))
    # an instance that covers no keyframe does not occur (AGQA's graph has no such action)
    s = scene(relations=touch, actions=[(PILLOW, 4.2, 4.8)])
    assert undefined(localize_frames(f"Localize(while, {PILLOW})", s))


def test_windows_use_the_first_instance():
    # X twice: [2, 3] (positions 1, 2) and [7, 8] (positions 6, 7). before / after / while use the
    # first instance, so the second instance lies inside "after X".
    s = scene(actions=[(PILLOW, 2.0, 3.0), (PILLOW, 7.0, 8.0)])
    assert localize_frames(f"Localize(while, {PILLOW})", s) == [20, 30]
    assert localize_frames(f"Localize(after, {PILLOW})", s) == [40, 50, 60, 70, 80, 90, 100]
    assert localize_frames(f"Localize(before, {PILLOW})", s) == [10, 20]


def test_between():
    # X = pillow at [2, 3] (pos 1, 2) and [4, 4] (pos 3); Y = tidying a blanket at [8, 9]
    # (pos 7, 8) and [10, 10] (pos 9). Between uses X's LAST instance (ends at pos 3) and Y's FIRST
    # (starts at pos 7), exclusive at both ends: positions 4, 5, 6 = frames 50, 60, 70.
    s = scene(actions=[(PILLOW, 2.0, 3.0), (PILLOW, 4.0, 4.0), (BLANKET_TIDY, 8.0, 9.0), (BLANKET_TIDY, 10.0, 10.0)],
              relations=[(3, "cup", "touching"), (6, "phone", "touching")])
    listed = f"Localize(between, [{PILLOW}, {BLANKET_TIDY}])"
    three = f"Localize(between, {PILLOW}, {BLANKET_TIDY})"
    assert localize_frames(listed, s) == [50, 60, 70]
    assert localize_frames(three, s) == [50, 60, 70]
    # with X's first instance the window would start after pos 2
    assert localize_frames(listed, s, semantics=Semantics(between_x_instance="first")) == [40, 50, 60, 70]
    # cup is touched only at pos 3 (X's last keyframe, excluded); phone at pos 6 (Y's keyframe is pos 7)
    assert ask(P("objRelExists", object="cup", relation="touching", window=listed), s) == "no"
    assert ask(P("objRelExists", object="phone", relation="touching", window=listed), s) == "yes"
    # reversed order: Y's last instance ends after X's first starts -> not offered
    assert undefined(localize_frames(f"Localize(between, [{BLANKET_TIDY}, {PILLOW}])", s))
    assert undefined(localize_frames(listed, s, semantics=Semantics(between_enabled=False)))


@pytest.mark.parametrize("x, y", [
    ((2.0, 5.0), (4.0, 8.0)),  # overlap: X ends at pos 4, Y starts at pos 3
    ((2.0, 4.0), (4.0, 6.0)),  # shared keyframe pos 3
    ((2.0, 3.0), (4.0, 6.0)),  # adjacent: X ends at pos 2, Y starts at pos 3, nothing between
])
def test_between_not_offered(x, y):
    s = scene(actions=[(PILLOW, *x), (BLANKET_TIDY, *y)])
    assert undefined(localize_frames(f"Localize(between, [{PILLOW}, {BLANKET_TIDY}])", s))


# -- the 4 real AGQA records ---------------------------------------------------------------------------------
def test_real_programs_parse_and_print_back(real_records):
    for record in real_records.values():
        assert str(parse_program(record["program"])) == record["program"]


def test_yskx3_groundings_agree_with_localize(real_records):
    g8, g9, g11 = (real_records[k]["sg_grounding"] for k in ("YSKX3-8", "YSKX3-9", "YSKX3-11"))
    video = g9["57-57"]  # the zero-width span lists every keyframe of the video
    while_c076 = g8["37-59"]  # "while holding a pillow"
    after_c075 = g11["44-70"]  # "after tidying up a blanket"
    assert video == sorted(video)
    # while = a contiguous run of the video's keyframes; after = a contiguous suffix
    i = video.index(while_c076[0])
    assert video[i:i + len(while_c076)] == while_c076
    assert video[-len(after_c075):] == after_c075
    # so c075's last keyframe is the one just before the suffix (after excludes it)
    c075_last = video[len(video) - len(after_c075) - 1]
    assert c075_last == "000235"

    # A scene with those keyframes (secs = frame / 24), c076 spanning exactly its window, c075
    # ending at 000235, blanket and pillow contacts at the grounded frames.
    frames = [(int(f), int(f) / 24) for f in video]
    pos = {f: k for k, f in enumerate(video)}
    blanket = [pos[x.split("/")[1]] for x in g9["4-13"]]
    pillow = [pos[x.split("/")[1]] for x in g11["9-17"]]
    s = make_scene("YSKX3", frames,
                   relations=[(p, "blanket", "touching") for p in blanket] + [(p, "pillow", "holding") for p in pillow],
                   actions=[("c076", int(while_c076[0]) / 24, int(while_c076[-1]) / 24),
                            ("c075", 221 / 24, 235 / 24)])
    as_ids = lambda frames: [f"{x:06d}" for x in frames]  # noqa: E731
    assert as_ids(localize_frames("video", s)) == video
    assert as_ids(localize_frames("Localize(while, holding a pillow)", s)) == while_c076
    assert as_ids(localize_frames("Localize(after, tidying up a blanket)", s)) == after_c075
    for key in ("YSKX3-8", "YSKX3-9", "YSKX3-11"):
        record = real_records[key]
        assert run_program(record["program"], s, "YSKX3") == record["answer"], key


def test_lska2_indirect_reltime(real_records):
    # LSKA2-2205: "walking before or after taking <the object they were on the side of first>?" ->
    # after. Grounding: the first on-the-side-of object is food at 000330; walking at 000811..000875;
    # local "before-after-v029-c063" says the action is c063 (taking food from somewhere).
    record = real_records["LSKA2-2205"]
    walking = [811, 813, 828, 844, 860, 875]
    frames = [(f, f / 24) for f in [330, 340, 400, 450, 500] + walking]
    relations = [(0, "food", "on the side of"), (3, "food", "holding")]
    relations += [(5 + k, "doorway", "walking") for k in range(len(walking))]
    s = make_scene("LSKA2", frames, relations=relations, actions=[("c063", 400 / 24, 500 / 24)])
    # the referent: first keyframe with "on the side of" is 330, the stretch stops at 340 -> {food};
    # ToAction(taking, food) = c063; walking never occurs before or during c063, only after.
    assert run_program(record["program"], s, "LSKA2") == record["answer"] == "after"
    reference = record["program"][record["program"].index("Query("):].removesuffix(")), Filter(frame, [relations]))))")
    assert run_program(reference, s, "LSKA2") == "food"


# -- objFirst / objLast -----------------------------------------------------------------------------------------
# holding: cup at pos 1, 2; nothing at 3; phone at 4, 5; nothing after.
HELD = [(1, "cup", "holding"), (2, "cup", "holding"), (4, "phone", "holding"), (5, "phone", "holding")]


def test_obj_first():
    s = scene(relations=HELD)
    # first occurrence pos 1, stops at pos 3 -> stretch {cup}
    assert ask(P("objFirst", relation="holding", window="video"), s) == "cup"
    assert ask(P("objFirstVerify", object="cup", relation="holding", window="video"), s) == "yes"
    assert ask(P("objFirstVerify", object="phone", relation="holding", window="video"), s) == "no"
    # two objects in the first stretch -> no single answer
    s2 = scene(relations=HELD + [(1, "phone", "holding")])
    assert undefined(ask(P("objFirst", relation="holding", window="video"), s2))
    assert undefined(ask(P("objFirstVerify", object="cup", relation="holding", window="video"), s2))
    # never occurs in the window
    assert undefined(ask(P("objFirst", relation="wiping", window="video"), s))


def test_obj_first_must_stop_inside_the_window():
    # phone held from pos 4 to the end; "after X" with X = [4, 4] (pos 3) is positions 4..9: the
    # relation never stops there -> undefined. Over the whole video the first stretch is the cup's.
    s = scene(relations=HELD[:2] + [(p, "phone", "holding") for p in range(4, 10)], actions=[(PILLOW, 4.0, 4.0)])
    assert undefined(ask(P("objFirst", relation="holding", window=f"Localize(after, {PILLOW})"), s))
    assert ask(P("objFirst", relation="holding", window="video"), s) == "cup"


def test_obj_last_two_extra_keyframes():
    s = scene(relations=HELD)
    # last occurrence pos 5; scanning back, pos 3 is the gap g. AGQA starts the stretch at g - 2 =
    # pos 1, which reaches back over the gap to the cup: {cup, phone} -> undefined.
    # Strict starts at g: {phone}.
    assert undefined(ask(P("objLast", relation="holding", window="video"), s))
    assert ask(P("objLast", relation="holding", window="video"), s, "strict") == "phone"
    assert undefined(ask(P("objLastVerify", object="phone", relation="holding", window="video"), s))
    assert ask(P("objLastVerify", object="phone", relation="holding", window="video"), s, "strict") == "yes"
    # with the cup three keyframes before the gap (pos 0 only; gap at 1, 2, 3), g = 3, g - 2 = 1
    # sees nothing but the phone in both semantics
    s2 = scene(relations=[(0, "cup", "holding"), (4, "phone", "holding"), (5, "phone", "holding")])
    assert ask(P("objLast", relation="holding", window="video"), s2) == "phone"
    assert ask(P("objLast", relation="holding", window="video"), s2, "strict") == "phone"


def test_obj_last_clamps_and_needs_a_gap():
    # phone at pos 2, 3; gap g = pos 1; g - 2 clamps to pos 0, where the cup is held -> undefined
    s = scene(relations=[(0, "cup", "holding"), (2, "phone", "holding"), (3, "phone", "holding")])
    assert undefined(ask(P("objLast", relation="holding", window="video"), s))
    assert ask(P("objLast", relation="holding", window="video"), s, "strict") == "phone"
    # held at every keyframe of "before Y" (Y = [6, 7]: window pos 0..5) -> no gap inside W
    s2 = scene(relations=[(p, "cup", "holding") for p in range(6)], actions=[(BLANKET_TIDY, 6.0, 7.0)])
    assert undefined(ask(P("objLast", relation="holding", window=f"Localize(before, {BLANKET_TIDY})"), s2))


# -- choose ----------------------------------------------------------------------------------------------------
def test_choose_first_last_what():
    s = scene(relations=HELD)
    # first keyframe with cup or phone: pos 1 -> cup; its stretch stops at pos 3 (nothing there)
    for a, b in (("cup", "phone"), ("phone", "cup")):
        assert ask(P("objFirstChoose", object=a, object2=b, relation="holding", window="video"), s) == "cup"
        # objWhatChoose is answered by the same first-keyframe rule
        assert ask(P("objWhatChoose", object=a, object2=b, relation="holding", window="video"), s) == "cup"
        # last keyframe with either: pos 5 -> phone; back to the gap at pos 3 -> {phone}
        assert ask(P("objLastChoose", object=a, object2=b, relation="holding", window="video"), s) == "phone"


def test_choose_stretch_includes_the_stop_keyframe():
    # cup at pos 1, 2 and phone at pos 3: the cup's stretch stops at pos 3, where the phone is held.
    # AGQA's solver includes that keyframe, so the stretch has both objects -> undefined.
    s = scene(relations=[(1, "cup", "holding"), (2, "cup", "holding"), (3, "phone", "holding")])
    program = P("objFirstChoose", object="cup", object2="phone", relation="holding", window="video")
    assert undefined(ask(program, s))
    assert ask(program, s, Semantics(choose_stretch_includes_stop=False)) == "cup"
    # backward: last is the phone at pos 3, its gap is pos 2 where the cup is held -> undefined
    program = P("objLastChoose", object="cup", object2="phone", relation="holding", window="video")
    assert undefined(ask(program, s))
    assert ask(program, s, Semantics(choose_stretch_includes_stop=False)) == "phone"


def test_choose_undefined():
    s = scene(relations=[(p, "cup", "holding") for p in range(1, 10)])
    # the cup is held to the end of the video: its stretch does not end inside W
    assert undefined(ask(P("objFirstChoose", object="cup", object2="phone", relation="holding", window="video"), s))
    # neither object is held
    assert undefined(ask(P("objFirstChoose", object="dish", object2="phone", relation="holding", window="video"), s))


# -- actFirst / actLast / actWhat ------------------------------------------------------------------------------
def test_act_first():
    # whole video: first keyframe (1 s) is the video's first, t = 0; the keyframes up to 6 s show
    # only "opening a door" [1, 3]; "closing a door" [7, 9] starts later -> opening
    program = P("actFirst", window="video")
    assert ask(program, scene(actions=[(OPEN_DOOR, 1.0, 3.0), (CLOSE_DOOR, 7.0, 9.0)])) == OPEN_DOOR
    # closing [5, 9] shows up at 5 s and 6 s, within 5 s of the window start -> undefined
    assert undefined(ask(program, scene(actions=[(OPEN_DOOR, 1.0, 3.0), (CLOSE_DOOR, 5.0, 9.0)])))


def test_act_first_after_uses_one_second_slack():
    # X = pillow [1, 2] (pos 0, 1); "after X" starts at pos 2 (3 s), so t = 3 - 1 = 2 s.
    program = P("actFirst", window=f"Localize(after, {PILLOW})")
    # opening [2.5, 4] starts at or after t; closing [9.5, 10] later -> opening
    s = scene(actions=[(PILLOW, 1.0, 2.0), (OPEN_DOOR, 2.5, 4.0), (CLOSE_DOOR, 9.5, 10.0)])
    assert ask(program, s) == OPEN_DOOR
    # opening starting exactly at t is still a candidate (start >= t)
    s = scene(actions=[(PILLOW, 1.0, 2.0), (OPEN_DOOR, 2.0, 4.0), (CLOSE_DOOR, 9.5, 10.0)])
    assert ask(program, s) == OPEN_DOOR
    # opening starting at 1.5 s (before t) is running at the window start but is no candidate
    s = scene(actions=[(PILLOW, 1.0, 2.0), (OPEN_DOOR, 1.5, 4.0), (CLOSE_DOOR, 9.5, 10.0)])
    assert ask(program, s) == CLOSE_DOOR


def test_act_last_whole_video_quirk():
    # opening [1, 4]; closing [8, 10] is still running at the last keyframe (10 s). Only closing
    # shows in the last 5 s. AGQA: t = 10 s, candidates end < 10 -> opening. Strict: t = +inf -> closing.
    s = scene(actions=[(OPEN_DOOR, 1.0, 4.0), (CLOSE_DOOR, 8.0, 10.0)])
    program = P("actLast", window="video")
    assert ask(program, s) == OPEN_DOOR
    assert ask(program, s, "strict") == CLOSE_DOOR


def test_act_last_before():
    # X = pillow [9, 10]: "before X" is pos 0..8, its last keyframe is X's first (9 s), t = 9.
    # The last 5 s (4..9 s) show only X; opening [1, 3] and closing [1, 1.5] end before t, opening
    # last.
    program = P("actLast", window=f"Localize(before, {PILLOW})")
    actions = [(CLOSE_DOOR, 1.0, 1.5), (OPEN_DOOR, 1.0, 3.0), (PILLOW, 9.0, 10.0)]
    assert ask(program, scene(actions=actions)) == OPEN_DOOR
    # §b.1 "more than one candidate": with opening the only instance ending before t -> undefined
    assert undefined(ask(program, scene(actions=[(OPEN_DOOR, 1.0, 3.0), (PILLOW, 9.0, 10.0)])))
    # opening [1, 4] is seen at 4 s, within 5 s of 9 s, with X -> two classes -> undefined
    assert undefined(ask(program, scene(actions=[(CLOSE_DOOR, 1.0, 1.5), (OPEN_DOOR, 1.0, 4.0), (PILLOW, 9.0, 10.0)])))


def test_act_last_scan_switch():
    # X = pillow [2, 3]: "before X" = pos 0, 1. Opening [0.5, 1.5] and closing [0.25, 1] cover pos 0
    # and end before t = 2 s, opening last. The document's rule reads both keyframes (three classes
    # -> undefined); AGQA's loop bound never reads W's first.
    s = scene(actions=[(CLOSE_DOOR, 0.25, 1.0), (OPEN_DOOR, 0.5, 1.5), (PILLOW, 2.0, 3.0)])
    program = P("actLast", window=f"Localize(before, {PILLOW})")
    assert undefined(ask(program, s))
    assert ask(program, s, Semantics(act_last_scan_skips_window_start=True)) == OPEN_DOOR


# two-second timeline for actWhatAfterAll: positions 0..9 at 2, 4, ..., 20 s
T2 = [(10 * (i + 1), 2.0 * (i + 1)) for i in range(10)]


def test_act_what_after_all():
    program = P("actWhatAfterAll", window=f"Localize(after, {PILLOW})")
    # X = pillow [2, 4] (pos 0, 1); "after X" starts at 6 s, t = 5 s. X ends at 4 < 5: no candidate.
    # opening [7, 12] ends after t: the one candidate.
    s = scene(actions=[(PILLOW, 2.0, 4.0), (OPEN_DOOR, 7.0, 12.0)], frames=T2)
    assert ask(program, s) == OPEN_DOOR
    # a second instance ending after t -> two candidates
    s = scene(actions=[(PILLOW, 2.0, 4.0), (OPEN_DOOR, 7.0, 12.0), (CLOSE_DOOR, 13.0, 14.0)], frames=T2)
    assert undefined(ask(program, s))
    # whole video: t = 0, every instance is a candidate
    assert ask(P("actWhatAfterAll", window="video"), scene(actions=[(OPEN_DOOR, 3.0, 5.0)])) == OPEN_DOOR
    assert undefined(ask(P("actWhatAfterAll", window="video"),
                         scene(actions=[(OPEN_DOOR, 3.0, 5.0), (CLOSE_DOOR, 7.0, 8.0)])))
    # two actions at the window's first keyframe (6 s) -> undefined
    s = scene(actions=[(PILLOW, 2.0, 4.0), (OPEN_DOOR, 6.0, 12.0), (CLOSE_DOOR, 5.0, 7.0)], frames=T2)
    assert undefined(ask(program, s))


def test_act_what_before():
    program = P("actWhatBefore", window=f"Localize(before, {PILLOW})")
    # X = pillow [6, 8]: "before X" = pos 0..5, last keyframe 6 s (X's first), t = 6. Only opening
    # [1, 3] ends before 6 s.
    assert ask(program, scene(actions=[(OPEN_DOOR, 1.0, 3.0), (PILLOW, 6.0, 8.0)])) == OPEN_DOOR
    assert undefined(ask(program, scene(actions=[(OPEN_DOOR, 1.0, 3.0), (CLOSE_DOOR, 2.0, 5.5), (PILLOW, 6.0, 8.0)])))
    # closing [5.5, 7] is also going on at the window's last keyframe (6 s) -> undefined, although
    # only opening ends before t
    assert undefined(ask(program, scene(actions=[(OPEN_DOOR, 1.0, 3.0), (CLOSE_DOOR, 5.5, 7.0), (PILLOW, 6.0, 8.0)])))
    # X's first keyframe is the video's last: t = +inf, so X itself is a candidate too -> two
    assert undefined(ask(program, scene(actions=[(OPEN_DOOR, 1.0, 3.0), (PILLOW, 10.0, 10.0)])))
    # no AGQA template asks "what did they do" with a while window
    assert undefined(ask(P("actWhatBefore", window=f"Localize(while, {PILLOW})"),
                         scene(actions=[(PILLOW, 6.0, 8.0)])))


# -- durations -------------------------------------------------------------------------------------------------
T20 = [(10 * (i + 1), float(i + 1)) for i in range(20)]


def lengths_scene(*instances):
    return scene(actions=list(instances), frames=T20)


def test_longest_shortest():
    longest = P("actLongest")
    shortest = P("actShortest")
    # lengths: opening 2, closing 12, pillow 4. Longest: 12 vs 4, 8 > 7 -> closing. Shortest: 2 vs 4 -> tie.
    s = lengths_scene((OPEN_DOOR, 1.0, 3.0), (CLOSE_DOOR, 4.0, 16.0), (PILLOW, 16.0, 20.0))
    assert ask(longest, s) == CLOSE_DOOR
    assert undefined(ask(shortest, s))
    # closing 11 vs pillow 4: exactly 7 apart is not MORE than 7 -> undefined
    assert undefined(ask(longest, lengths_scene((OPEN_DOOR, 1.0, 3.0), (CLOSE_DOOR, 4.0, 15.0), (PILLOW, 16.0, 20.0))))
    # shortest: opening 1 vs pillow 9 (and closing 12): 8 > 7 -> opening
    s = lengths_scene((OPEN_DOOR, 1.0, 2.0), (CLOSE_DOOR, 3.0, 15.0), (PILLOW, 11.0, 20.0))
    assert ask(shortest, s) == OPEN_DOOR
    # a single instance is not ranked
    assert undefined(ask(longest, lengths_scene((OPEN_DOOR, 1.0, 15.0))))
    # every instance is ranked, a class's other instances included: closing 12 and closing 1
    s = lengths_scene((CLOSE_DOOR, 1.0, 13.0), (CLOSE_DOOR, 14.0, 15.0), (PILLOW, 16.0, 18.0))
    assert ask(longest, s) == CLOSE_DOOR


def test_length_compare():
    s = lengths_scene((OPEN_DOOR, 1.0, 3.0), (CLOSE_DOOR, 4.0, 16.0))  # 2 s and 12 s
    pair = dict(action=OPEN_DOOR, action2=CLOSE_DOOR)
    assert ask(P("actLengthLongerChoose", **pair), s) == CLOSE_DOOR
    assert ask(P("actLengthShorterChoose", **pair), s) == OPEN_DOOR
    assert ask(P("actLengthLongerVerify", **pair), s) == "no"
    assert ask(P("actLengthShorterVerify", **pair), s) == "yes"
    # 2 s and 9 s: exactly 7 apart -> undefined
    assert undefined(ask(P("actLengthLongerChoose", **pair), lengths_scene((OPEN_DOOR, 1.0, 3.0), (CLOSE_DOOR, 4.0, 13.0))))
    # a second instance of closing: its length is not defined
    s = lengths_scene((OPEN_DOOR, 1.0, 3.0), (CLOSE_DOOR, 4.0, 16.0), (CLOSE_DOOR, 17.0, 18.0))
    assert undefined(ask(P("actLengthLongerChoose", **pair), s))
    # an action that does not occur
    assert undefined(ask(P("actLengthLongerChoose", action=OPEN_DOOR, action2=PILLOW), lengths_scene((OPEN_DOOR, 1.0, 3.0))))


# -- compare windows (§a.2) ----------------------------------------------------------------------------------------
def test_rel_time():
    program = P("relTime", relation="touching", action=PILLOW)
    x = [(PILLOW, 4.0, 6.0)]  # positions 3, 4, 5
    assert ask(program, scene(relations=[(1, "cup", "touching")], actions=x)) == "before"
    assert ask(program, scene(relations=[(7, "cup", "touching")], actions=x)) == "after"
    # seen only at X's first keyframe: compare-before excludes it and "during" makes it invalid,
    # although "Did they touch something before X?" (localize-before includes it) is yes
    only_at_first = scene(relations=[(3, "cup", "touching")], actions=x)
    assert undefined(ask(program, only_at_first))
    assert ask(P("relExists", relation="touching", window=f"Localize(before, {PILLOW})"), only_at_first) == "yes"
    # seen before X and during X: any occurrence during X makes it invalid
    assert undefined(ask(program, scene(relations=[(1, "cup", "touching"), (4, "cup", "touching")], actions=x)))
    # both sides / neither side / X twice
    assert undefined(ask(program, scene(relations=[(1, "cup", "touching"), (8, "cup", "touching")], actions=x)))
    assert undefined(ask(program, scene(actions=x)))
    assert undefined(ask(program, scene(relations=[(1, "cup", "touching")], actions=x + [(PILLOW, 9.0, 10.0)])))


def test_obj_time_uses_its_own_interaction_rule():
    x = [(PILLOW, 4.0, 6.0)]
    program = P("objTime", object="cup", action=PILLOW)
    assert ask(program, scene(relations=[(1, "cup", "holding")], actions=x)) == "before"
    # other relationship counts for objExists but not for objTime
    s = scene(relations=[(1, "cup", "other relationship")], actions=x)
    assert undefined(ask(program, s))
    assert ask(P("objExists", object="cup", window="video"), s) == "yes"
    assert ask(P("objExists", object="cup", window="video"), s, "strict") == "no"


def test_act_time():
    program = P("actTime", action=OPEN_DOOR, action2=PILLOW)
    x = (PILLOW, 4.0, 6.0)  # positions 3, 4, 5
    assert ask(program, scene(actions=[(OPEN_DOOR, 1.0, 2.0), x])) == "before"
    assert ask(program, scene(actions=[(OPEN_DOOR, 8.0, 9.0), x])) == "after"
    assert undefined(ask(program, scene(actions=[(OPEN_DOOR, 5.0, 8.0), x])))  # overlap
    assert undefined(ask(program, scene(actions=[(OPEN_DOOR, 4.5, 5.5), x])))  # within X
    assert undefined(ask(program, scene(actions=[(OPEN_DOOR, 6.0, 8.0), x])))  # shares X's last keyframe
    assert undefined(ask(program, scene(actions=[(OPEN_DOOR, 1.0, 2.0), (OPEN_DOOR, 8.0, 9.0), x])))  # twice
    # persistence: "opening" the door (verb relation of opening a door) seen after X -> undefined
    s = scene(actions=[(OPEN_DOOR, 1.0, 2.0), x], relations=[(8, "door", "opening")])
    assert undefined(ask(program, s))
    assert ask(program, s, Semantics(act_time_persistence_check=False)) == "before"


# -- interaction rules (§c.1) ----------------------------------------------------------------------------------------
def test_interaction_rules():
    # pos 0: cup not contacting; pos 1: phone other relationship; pos 2: book looked at only
    s = scene(relations=[(0, "cup", "not contacting"), (1, "phone", "other relationship"), (2, "book", "looking at")],
              actions=[(PILLOW, 3.0, 3.0)])
    assert ask(P("objExists", object="cup", window="video"), s) == "no"
    assert ask(P("objExists", object="phone", window="video"), s) == "yes"
    assert ask(P("objExists", object="phone", window="video"), s, "strict") == "no"
    assert ask(P("objExists", object="book", window="video"), s) == "no"
    # objWhatGeneral counts any object present: while X (pos 2) sees only the book
    what = P("objWhatGeneral", window=f"Localize(while, {PILLOW})")
    assert ask(what, s) == "book"
    assert undefined(ask(what, s, "strict"))  # unified on objTime's rule: nothing is interacted with
    # "before X" (pos 0..2) sees cup, phone and book present -> three candidates
    assert undefined(ask(P("objWhatGeneral", window=f"Localize(before, {PILLOW})"), s))


# -- exists, logic, what ------------------------------------------------------------------------------------------------
def test_exists_and_logic():
    s = scene(relations=[(2, "cup", "holding")])
    assert ask(P("objRelExists", object="cup", relation="holding", window="video"), s) == "yes"
    assert ask(P("objRelExists", object="phone", relation="holding", window="video"), s) == "no"
    both = dict(relation="holding", window="video")
    assert ask(P("andObjRelExists", object="cup", object2="phone", **both), s) == "no"
    assert ask(P("xorObjRelExists", object="cup", object2="phone", **both), s) == "yes"
    # XOR is "A but not B": phone is not held, so "phone but not cup" is no (a true xor says yes)
    assert ask(P("xorObjRelExists", object="phone", object2="cup", **both), s) == "no"
    assert ask(P("xorObjRelExists", object="phone", object2="cup", **both), s, Semantics(xor_is_and_not=False)) == "yes"
    s2 = scene(relations=[(2, "cup", "holding"), (4, "phone", "holding")])
    assert ask(P("andObjRelExists", object="cup", object2="phone", **both), s2) == "yes"
    assert ask(P("xorObjRelExists", object="cup", object2="phone", **both), s2) == "no"
    assert ask(P("actExists", action=OPEN_DOOR, window="video"), scene(actions=[(OPEN_DOOR, 2.0, 3.0)])) == "yes"


def test_obj_what():
    program = P("objWhat", relation="holding", window="video")
    assert ask(program, scene(relations=[(2, "cup", "holding"), (5, "cup", "holding")])) == "cup"
    assert undefined(ask(program, scene(relations=[(2, "cup", "holding"), (5, "phone", "holding")])))
    assert undefined(ask(program, scene()))


# -- indirect references ----------------------------------------------------------------------------------------------
FIRST_HELD = P("objFirst", relation="holding", window="video")


def test_object_references():
    # first held: cup (pos 1, 2); the cup is touched at pos 6, the phone is not touched
    s = scene(relations=HELD + [(6, "cup", "touching")])
    assert ask(P("objRelExists", object=FIRST_HELD, relation="touching", window="video"), s) == "yes"
    s2 = scene(relations=HELD + [(6, "phone", "touching")])
    assert ask(P("objRelExists", object=FIRST_HELD, relation="touching", window="video"), s2) == "no"
    # whole reference: the one object wiped
    wiped = "Query(class, OnlyItem(Iterate(video, Filter(frame, [relations, wiping, objects]))))"
    s3 = scene(relations=[(3, "table", "wiping"), (5, "table", "touching")])
    assert ask(P("objRelExists", object=wiped, relation="touching", window="video"), s3) == "yes"
    # a reference with no unique referent makes the question undefined
    s4 = scene(relations=[(3, "table", "wiping"), (5, "dish", "wiping")])
    assert undefined(ask(P("objRelExists", object=wiped, relation="touching", window="video"), s4))
    # a "last" reference over the whole video, objLast's AGQA stretch included: pos 5 -> g = 3 -> from pos 1
    last_held = P("objLast", relation="holding", window="video")
    assert undefined(ask(P("objTime", object=last_held, action=PILLOW), scene(relations=HELD, actions=[(PILLOW, 8.0, 9.0)])))
    assert ask(P("objTime", object=last_held, action=PILLOW), scene(relations=HELD, actions=[(PILLOW, 8.0, 9.0)]),
               "strict") == "before"


def test_to_action():
    # first held = cup; ToAction(holding, cup) = "holding a cup of something" [6, 7] (pos 5, 6)
    s = scene(relations=HELD, actions=[("holding a cup of something", 6.0, 7.0)])
    window = f"Localize(after, ToAction(holding, {FIRST_HELD}))"
    assert localize_frames(window, s) == [80, 90, 100]
    # (sit, table) is both "sitting on a table" and "sitting at a table": the one in the video is used
    on_table = "Query(class, OnlyItem(Iterate(video, Filter(frame, [relations, wiping, objects]))))"
    window = f"Localize(while, ToAction(sitting, {on_table}))"
    s = scene(relations=[(0, "table", "wiping")], actions=[("sitting at a table", 3.0, 4.0)])
    assert localize_frames(window, s) == [30, 40]
    s = scene(relations=[(0, "table", "wiping")], actions=[("sitting at a table", 3.0, 4.0), ("sitting on a table", 6.0, 7.0)])
    assert undefined(localize_frames(window, s))


# -- sources and errors -----------------------------------------------------------------------------------------------
def test_sources(tmp_path):
    s = scene(relations=[(2, "cup", "holding")])
    other = scene(video_id="VID02")
    program = P("objWhat", relation="holding", window="video")
    assert run_program(program, s) == "cup"
    assert run_program(parse_program(program), {"VID01": s, "VID02": other}, "VID01") == "cup"
    assert run_program(program, SceneBatch.from_scenes([other, s]), "VID01") == "cup"
    write_store(tmp_path / "s.h5", [s, other])
    with open_store(tmp_path / "s.h5") as store:
        assert run_program(program, store, "VID01") == "cup"
        assert undefined(run_program(program, store, "VID02"))
    with pytest.raises(TensorQAError, match="not 'VID02'"):
        run_program(program, s, "VID02")


def test_malformed_programs_raise():
    s = scene()
    with pytest.raises(TensorQAError, match="'holding' is not an object"):
        run_program("Exists(holding, Iterate(video, Filter(frame, [objects])))", s)
    with pytest.raises(TensorQAError, match="unfilled slot <window>"):
        run_program(PROGRAM_SHAPES["objExists"].replace("<object>", "cup"), s)
    with pytest.raises(TensorQAError, match="unsupported shape"):
        run_program("Iterate(video, Filter(frame, [objects]))", s)


def test_custom_semantics_is_a_replace():
    assert replace(AGQA, duration_margin_s=3.0).duration_margin_s == 3.0
    s = lengths_scene((OPEN_DOOR, 1.0, 3.0), (CLOSE_DOOR, 4.0, 10.0))  # 2 s and 6 s
    assert undefined(ask(P("actLongest"), s))
    assert ask(P("actLongest"), s, replace(AGQA, duration_margin_s=3.0)) == CLOSE_DOOR


def test_action_queries_on_a_video_without_keyframes_are_undefined():
    # a video whose only action covers no annotated keyframe: the whole-video window is empty, so
    # actFirst / actLast / actWhat have no first or last keyframe to start from
    empty = make_scene("NOKF0", [], actions=[("holding a pillow", 1.0, 2.0)])
    for shape in ("actFirst", "actLast", "actWhatAfterAll"):
        program = PROGRAM_SHAPES[shape].replace("<window>", "video")
        assert isinstance(run_program(program, empty), Undefined), shape
