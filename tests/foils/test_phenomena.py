"""Video candidates on hand-worked scenes, copied many times so that every copy draws its own noise:
the rules hold on every draw, not on one."""

from __future__ import annotations

from helpers import make_scene

from tensorqa import vocab
from tensorqa.foils.phenomena import WINDOWS, candidates
from tensorqa.scenes.batch import SceneBatch

FRAMES = [(10, 0.4), (20, 0.8), (30, 1.2), (40, 1.6)]
COPIES = 200


def test_existence_never_asks_about_an_object_its_window_names():
    """The person holds a book through "holding a book" (frames 10-20) and touches a paper while
    "working on a book" (paper/notebook; frames 30-40): the only objects in either window are ones its
    phrase names, so no caption may say "(no | a) book ... holding a book" nor "paper / book ... working
    on a book" (while, before or after). Other objects are asked about ("no bag while holding a book",
    "a paper after holding a book")."""
    v = vocab()
    s = make_scene("win", FRAMES, relations=[(0, "book", "holding"), (1, "book", "holding"),
                                             (2, "paper/notebook", "touching"), (3, "paper/notebook", "touching"),
                                             (2, "book", "holding")],
                   actions=[("holding a book", 0.3, 0.9), ("working on a book", 1.1, 1.7)])
    E = candidates(SceneBatch.from_scenes([s] * COPIES), 0, seed=3)["existence"]
    book, paper = v.object_index("book"), v.object_index("paper")
    holding, working = v.action_index("holding a book"), v.action_index("working on a book")
    windowed = E.b >= 0
    assert windowed.sum() > 20 and (~windowed).sum() > 20  # both kinds drawn
    seen = set()
    for o, w, kind, yes in zip(E.a[windowed], E.b[windowed], E.n[windowed], E.flag[windowed]):
        seen.add((int(w), WINDOWS[kind]))
        named = {holding: {book}, working: {book, paper}}[int(w)]  # the object, and "book" said in c145
        assert o not in named, (v.object_english[o], v.action_phrases[w])
        if WINDOWS[kind] == "while":  # inside either window the person touches only named objects
            assert not yes
    assert (holding, "while") in seen and (working, "while") in seen
    # the whole video has no window: "a book" / "no bag" are asked there as before
    assert {book, paper} & set(E.a[~windowed & E.flag].tolist())


def test_actant_swap_keeps_both_readings_plausible():
    """Keyframe 10: holding a cup while sitting on a chair; the swap ("holding a chair while sitting on a
    cup") would be absurd, so that keyframe gives no pair. Keyframe 20: holding a pillow while touching
    some food; the swap ("holding some food while touching a pillow") reads well and is false (no
    keyframe has the food held), so every pair comes from there."""
    v = vocab()
    s = make_scene("swap", FRAMES[:2], relations=[(0, "cup", "holding"), (0, "chair", "sittingon"),
                                                  (1, "pillow", "holding"), (1, "food", "touching")])
    R = candidates(SceneBatch.from_scenes([s] * COPIES), 0, seed=3)["actant-swap"]
    assert R.video.size == COPIES
    pillow, food = v.object_index("pillow"), v.object_index("food")
    for o1, o2, n, ground in zip(R.a, R.b, R.n, R.ground):
        assert {int(o1), int(o2)} == {pillow, food} and ground == [20]
        r1, r2 = divmod(int(n), v.num_relations)
        assert {v.relations[r1], v.relations[r2]} == {"holding", "touching"}


def test_an_action_is_never_counted_zero_times():
    s = make_scene("count", FRAMES, relations=[(0, "door", "touching")],
                   actions=[("opening a door", 0.3, 0.5), ("opening a door", 1.1, 1.3), ("closing a door", 1.5, 1.7)])
    for name in ("counting-balanced", "counting-small-numbers"):
        R = candidates(SceneBatch.from_scenes([s] * COPIES), 0, seed=3)[name]
        acts = R.a >= 0
        assert acts.any()
        assert not R.foil_ok[acts, 0].any()  # "exactly 0 times" is never a foil
        assert R.foil_ok[~acts, 0].any() or not (~acts).any()  # "no objects" may be
