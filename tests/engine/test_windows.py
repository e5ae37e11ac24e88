"""The window words (tensorqa/engine/windows.py) as the program syntax and the registry use them
(docs/reference/agqa_semantics.md §a.1: the whole video, before / after / while one action,
between two)."""

from __future__ import annotations

import pytest

from tensorqa.engine.primitives import registry
from tensorqa.agqa.program import WHOLE_VIDEO, localize
from tensorqa.engine.windows import LOCALIZE_WORDS, ONE_ACTION_WINDOWS, WINDOW_KINDS
from tensorqa.errors import TensorQAError


def test_each_window_word_builds_its_program():
    for kind in WINDOW_KINDS:
        node = localize(kind, "eating a sandwich", "opening a door")
        if kind == "video":
            assert node == WHOLE_VIDEO
        else:
            assert node.func == "Localize" and str(node.args[0]) == kind and kind in LOCALIZE_WORDS
            # one action around before / after / while; between names both
            assert ("opening a door" in str(node)) == (kind not in ONE_ACTION_WINDOWS)
    with pytest.raises(TensorQAError, match="unknown time kind"):
        localize("during", "eating a sandwich")


def test_between_is_the_one_two_action_window():
    assert set(LOCALIZE_WORDS) - set(ONE_ACTION_WINDOWS) == {"between"}
    assert set(WINDOW_KINDS) - set(LOCALIZE_WORDS) == {"video"}


def test_the_registry_swaps_exactly_the_window_words():
    for name in ONE_ACTION_WINDOWS:
        for other in ONE_ACTION_WINDOWS:
            registry.ablate(name, other).undo()
    with pytest.raises(TensorQAError, match="whole video"):
        registry.ablate("video", "before")
    with pytest.raises(TensorQAError, match="second action"):
        registry.ablate("before", "between")
    with pytest.raises(TensorQAError, match="both must be temporal words"):
        registry.ablate("before", "count")
