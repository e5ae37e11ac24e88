"""English for captions and foils, from the vocabularies' phrases. Each foil differs from its caption
in the one word or phrase of its phenomenon."""

from __future__ import annotations

from tensorqa.scenes.vocab import copula, indefinite
from tensorqa.foils.static_programs import RELATION_ENGLISH, describe
from tensorqa.scenes.static_batch import RELATIONS
from tensorqa.scenes.vocab import vocab


def _window(w: int, kind: str) -> str:
    return "" if w < 0 else f" {kind} {vocab().action_phrases[w]}"


def existence(o: int, w: int, yes: bool, kind: str = "while") -> str:
    """yes: "The person interacts with a bag." / no: "The person interacts with no bag before opening a
    door." (``kind``: while, before or after action ``w``; w -1: the whole video). Mass and plural-only
    nouns take "some" ("some food", "some clothes"), as ``vocab.indefinite`` says."""
    word = vocab().object_english[o]
    return f"The person interacts with {indefinite(word) if yes else 'no ' + word}{_window(w, kind)}."


def together(r1: int, o1: int, r2: int, o2: int) -> str:
    """"The person is holding a cup while touching a table." """
    v = vocab()
    return (f"The person is {v.relation_english[r1]} {indefinite(v.object_english[o1])} "
            f"while {v.relation_english[r2]} {indefinite(v.object_english[o2])}.")


def relation(o: int, r: int) -> str:
    """"The chair is behind the person." / "The clothes are beneath the person." """
    v = vocab()
    word = v.object_english[o]
    return f"The {word} {copula(word)} {v.relation_english[r]} the person."


def action(a: int) -> str:
    return f"The person is {vocab().action_phrases[a]}."


def count(subject: int, n: int) -> str:
    """subject -1: the objects they interact with ("exactly 3 objects", n 0: "no objects"); otherwise
    the times action ``subject`` happens ("exactly once", "exactly 3 times"; never 0: an action that
    does not happen is the existence and replacement instruments' business)."""
    if subject < 0:
        said = "no objects" if n == 0 else f"exactly {n} {'object' if n == 1 else 'objects'}"
        return f"The person interacts with {said}."
    if n < 1:
        raise ValueError(f"an action counted {n} times")
    return f"The person is {vocab().action_phrases[subject]} {'exactly once' if n == 1 else f'exactly {n} times'}."


def plurality(a: int, several: bool) -> str:
    """"... exactly once" / "... multiple times" (two or more: VALSE's plural means more than one)."""
    return f"The person is {vocab().action_phrases[a]} {'multiple times' if several else 'exactly once'}."


def order(x: int, y: int, word: str) -> str:
    v = vocab()
    return f"The person is {v.action_phrases[x]} {word} {v.action_phrases[y]}."


def extreme(a: int, which: str) -> str:
    """which "first": "The person begins by opening a door."; "last": "The person ends by ..." """
    return f"The person {'begins' if which == 'first' else 'ends'} by {vocab().action_phrases[a]}."


# -- static (CLEVR) scenes: a description is a key of tensorqa.foils.static_programs ---------------------
def scene_existence(key, yes: bool) -> str:
    """yes: "There is a large red metal cube." / no: "There is no large red metal cube." """
    return f"There is {indefinite(describe(key)) if yes else 'no ' + describe(key)}."


def scene_count(key, n: int) -> str:
    """"There is exactly 1 cube." / "There are exactly 3 cubes." / "There are no cubes." (VALSE's "no")"""
    if n == 0:
        return f"There are no {describe(key, plural=True)}."
    return f"There {'is' if n == 1 else 'are'} exactly {n} {describe(key, plural=n != 1)}."


def scene_plurality(key, several: bool) -> str:
    """"There are multiple cubes." (two or more) / "There is exactly one cube." """
    return f"There are multiple {describe(key, plural=True)}." if several else f"There is exactly one {describe(key)}."


def scene_relation(subject, r: int, anchor) -> str:
    return f"The {describe(subject)} is {RELATION_ENGLISH[RELATIONS[r]]} the {describe(anchor)}."
