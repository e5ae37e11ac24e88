"""Unit tests of the vectorized primitives on hand-built scenes, with the expected answers worked
out by hand from docs/reference/agqa_semantics.md (the reasoning is in the comments). The differential tests
against the scalar reference are in test_grid_differential.py."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers import make_scene

from tensorqa import vocab
from tensorqa.errors import TensorQAError
from tensorqa.engine.primitives import (
    act_first, act_last, act_order, act_what, choose_episode, compare_windows, contacted, count, exists,
    first_episode, has_item, last_episode, length_compare, localize, only_item, present_actions, registry,
    relate, side_of, superlative, xor,
)
from tensorqa.engine.primitives.filter import window_any
from tensorqa.engine.primitives.scans import next_from, prefix_count, prev_before
from tensorqa.engine.primitives.localize import Windows, interval_mask
from tensorqa.scenes.batch import SceneBatch
from tensorqa.agqa.semantics import AGQA, STRICT
from tensorqa.engine.primitives.filter import interaction_relations
from tensorqa.engine.windows import WINDOW_KINDS

V = vocab()
SECS = [(24 * (i + 1), float(i + 1)) for i in range(6)]  # keyframes 0..5 at 1 s .. 6 s


def _ids(*words):
    return [V.action_index(w) for w in words]


def windows_of(w: Windows, b: int = 0) -> list[tuple[str, tuple[str, ...], list[int]]]:
    """(word, action ids, keyframe positions) of the offered windows of video b, in axis order."""
    out = []
    for j in range(w.num_windows):
        if w.valid[b, j]:
            acts = tuple(V.actions[a] for a in w.action[b, j].tolist() if a >= 0)
            out.append((WINDOW_KINDS[int(w.word[b, j])], acts, w.mask[b, j].nonzero().flatten().tolist()))
    return out


# -- localize --------------------------------------------------------------------------------------

@pytest.fixture
def loc_batch() -> SceneBatch:
    scene = make_scene("LOC01", SECS, actions=[
        ("c015", 0.5, 1.0),   # holding a phone: keyframe 0 only
        ("c076", 1.5, 3.5),   # holding a pillow, first instance: keyframes 1, 2
        ("c076", 4.5, 6.5),   # second instance: keyframes 4, 5
        ("c123", 0.0, 6.0),   # sitting on a sofa: every keyframe
        ("c059", 5.5, 6.0),   # sitting in a chair: keyframe 5
        ("c106", 4.2, 4.8),   # drinking from a cup: no keyframe inside -> ignored
        ("c044", 3.0, 4.0),   # taking something from a box: keyframes 2, 3, never localizes
    ])
    return SceneBatch.from_scenes([scene])


def test_localize_offers_exactly_agqa_windows(loc_batch):
    w = localize(loc_batch, AGQA)
    assert windows_of(w) == [
        ("video", (), [0, 1, 2, 3, 4, 5]),
        # c015: before not offered (its first keyframe is the video's first); after = strictly after
        # keyframe 0; while = its only keyframe
        ("after", ("c015",), [1, 2, 3, 4, 5]),
        ("while", ("c015",), [0]),
        # c044 never localizes; c059: before includes its first keyframe (5); after would be empty
        ("before", ("c059",), [0, 1, 2, 3, 4, 5]),
        ("while", ("c059",), [5]),
        # c076 uses its FIRST instance (keyframes 1-2) for before / after / while; a later instance
        # (4-5) lies inside "after"
        ("before", ("c076",), [0, 1]),
        ("after", ("c076",), [3, 4, 5]),
        ("while", ("c076",), [1, 2]),
        # c123 spans the video: only while
        ("while", ("c123",), [0, 1, 2, 3, 4, 5]),
        # between c015 (ends at 0) and c059 (starts at 5): keyframes strictly between. c015 -> c076
        # would be empty (0 then 1); c076 -> c059 starts after c076's LAST instance (ends at 5): none
        ("between", ("c015", "c059"), [1, 2, 3, 4]),
    ]


def test_localize_switches(loc_batch):
    # between from X's first instance: c076 ends at 2, so c076 -> c059 holds keyframes 3, 4
    w = localize(loc_batch, replace(AGQA, between_x_instance="first"))
    assert ("between", ("c076", "c059"), [3, 4]) in windows_of(w)
    # before excluding X's first keyframe
    w = localize(loc_batch, replace(AGQA, localize_before_includes_x=False))
    assert ("before", ("c076",), [0]) in windows_of(w)
    # between switched off; c044 allowed to localize
    w = localize(loc_batch, replace(AGQA, between_enabled=False, never_localize=()))
    kinds = [k for k, _, _ in windows_of(w)]
    assert "between" not in kinds
    assert ("while", ("c044",), [2, 3]) in windows_of(w)


def test_present_actions_ignore_instances_without_keyframes(loc_batch):
    ids, valid = present_actions(loc_batch)
    assert [V.actions[a] for a in ids[valid].tolist()] == ["c015", "c044", "c059", "c076", "c123"]


def test_localize_pads_videos_to_the_largest_window_count(loc_batch):
    empty = make_scene("EMPTY", [])
    batch = SceneBatch.cat([loc_batch, SceneBatch.from_scenes([empty])])
    w = localize(batch, AGQA)
    assert w.mask.shape == (2, 10, 6)
    # the video without keyframes still has its (empty) whole-video window, nothing else
    assert w.valid[1].tolist() == [True] + [False] * 9
    assert not w.mask[1].any()
    assert (w.action[1, 1:] == -1).all()


def test_ablate_before_into_while(loc_batch):
    with registry.ablate("before", "while"):
        w = localize(loc_batch, AGQA)
    ablated = windows_of(w)
    # the question still says "before c076", but its frames are c076's while frames
    assert ("before", ("c076",), [1, 2]) in ablated
    assert ("before", ("c059",), [5]) in ablated
    assert len(ablated) == 10  # the same questions exist
    assert windows_of(localize(loc_batch, AGQA))[5] == ("before", ("c076",), [0, 1])  # undone on exit


def test_compare_windows_exclude_x_from_before(loc_batch):
    ids = torch.tensor([_ids("c076", "c123", "c015")])
    cw = compare_windows(loc_batch, ids, AGQA)
    # c076 has two instances: no compare windows; c123 and c015 have one each
    assert cw.single.tolist() == [[False, True, True]]
    # c015 at keyframe 0: compare-before is strictly before 0 (empty), after = 1..5
    assert cw.before[0, 2].nonzero().flatten().tolist() == []
    assert cw.during[0, 2].nonzero().flatten().tolist() == [0]
    assert cw.after[0, 2].nonzero().flatten().tolist() == [1, 2, 3, 4, 5]


# -- filter / relate -----------------------------------------------------------------------------------

@pytest.fixture
def rel_batch() -> SceneBatch:
    scene = make_scene(
        "REL01", SECS,
        relations=[(1, "pillow", "holding"), (4, "pillow", "holding"), (0, "phone", "touching"),
                   (2, "table", "other relationship"), (3, "cup", "not contacting"), (3, "cup", "in front of")],
        objects=[(5, "television")],
        actions=[("c076", 1.5, 2.5), ("c015", 3.5, 4.5)],  # holding a pillow: keyframe 1; holding a phone: 3
    )
    return SceneBatch.from_scenes([scene])


def test_relate_and_contacted_over_windows(rel_batch):
    w = localize(rel_batch, AGQA)
    found = windows_of(w)
    pos = {(k, a): j for j, (k, a, _) in enumerate(found)}
    rel = relate(rel_batch.rel, w)  # [1, W, O, R]
    pillow, holding = V.object_index("pillow"), V.relation_index("holding")
    # holding a pillow at keyframes 1 and 4: in the whole video, while c076 (keyframe 1), after c076
    # (2..5) and before c015 (0..3, c015's first keyframe included); not while c015 (keyframe 3)
    assert rel[0, pos[("video", ())], pillow, holding]
    assert rel[0, pos[("while", ("c076",))], pillow, holding]
    assert rel[0, pos[("after", ("c076",))], pillow, holding]
    assert rel[0, pos[("before", ("c015",))], pillow, holding]
    assert not rel[0, pos[("while", ("c015",))], pillow, holding]  # keyframe 3 only
    # objExists' rule: other relationship counts, not contacting does not
    video = pos[("video", ())]
    c = contacted(rel_batch, w, AGQA.interaction_rule("objExists"))
    assert c[0, video, V.object_index("table")] and not c[0, video, V.object_index("cup")]
    assert c[0, video, V.object_index("phone")] and not c[0, video, V.object_index("television")]
    # objTime's rule (STRICT unifies on it): other relationship does not count either
    c = contacted(rel_batch, w, STRICT.interaction_rule("objExists"))
    assert not c[0, video, V.object_index("table")]
    # objWhatGeneral's rule: anything annotated, the television (no relation) and the cup included
    c = contacted(rel_batch, w, AGQA.interaction_rule("objWhatGeneral"))
    assert c[0, video, V.object_index("television")] and c[0, video, V.object_index("cup")]


def test_window_any_chunks_agree_with_one_product():
    g = torch.Generator().manual_seed(0)
    mask = torch.rand(3, 7, 5, generator=g) < 0.4
    facts = torch.rand(3, 5, 4, 6, generator=g) < 0.2
    expected = (mask[:, :, :, None, None] & facts[:, None]).any(2)
    import tensorqa.engine.primitives.filter as filt
    old = filt.CHUNK_ELEMENTS
    try:
        filt.CHUNK_ELEMENTS = 30  # forces several window chunks
        assert torch.equal(window_any(mask, facts), expected)
    finally:
        filt.CHUNK_ELEMENTS = old
    assert torch.equal(window_any(mask, facts), expected)


def test_interaction_relations_tables():
    objexists = interaction_relations(AGQA.interaction_rule("objExists"))
    objtime = interaction_relations(AGQA.interaction_rule("objTime"))
    assert objexists.sum() == 16 and objtime.sum() == 15  # 17 contact relations minus 1 / minus 2


# -- scans, exists, count, query ----------------------------------------------------------------------

def test_frame_scans():
    x = torch.tensor([[False, True, True, False, True]])
    assert next_from(x).tolist() == [[1, 1, 2, 4, 4, 5]]  # first True at or after k; 5 = none
    assert prev_before(x).tolist() == [[-1, -1, 1, 2, 2, 4]]  # last True before k; -1 = none
    assert prefix_count(x).tolist() == [[0, 0, 1, 2, 2, 3]]


@pytest.mark.parametrize("F", [1, 2, 5, 64, 65, 130])
def test_scan_doubling_and_cumulative_agree(F):
    """The CPU's doubling scans and the accelerators' cummin / cummax give the same tables
    (both paths run here on the CPU), against a loop over positions."""
    from tensorqa.engine.primitives.scans import _prefix_max, _suffix_min
    g = torch.Generator().manual_seed(F)
    y = torch.randint(-1, F + 1, (3, F + 1, 4, 2), generator=g, dtype=torch.int32)
    suffix = torch.stack([y[:, k:].amin(1) for k in range(F + 1)], 1)
    prefix = torch.stack([y[:, :k + 1].amax(1) for k in range(F + 1)], 1)
    for doubling in (True, False):
        assert torch.equal(_suffix_min(y.clone(), doubling), suffix)
        assert torch.equal(_prefix_max(y.clone(), doubling), prefix)


def test_exists_count_only_item_xor():
    items = torch.tensor([[True, False, True], [False, False, True]])
    assert exists(items, torch.tensor([[2, 1], [0, 2]])).tolist() == [[True, False], [False, True]]
    assert has_item(items).tolist() == [True, True]
    assert count(items).tolist() == [2, 1]
    idx, one = only_item(items)
    assert one.tolist() == [False, True] and idx[1] == 2
    a, b = torch.tensor([True, True, False]), torch.tensor([False, True, True])
    assert xor(a, b, AGQA).tolist() == [True, False, False]  # "a but not b"
    assert xor(a, b, replace(AGQA, xor_is_and_not=False)).tolist() == [True, False, True]


# -- first / last episodes ------------------------------------------------------------------------------

EIGHT = [(24 * (i + 1), float(i + 1)) for i in range(8)]


@pytest.fixture
def episode_batch() -> SceneBatch:
    # holding, per keyframe: 0 -, 1 cup, 2 cup, 3 -, 4 phone, 5 phone, 6 phone, 7 -
    rels = [(1, "cup", "holding"), (2, "cup", "holding"), (4, "phone", "holding"), (5, "phone", "holding"),
            (6, "phone", "holding")]
    return SceneBatch.from_scenes([make_scene("EPI01", EIGHT, relations=rels)])


def _windows(batch, ranges):
    """Hand-made windows [start, stop) for video 0."""
    F = batch.frame_mask.shape[1]
    start = torch.tensor([[a for a, _ in ranges]])
    stop = torch.tensor([[b for _, b in ranges]])
    n = len(ranges)
    return Windows(interval_mask(start, stop, F), start, stop, torch.zeros(1, n, dtype=torch.long),
                   torch.full((1, n, 2), -1), torch.ones(1, n, dtype=torch.bool), torch.zeros(1, n, dtype=torch.long),
                   torch.zeros(1, 1, dtype=torch.long))


def test_first_episode(episode_batch):
    b = episode_batch
    occurs = b.rel.any(2)
    w = _windows(b, [(0, 8), (4, 8), (4, 7)])
    objects, ok = first_episode(occurs, b.rel, w)
    h = V.relation_index("holding")
    # whole video: first holding at 1, it stops at 3 (inside): objects over 1..3 = {cup}
    assert ok[0, 0, h] and objects[0, 0, :, h].nonzero().flatten().tolist() == [V.object_index("cup")]
    # keyframes 4..7: starts at 4, stops at 7: {phone}
    assert ok[0, 1, h] and objects[0, 1, :, h].nonzero().flatten().tolist() == [V.object_index("phone")]
    # keyframes 4..6: it lasts to the end of the window: undefined
    assert not ok[0, 2, h]
    # a relation that never occurs: undefined
    assert not ok[0, 0, V.relation_index("touching")]


def test_last_episode_extra_keyframes(episode_batch):
    b = episode_batch
    occurs = b.rel.any(2)
    h = V.relation_index("holding")
    w = _windows(b, [(0, 8), (4, 8), (3, 8)])
    objects, ok = last_episode(occurs, b.rel, w, AGQA)
    # whole video: last holding at 6; scanning back the gap is 3; AGQA starts 2 keyframes before
    # it (1): objects over 1..6 = {cup, phone}
    assert ok[0, 0, h]
    assert objects[0, 0, :, h].nonzero().flatten().tolist() == [V.object_index("cup"), V.object_index("phone")]
    # keyframes 4..7: no gap before the last occurrence inside the window: undefined
    assert not ok[0, 1, h]
    # keyframes 3..7: gap at 3, the extra keyframes are clamped to the window: {phone}
    assert ok[0, 2, h] and objects[0, 2, :, h].nonzero().flatten().tolist() == [V.object_index("phone")]
    # STRICT starts at the gap itself: the whole video gives {phone}
    objects, ok = last_episode(occurs, b.rel, w, STRICT)
    assert objects[0, 0, :, h].nonzero().flatten().tolist() == [V.object_index("phone")]


def test_choose_episode_stop_keyframe():
    # touching: 0 cup; 1 phone (cup no longer) ; 2 -, 3 cup
    scene = make_scene("CHO01", SECS[:4], relations=[(0, "cup", "touching"), (1, "phone", "touching"),
                                                     (3, "cup", "touching")])
    b = SceneBatch.from_scenes([scene])
    cup, phone, t = V.object_index("cup"), V.object_index("phone"), V.relation_index("touching")
    rel = b.rel[:, :, [cup, phone]][:, :, :, [t]]  # [1, F, 2, 1]: candidates (cup, phone), one relation
    w = _windows(b, [(0, 4), (1, 4)])
    # forward over the video: first hit 0 (cup); cup stops at 1, where phone is touched. With the stop
    # keyframe in the stretch (AGQA) both objects are seen: undefined; without it: cup
    pick, ok = choose_episode(rel, w, True, AGQA)
    assert not ok[0, 0, 0, 0, 1]
    pick, ok = choose_episode(rel, w, True, replace(AGQA, choose_stretch_includes_stop=False))
    assert ok[0, 0, 0, 0, 1] and pick[0, 0, 0, 0, 1]  # the first of the pair: cup
    # the pair the other way round (phone, cup): the answer is still cup, now the second
    assert ok[0, 0, 0, 1, 0] and not pick[0, 0, 0, 1, 0]
    # forward over 1..3: first hit 1 is phone; it stops at 2: phone
    pick, ok = choose_episode(rel, w, True, AGQA)
    assert ok[0, 1, 0, 0, 1] and not pick[0, 1, 0, 0, 1]
    # backward over the video: last hit 3 is cup; back to 2 where it does not hold; the stretch
    # 2..3 has no phone: cup
    pick, ok = choose_episode(rel, w, False, AGQA)
    assert ok[0, 0, 0, 0, 1] and pick[0, 0, 0, 0, 1]
    # a pair of one object with itself is never defined
    assert not ok[..., 0, 0].any() and not ok[..., 1, 1].any()


# -- actions: first / last / what, durations, order --------------------------------------------------------

@pytest.fixture
def act_batch() -> SceneBatch:
    frames = [(24 * i + 1, 2.0 * i) for i in range(7)]  # keyframes at 0, 2, ..., 12 s
    scene = make_scene("ACT01", frames,
                       relations=[(2, "table", "touching")],
                       actions=[("c015", 0.0, 2.5),    # holding a phone: keyframes 0, 1 (0 s, 2 s)
                                ("c076", 7.0, 12.0),   # holding a pillow: keyframes 4, 5, 6
                                ("c123", 0.0, 20.0)])  # sitting on a sofa: every keyframe, length 20
    return SceneBatch.from_scenes([scene])


def test_act_first_last_what():
    # act_batch without the sofa, which would show a second class at every keyframe
    nosofa = make_scene("ACT02", [(24 * i + 1, 2.0 * i) for i in range(7)],
                        actions=[("c015", 0.0, 2.5), ("c076", 7.0, 12.0)])
    b = SceneBatch.from_scenes([nosofa])
    w = localize(b, AGQA)
    found = windows_of(w)
    pos = {(k, a): j for j, (k, a, _) in enumerate(found)}
    act = b.act
    cls, ok = act_first(b, act, w, AGQA)
    # whole video: keyframes within 5 s of 0 s (0, 2, 4) show only c015; t = 0 (video start);
    # earliest start >= 0 is c015 (0 s), unique
    v = pos[("video", ())]
    assert ok[0, v] and V.actions[int(cls[0, v])] == "c015"
    # after c015 (keyframes 2..6, from 4 s): within 5 s: 4, 6, 8 s -> c076 only; t = 4 - 1 = 3 s;
    # instances starting at or after 3 s: c076. But c076 is the only instance ending at or after t:
    # §b.1's "more than one instance" rule -> undefined
    a = pos[("after", ("c015",))]
    assert not ok[0, a]
    # with a second late instance (c123 [11, 12]: outside the 5 s) it is defined: c076
    late = make_scene("ACT03", [(24 * i + 1, 2.0 * i) for i in range(7)],
                      actions=[("c015", 0.0, 2.5), ("c076", 7.0, 12.0), ("c123", 11.0, 12.0)])
    b3 = SceneBatch.from_scenes([late])
    w3 = localize(b3, AGQA)
    a3 = {(k, x): j for j, (k, x, _) in enumerate(windows_of(w3))}[("after", ("c015",))]
    cls3, ok3 = act_first(b3, b3.act, w3, AGQA)
    assert ok3[0, a3] and V.actions[int(cls3[0, a3])] == "c076"
    # actLast over the video: last keyframe 12 s; AGQA keeps t = 12 s, so c076 (ending at 12) is
    # excluded and c015 ends last before it; STRICT uses +inf at the video's end: c076
    cls, ok = act_last(b, act, w, AGQA)
    assert ok[0, v] and V.actions[int(cls[0, v])] == "c015"
    cls, ok = act_last(b, act, w, STRICT)
    assert ok[0, v] and V.actions[int(cls[0, v])] == "c076"
    # actWhat after c015: first keyframe 4 s has no action; t = 3 s; instances ending at or after
    # 3 s: only c076
    cls, ok = act_what(b, act, w, AGQA)
    assert ok[0, a] and V.actions[int(cls[0, a])] == "c076"
    # actWhat before c076 (keyframes 0..4, last = c076's first at 8 s): instances ending before 8 s: c015
    bf = pos[("before", ("c076",))]
    assert ok[0, bf] and V.actions[int(cls[0, bf])] == "c015"
    # while windows are never asked
    assert not ok[0, pos[("while", ("c076",))]]


def test_durations(act_batch):
    b = act_batch
    # lengths: c015 2.5 s, c076 5 s, c123 20 s
    cls, ok = superlative(b, True, AGQA)
    assert ok[0] and V.actions[int(cls[0])] == "c123"  # 20 vs 5: more than 7 s apart
    cls, ok = superlative(b, False, AGQA)
    assert not ok[0]  # 2.5 vs 5: within the margin
    ids = torch.tensor([_ids("c015", "c076", "c123")])
    winner, ok = length_compare(b, ids, True, AGQA)
    assert ok[0, 2, 0] and V.actions[int(winner[0, 2, 0])] == "c123"
    assert ok[0, 0, 2] and V.actions[int(winner[0, 0, 2])] == "c123"
    assert not ok[0, 0, 1]  # 2.5 s apart
    winner, ok = length_compare(b, ids, False, AGQA)
    assert V.actions[int(winner[0, 2, 0])] == "c015"
    # exactly 7 s apart is not enough (strictly more than the margin)
    edge = make_scene("DUR02", SECS, actions=[("c015", 1.0, 3.5), ("c076", 1.0, 10.5)])
    winner, ok = length_compare(SceneBatch.from_scenes([edge]), ids[:, :2], True, AGQA)
    assert not ok[0, 0, 1]


def test_act_order_and_persistence(act_batch):
    b = act_batch
    ids = torch.tensor([_ids("c015", "c076", "c123")])
    cw = compare_windows(b, ids, AGQA)
    side, ok = act_order(b, ids, cw, AGQA)
    # c015 (keyframes 0-1) lies before c076 (4-6); c076 after c015; c123 covers both: c015 within it
    assert ok[0, 0, 1] and side[0, 0, 1] == 0
    assert ok[0, 1, 0] and side[0, 1, 0] == 1
    assert not ok[0, 0, 2] and not ok[0, 1, 2]
    # holding a phone again after c076: c015's (phone, holding) persists after the anchor
    again = make_scene("ORD02", [(24 * i + 1, 2.0 * i) for i in range(7)], relations=[(6, "phone", "holding")],
                       actions=[("c015", 0.0, 2.5), ("c076", 7.0, 11.0)])
    b2 = SceneBatch.from_scenes([again])
    cw2 = compare_windows(b2, ids[:, :2], AGQA)
    side, ok = act_order(b2, ids[:, :2], cw2, AGQA)
    assert not ok[0, 0, 1]
    side, ok = act_order(b2, ids[:, :2], cw2, replace(AGQA, act_time_persistence_check=False))
    assert ok[0, 0, 1] and side[0, 0, 1] == 0


def test_side_of(act_batch):
    b = act_batch
    ids = torch.tensor([_ids("c015", "c076")])
    cw = compare_windows(b, ids, AGQA)
    occurs = b.rel.any(2)  # touching the table at keyframe 2 only
    side, ok = side_of(occurs, cw, b.frame_mask.sum(1))
    t = V.relation_index("touching")
    # keyframe 2 is after c015 (0-1) and before c076 (4-6)
    assert ok[0, 0, t] and side[0, 0, t] == 1
    assert ok[0, 1, t] and side[0, 1, t] == 0
    assert not ok[0, 0, V.relation_index("holding")]  # never occurs


# -- registry -----------------------------------------------------------------------------------------------

def test_registry_lookup_aliases_and_backends():
    assert registry.lookup("Localize") is localize
    assert registry.lookup("OnlyItem") is only_item
    with registry.use("kernel"):  # only_item has no kernel: its torch implementation runs
        assert registry.backend() == "kernel"
        assert registry.lookup("only_item") is only_item
        assert registry.lookup("relate") is not relate  # relate has one (tensorqa.kernels)
    assert registry.backend() == "torch"
    with pytest.raises(TensorQAError):
        registry.lookup("NoSuchPrimitive")
    with pytest.raises(TensorQAError):
        registry.use("cuda-magic")
    with pytest.raises(TensorQAError):
        registry.ablate("before", "between")


def test_registry_override_and_primitive_ablation():
    def nothing(rel, windows):
        return torch.zeros(rel.shape[0], windows.num_windows, *rel.shape[2:], dtype=torch.bool)

    with registry.override("relate", nothing):
        assert registry.lookup("relate") is nothing
    assert registry.lookup("relate") is relate
    undo = registry.ablate("first_episode", "last_episode")
    try:
        assert registry.lookup("first_episode") is last_episode
    finally:
        undo.undo()
    assert registry.lookup("first_episode") is first_episode


# -- layouts ----------------------------------------------------------------------------------------------

def test_flat_and_padded_window_layouts_agree():
    """Every windowed primitive gives, on the flat rows of the offered windows, exactly the
    offered rows of its [B, W] result (the matmul contraction and the prefix-count reading too)."""
    from tensorqa.scenes.synthetic import synthesize
    batch = SceneBatch.from_scenes(list(synthesize(12, seed=5)))
    w = localize(batch, AGQA)
    flat = w.rows()
    b, j = w.valid.nonzero(as_tuple=True)
    assert torch.equal(flat.video, b) and torch.equal(flat.start, w.start[b, j])
    rel = batch.rel & batch.frame_mask[:, :, None, None]
    occurs = rel.any(2)
    act = batch.act
    checks = {
        "relate": lambda ws: relate(rel, ws),
        "contacted": lambda ws: contacted(batch, ws, AGQA.interaction_rule("objExists")),
        "actions_in": lambda ws: registry.lookup("actions_in")(batch, ws),
        "first_episode": lambda ws: first_episode(occurs, rel, ws),
        "last_episode": lambda ws: last_episode(occurs, rel, ws, AGQA),
        "choose_episode": lambda ws: choose_episode(rel[:, :, :6, :8], ws, False, AGQA),
        "act_first": lambda ws: act_first(batch, act, ws, AGQA),
        "act_last": lambda ws: act_last(batch, act, ws, STRICT),
        "act_what": lambda ws: act_what(batch, act, ws, AGQA),
    }
    for name, run in checks.items():
        padded, rows = run(w), run(flat)
        padded, rows = (padded, rows) if isinstance(padded, tuple) else ((padded,), (rows,))
        for p, r in zip(padded, rows):
            assert torch.equal(p[b, j], r), name
    assert bool(first_episode(occurs, rel, flat)[1].any())  # not vacuous


@pytest.mark.parametrize("rule", ["contact_except_not_contacting", "contact_except_not_contacting_or_other"])
def test_interacted_frames_reads_the_rules_relations(rule):
    """Against the rule's relation mask applied to every relation: the object is interacted with
    at a (real) keyframe where one of the rule's relations holds."""
    from tensorqa.engine.primitives.filter import interacted_frames
    from tensorqa.scenes.synthetic import synthesize

    batch = SceneBatch.from_scenes(list(synthesize(12, seed=9)))
    mask = torch.as_tensor(interaction_relations(rule))
    expected = (batch.rel & mask).any(-1) & batch.frame_mask[:, :, None]
    assert expected.any() and not expected.all()
    assert torch.equal(interacted_frames(batch, rule), expected)
