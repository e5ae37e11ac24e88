"""The time words of a program's windows, in one place: the kinds of window a question may be asked
in (docs/reference/agqa_semantics.md §a.1), in the order every window table uses."""

from __future__ import annotations

# "video": the whole video; the rest are Localize's first argument
WINDOW_KINDS = ("video", "before", "after", "while", "between")
# Localize(kind, X): the windows around one action (between takes two)
ONE_ACTION_WINDOWS = ("before", "after", "while")
# what Localize accepts as its first argument
LOCALIZE_WORDS = WINDOW_KINDS[1:]
