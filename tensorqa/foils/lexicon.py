"""What the vocabulary's words say about each other, for captions and foils that read well: how an
object noun takes its article and verb, which objects an action's phrase names, and which objects a
contact relation plausibly takes (from the Charades action classes). One home for each fact; ``text``
and ``phenomena`` read them from here.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from tensorqa.scenes.vocab import NO_OBJECT, vocab

# Object nouns that do not take "a": mass nouns ("some food", "the food is") and plural-only nouns
# ("some clothes", "the clothes are"); the floor is the room's one floor ("the floor"). Every other
# object noun is a count noun ("a bag", "the bag is").
MASS_NOUNS = frozenset({"food", "medicine"})
PLURAL_NOUNS = frozenset({"clothes", "groceries"})
UNIQUE_NOUNS = frozenset({"floor"})


def indefinite(word: str) -> str:
    """The noun with the article a sentence introduces it by: "a bag", "an ...", "some food",
    "some clothes", "the floor"."""
    if word in MASS_NOUNS or word in PLURAL_NOUNS:
        return f"some {word}"
    if word in UNIQUE_NOUNS:
        return f"the {word}"
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def copula(word: str) -> str:
    """"are" after a plural-only noun ("the clothes are"), else "is"."""
    return "are" if word in PLURAL_NOUNS else "is"


def _groups() -> np.ndarray:
    """bool[O, O]: objects of one synonym group (AGQA's merge: towel = blanket, sandwich = food)."""
    m = np.array(vocab().object_merged_into)
    return m[:, None] == m[None, :]


@functools.cache
def phrase_names() -> np.ndarray:
    """bool[A, O]: action a's phrase names object o: its object is in o's synonym group, or the phrase
    says the English word of an object of that group ("working on a book" names the book as well as
    its object, the paper; "taking a picture of something" names the picture)."""
    v = vocab()
    group = _groups()
    out = np.zeros((v.num_actions, v.num_objects), bool)
    english = np.array(v.object_english)
    for a, phrase in enumerate(v.action_phrases):
        words = set(re.findall(r"[a-z]+", phrase))
        said = np.isin(english, list(words))
        said[0] = False  # "person" is never a word of a phrase, but the person is no object
        o = v.action_object[a]
        out[a] = (group[said].any(0) if said.any() else False) | (group[o] if o != NO_OBJECT else False)
    return out


@functools.cache
def relation_objects() -> np.ndarray:
    """bool[R, O]: relation r plausibly takes object o. An action class with object o and verb v makes o
    plausible for the relation that carries v (eat: eating) or that v implies (open: touching), and for
    every relation those entail (holding: touching), over o's synonym group. So "eating" takes food,
    sandwich, groceries and medicine, "sitting on" a chair, sofa, bed, table or the floor; a relation no
    verb carries or implies (wearing, covered by) takes none."""
    v = vocab()
    closure = v.entailment_closure()
    group = _groups()
    out = np.zeros((v.num_relations, v.num_objects), bool)
    for a in range(v.num_actions):
        o = v.action_object[a]
        if o == NO_OBJECT:
            continue
        for r in (v.verb_relation[v.action_verb[a]], v.verb_implies[v.action_verb[a]]):
            if r >= 0:
                out[closure[r]] |= group[o]
    return out
