"""``agqa.validity_tables``: the §b word lists name real vocabulary entries, and the tensors built
from them hold exactly what the lists say (checked entry by entry against the vocabulary)."""

import itertools

from tensorqa.agqa import validity_tables as vt
from tensorqa.scenes.vocab import vocab


def _is_relation_or_verb(word: str) -> bool:
    v = vocab()
    return word in v.relations or word in v.verbs


def test_every_listed_word_is_in_the_vocabulary():
    v = vocab()
    objects = {o for group in vt.CONFUSABLE_GROUPS for o in group} | {o for pair in vt.CONFUSED_PAIRS for o in pair}
    objects |= set(vt.OBJ_EXISTS_EXCLUDED) | {o for o, _ in vt.COMMONSENSE_PAIRS}
    assert objects <= set(v.objects), objects - set(v.objects)
    words = set(vt.NEGATIVE_RELATIONS) | set(vt.SINGLE_OBJECT_VERBS) | set(vt.REL_EXISTS_EXCLUDED) \
        | set(vt.REL_EXISTS_ABSENT_VERBS_EXCLUDED) | set(vt.REL_TIME_EXCLUDED) | set(vt.TRANSITION_VERBS) \
        | {r for _, r in vt.COMMONSENSE_PAIRS}
    assert all(_is_relation_or_verb(w) for w in words), sorted(w for w in words if not _is_relation_or_verb(w))
    assert set(vt.TRANSITION_ACTIONS) <= set(v.actions)


def test_the_lists_are_the_references():
    # §b.0: the confusable groups, the pairs never asked together, the 10-keyframe threshold
    assert len(vt.CONFUSABLE_GROUPS) == 7 and sum(map(len, vt.CONFUSABLE_GROUPS)) == 20  # 3+3+3+3+2+4+2 words in §b.0
    assert len(vt.CONFUSED_PAIRS) == 3 and vt.MIN_PAIR_KEYFRAMES == 10
    assert len(vt.SINGLE_OBJECT_VERBS) == 8  # talking on, making, photographing, walking, turning, pouring, grasping, cooking
    assert set(vt.OBJ_EXISTS_EXCLUDED) == {"clothes", "shoe", "light", "floor", "person", "doorway"}


def test_tensors_hold_the_lists():
    v, t = vocab(), vt.vocab_tables()
    O, R = v.num_objects, v.num_relations
    conf = {(v.objects.index(a), v.objects.index(b)) for g in vt.CONFUSABLE_GROUPS for a, b in itertools.permutations(g, 2)}
    assert {(int(a), int(b)) for a, b in t.confusable.nonzero()} == conf
    pairs = {(v.objects.index(a), v.objects.index(b)) for a, b in vt.CONFUSED_PAIRS}
    assert {(int(a), int(b)) for a, b in t.confused_pair[:O, :O].nonzero()} == pairs | {(b, a) for a, b in pairs}
    excluded = {v.objects.index(o) for o in vt.OBJ_EXISTS_EXCLUDED}
    assert {int(i) for i in t.obj_exists_excluded[:O].nonzero()} == excluded
    assert {int(i) for i in t.negative[:R].nonzero()} == {v.relations.index(r) for r in vt.NEGATIVE_RELATIONS}
    floor = v.objects.index("floor")
    assert t.commonsense[floor, v.relations.index("standingon")] and not t.commonsense[floor, v.relations.index("holding")]
    assert t.relation_kind[:R].tolist() == [vt.KIND_CODE[k] for k in v.relation_kinds]
