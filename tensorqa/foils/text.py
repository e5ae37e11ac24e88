"""English for captions and foils, from the vocabularies' phrases. Each foil differs from its caption
in the one word or phrase of its phenomenon."""

from __future__ import annotations

from tensorqa.foils.static_programs import RELATION_ENGLISH, describe
from tensorqa.scenes.static_batch import RELATIONS
from tensorqa.scenes.vocab import vocab


def _window(w: int, kind: str) -> str:
    return "" if w < 0 else f" {kind} {vocab().action_phrases[w]}"


def existence(o: int, w: int, yes: bool, kind: str = "while") -> str:
    """yes: "The person interacts with some bag." / no: "The person interacts with no bag before
    opening a door." (``kind``: while, before or after action ``w``; w -1: the whole video)"""
    return f"The person interacts with {'some' if yes else 'no'} {vocab().object_english[o]}{_window(w, kind)}."


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def together(r1: int, o1: int, r2: int, o2: int) -> str:
    """"The person is holding a cup while touching a table." """
    v = vocab()
    return (f"The person is {v.relation_english[r1]} {_a(v.object_english[o1])} "
            f"while {v.relation_english[r2]} {_a(v.object_english[o2])}.")


def relation(o: int, r: int) -> str:
    v = vocab()
    return f"The {v.object_english[o]} is {v.relation_english[r]} the person."


def action(a: int) -> str:
    return f"The person is {vocab().action_phrases[a]}."


def count(subject: int, n: int) -> str:
    """subject -1: the objects they interact with; otherwise the times action ``subject`` happens."""
    if subject < 0:
        return f"The person interacts with exactly {n} {'object' if n == 1 else 'objects'}."
    return f"The person is {vocab().action_phrases[subject]} exactly {n} {'time' if n == 1 else 'times'}."


def plurality(a: int, several: bool) -> str:
    return f"The person is {vocab().action_phrases[a]} {'several times' if several else 'exactly once'}."


def order(x: int, y: int, word: str) -> str:
    v = vocab()
    return f"The person is {v.action_phrases[x]} {word} {v.action_phrases[y]}."


def extreme(a: int, which: str) -> str:
    return f"The {which} thing the person does is {vocab().action_phrases[a]}."


# -- static (CLEVR) scenes: a description is a key of tensorqa.foils.static_programs ---------------------
def scene_existence(key, yes: bool) -> str:
    """yes: "There is a large red metal cube." / no: "There is no large red metal cube." """
    return f"There is {'a' if yes else 'no'} {describe(key)}."


def scene_count(key, n: int) -> str:
    return f"There {'is' if n == 1 else 'are'} exactly {n} {describe(key, plural=n != 1)}."


def scene_plurality(key, several: bool) -> str:
    return f"There are several {describe(key, plural=True)}." if several else f"There is exactly one {describe(key)}."


def scene_relation(subject, r: int, anchor) -> str:
    return f"The {describe(subject)} is {RELATION_ENGLISH[RELATIONS[r]]} the {describe(anchor)}."
