"""Each augmentation rule on a hand-worked video."""

import numpy as np

from helpers import make_scene
from tensorqa import vocab
from tensorqa.scenes.augment import (AugmentConfig, adjust_boundaries, augment_scene, entailments, merge_synonyms,
                              prune_relations, relation_object_counts, single_object_relations, verb_relations)

v = vocab()
O, R, A = v.object_index, v.relation_index, v.action_index
FRAMES = [(24, 1.0), (48, 2.0), (72, 3.0), (96, 4.0), (120, 5.0)]


def test_entailments_add_holding_and_touching_to_carrying():
    # carrying the box at keyframe 1 entails holding (carrying => holding) and touching (holding => touching)
    s = entailments(make_scene("E", FRAMES, relations=[(1, "box", "carrying"), (3, "cup", "drinking from")]))
    assert s.rel[1, O("box"), R("holding")] and s.rel[1, O("box"), R("touching")]
    assert s.rel[3, O("cup"), R("touching")] and not s.rel[3, O("cup"), R("holding")]
    assert s.rel.sum() == 3 + 2  # nothing else appears
    assert not s.rel[0].any()


def test_merge_synonyms_folds_towel_into_blanket_and_its_actions():
    s = merge_synonyms(make_scene("M", FRAMES, relations=[(0, "towel", "holding"), (0, "blanket", "touching")],
                                  actions=[("c033", 0.5, 2.5), ("c070", 0.5, 2.5), ("c065", 3.0, 4.0)]))
    assert not s.rel[:, O("towel")].any() and not s.obj[:, O("towel")].any()
    assert s.rel[0, O("blanket"), R("holding")] and s.rel[0, O("blanket"), R("touching")]
    # "holding a towel" became "holding a blanket" and is then the same instance as the real one
    assert s.inst_cls.tolist() == [A("c070"), A("c156")]  # eating a sandwich -> eating some food


def test_adjust_boundaries_cuts_small_overruns_and_merges_repeats():
    # sitting on the floor 0-3.5 s runs 0.5 s into standing up (3-6 s): cut to end before 3 s.
    # holding a pillow 1-2 s and again 1.5-2.5 s overlap: one instance 1-2.5 s.
    # watching television 0-6 s runs 3 s into "standing up": more than the 1 s margin, kept.
    s = adjust_boundaries(make_scene("B", FRAMES, actions=[
        ("sitting on the floor", 0.0, 3.5), ("standing up", 3.0, 6.0), ("watching television", 0.0, 6.0),
        ("holding a pillow", 1.0, 2.0), ("holding a pillow", 1.5, 2.5)]), overlap_margin=1.0)
    got = {(v.action_phrases[c], round(float(a), 3), round(float(b), 3)) for c, a, b in zip(s.inst_cls, s.inst_start, s.inst_end)}
    assert got == {("sitting on the floor", 0.0, 2.999), ("standing up", 3.0, 6.0), ("watching television", 0.0, 6.0),
                   ("holding a pillow", 1.0, 2.5)}
    # the cut makes the order unambiguous: the keyframe at 3 s now belongs to standing up only
    assert adjust_boundaries(s).inst_end.tolist() == s.inst_end.tolist()  # idempotent


def test_verb_relations_follow_the_action():
    # "holding a pillow" 1.5-3 s covers keyframes 2 s and 3 s: the AG relation that carries "hold" is
    # holding (touching follows later, by entailment); "tidying up a blanket" 0.5-1.5 s covers the 1 s
    # keyframe: the verb relation "tidying" plus the contact it implies, touching; "walking through a
    # doorway" 4-5 s adds the verb relation "walking" with the doorway; "running somewhere" has no object.
    s = verb_relations(make_scene("V", FRAMES, actions=[("holding a pillow", 1.5, 3.0),
                                                         ("tidying up a blanket", 0.5, 1.5),
                                                         ("walking through a doorway", 4.0, 5.0),
                                                         ("running somewhere", 0.0, 5.0)]))
    assert s.rel[:, O("pillow"), R("holding")].tolist() == [False, True, True, False, False]
    assert not s.rel[:, O("pillow"), R("touching")].any()
    assert s.rel[:, O("blanket"), R("tidying")].tolist() == [True, False, False, False, False]
    assert s.rel[:, O("blanket"), R("touching")].tolist() == [True, False, False, False, False]
    assert s.rel[:, O("doorway"), R("walking")].tolist() == [False, False, False, True, True]
    assert s.obj[:, O("pillow")].tolist() == [False, True, True, False, False]
    assert s.rel.sum() == 2 + 2 + 2


def test_prune_relations_seen_with_one_object_class_but_keep_verbs():
    a = make_scene("P1", FRAMES, relations=[(0, "shoe", "wearing"), (1, "cup", "holding"), (2, "box", "holding")])
    b = make_scene("P2", FRAMES, relations=[(0, "shoe", "wearing"), (0, "doorway", "walking")])
    counts = relation_object_counts(a) + relation_object_counts(b)
    pruned = single_object_relations(counts)
    # wearing occurs only with shoes -> pruned; holding has two objects; walking is a verb: exempt
    assert pruned[R("wearing")] and not pruned[R("holding")] and not pruned[R("walking")]
    assert not prune_relations(a, pruned).rel[:, :, R("wearing")].any()


def test_each_rule_can_be_switched_off():
    s = make_scene("S", FRAMES, relations=[(1, "towel", "carrying")], actions=[("holding a pillow", 1.5, 3.0)])
    none = AugmentConfig(merge_synonyms=False, adjust_boundaries=False, verb_relations=False, entailments=False)
    assert np.array_equal(augment_scene(s, none).rel, s.rel)
    only_ent = augment_scene(s, AugmentConfig(merge_synonyms=False, verb_relations=False))
    assert only_ent.rel[1, O("towel"), R("touching")] and not only_ent.rel[:, O("pillow")].any()
    full = augment_scene(s)
    assert full.rel[1, O("blanket"), R("touching")] and full.rel[1, O("pillow"), R("holding")]
