"""The lexicon's facts against hand lists read off data/actions.tsv and English usage."""

from __future__ import annotations

import numpy as np

from tensorqa.foils.lexicon import phrase_names, relation_objects
from tensorqa.scenes.vocab import copula, indefinite, vocab


def _objects(mask: np.ndarray) -> set[str]:
    return {vocab().object_english[o] for o in np.flatnonzero(mask)}


def test_articles_and_agreement():
    assert indefinite("bag") == "a bag" and indefinite("umbrella") == "an umbrella"
    assert indefinite("food") == "some food" and indefinite("medicine") == "some medicine"  # mass
    assert indefinite("clothes") == "some clothes" and indefinite("groceries") == "some groceries"  # plural
    assert indefinite("floor") == "the floor"
    assert (copula("clothes"), copula("groceries"), copula("food"), copula("bag")) == ("are", "are", "is", "is")


def test_agqa_questions_read_the_released_articles():
    # AGQA's released questions: "some clothes", "some food", "some medicine", "some groceries", "the
    # floor", and "a" before every other object (no object word begins with a vowel); the question
    # text and the foils read the same fact
    special = {"clothes": "some clothes", "food": "some food", "medicine": "some medicine",
               "groceries": "some groceries", "floor": "the floor"}
    for word in vocab().object_english[1:]:
        assert indefinite(word) == special.get(word, f"a {word}"), word


def test_relation_objects_from_the_action_classes():
    v = vocab()
    takes = relation_objects()
    r = v.relation_index
    # "Eating a sandwich", "Taking/consuming some medicine" (verb eat), "Someone is eating something" (food);
    # groceries are food by AGQA's merge
    assert _objects(takes[r("eating")]) == {"food", "sandwich", "medicine", "groceries"}
    assert _objects(takes[r("drinkingfrom")]) == {"cup"}  # "Drinking from a cup/glass/bottle"
    # "Sitting on a table", "Sitting at a table", "Sitting in a chair", "Sitting on sofa/couch",
    # "Sitting on the floor", "Sitting in a bed"
    assert _objects(takes[r("sittingon")]) == {"table", "chair", "sofa", "floor", "bed"}
    assert _objects(takes[r("lyingon")]) == {"sofa", "floor", "bed"}
    assert _objects(takes[r("standingon")]) == {"chair"}  # "Standing on a chair"
    # the "Holding ..." classes (towel = blanket, sandwich = food = groceries), and what one eats or
    # drinks from (eating and drinking from entail touching, not holding)
    assert _objects(takes[r("holding")]) == {
        "clothes", "phone", "bag", "book", "towel", "blanket", "box", "laptop", "shoe", "food", "sandwich",
        "groceries", "pillow", "picture", "mirror", "broom", "cup", "paper", "dish", "medicine", "vacuum"}
    touching = _objects(takes[r("touching")])
    assert {"door", "doorknob", "light", "window", "refrigerator", "shelf"} <= touching  # opened, fixed, ...
    assert not {"person", "television", "doorway"} & touching  # watched, walked through: no contact
    for name in ("wearing", "coveredby", "carrying", "leaningon", "writingon", "twisting", "wiping"):
        assert not takes[r(name)].any(), name  # no action class says what they take
    assert not takes[r("eating"), v.object_index("shelf")]  # no "eating a shelf"


def test_phrase_names():
    v = vocab()
    names = phrase_names()
    said = lambda phrase: _objects(names[v.actions.index(next(a for a, p in zip(v.actions, v.action_phrases)
                                                                if p == phrase))])
    assert said("holding a book") == {"book"}
    assert said("working on a book") == {"book", "paper"}  # c145: paper/notebook, phrased "book"
    assert said("holding a towel") == {"towel", "blanket"}  # one synonym group
    assert said("washing something with a blanket") == {"towel", "blanket"}
    assert said("taking a picture of something") == {"picture"}  # says the word, no object
    assert said("eating some food") == {"food", "sandwich", "groceries"}
    assert said("washing their hands") == set() and said("standing up") == set()
