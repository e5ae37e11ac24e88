"""The unigram text-only baseline on hand-made sets."""

from tensorqa.foils.baseline import unigram_accuracy


def test_a_giveaway_word_is_found_and_balanced_words_are_not():
    ids = [f"p{i}" for i in range(8)]
    # "no" only in foils: every caption scores above its foil
    assert unigram_accuracy(ids, ["a bag"] * 8, ["no bag"] * 8) == 100.0
    # some/no as often in captions as in foils: every word's ratio is 1, so every pair ties (half credit)
    caps = ["some bag", "no cup"] * 4
    foils = ["no bag", "some cup"] * 4
    assert unigram_accuracy(ids, caps, foils) == 50.0
    assert unigram_accuracy([], [], []) is None
