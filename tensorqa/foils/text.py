"""English for captions and foils, from the vocabularies' phrases. Each foil differs from its caption
in the one word or phrase of its phenomenon."""

from __future__ import annotations

from tensorqa.scenes.vocab import vocab


def _while(w: int) -> str:
    return "" if w < 0 else f" while {vocab().action_phrases[w]}"


def existence(o: int, w: int, yes: bool) -> str:
    """yes: "The person interacts with some bag." / no: "The person interacts with no bag." """
    return f"The person interacts with {'some' if yes else 'no'} {vocab().object_english[o]}{_while(w)}."


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
