"""What the vocabulary's words say about each other, for foils that read well: which objects an action's
phrase names, and which objects a contact relation plausibly takes (from the Charades action classes).
"""

from __future__ import annotations

import functools
import re

import numpy as np

from tensorqa.scenes.vocab import NO_OBJECT, vocab

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
    plausible for the relation that carries v (eat: eating) or that v implies (open: touching), and the
    relations those entail, over o's synonym group; a relation no verb carries or implies takes none."""
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
