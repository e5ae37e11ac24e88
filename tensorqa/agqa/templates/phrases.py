"""The phrases AGQA's questions embed: object references ("the first thing they held"), the
localization phrases of each time kind, and the indirect-object action frames."""

from __future__ import annotations

import re

from tensorqa.scenes.vocab import NO_OBJECT, vocab

# -- reference and localization phrases ----------------------------------------------------------
# Indirect object references (semantics §b.3), by kind; {relation} is the relation's English form.
# "first"/"last": the object of the relation's earliest / latest episode in the whole video;
# "whole": the only object the relation ever has in the video.
OBJECT_REFERENCE_FRAMES: dict[str, tuple[str, ...]] = {
    "first": (
        "the object they were {relation} first",
        "the first thing they were {relation}",
        "the first object the person was {relation}",
    ),
    "last": (
        "the object they were {relation} last",
        "the last thing they were {relation}",
        "the last object the person was {relation}",
    ),
    "whole": (
        "the object they were {relation}",
        "the thing they were {relation}",
        "the object the person was {relation}",
    ),
}

# Localization phrases: {action}/{action2} are action phrases (direct or indirect-object). The
# whole video has no phrase.
WINDOW_FRAMES: dict[str, str] = {
    "video": "",
    "before": " before {action}",
    "after": " after {action}",
    "while": " while {action}",
    "between": " between {action} and {action2}",
}

_DETERMINER = r"(?:(?:a|an|some|the|their) )?"


def _action_reference_frames() -> dict[str, str]:
    """{action id: its phrase with the object's noun phrase replaced by ``{object}``}.

    Indirect-object actions keep the action's own wording and swap only its object, as the real
    record LSKA2-2205 does ("taking food from somewhere" -> "taking the object they were on the
    side of first from somewhere"). AGQA's generator makes the indirect form by replacing the
    English word of the action's own object, in its merged form (semantics §b.3: c038's towel is
    "blanket"), in the phrase; a phrase that does not contain that word gets no indirect form
    (c145 "working on a book", whose object is paper; c147 "cooking something"). The noun phrase
    replaced is an optional determiner (a, an, some, the, their) plus that word, singular or
    plural; every occurrence is replaced. Which actions may actually take an indirect object
    (verbs that admit varying objects, never c044 or pictures) is the generator's rule, not this
    table's.
    """
    v = vocab()
    frames = {}
    for action, phrase, obj in zip(v.actions, v.action_phrases, v.action_object):
        if obj == NO_OBJECT:
            continue
        word = v.object_english[v.object_merged_into[obj]]
        if word not in phrase:  # the generator's test: the word as a substring of the phrase
            continue
        pattern = re.compile(r"\b" + _DETERMINER + re.escape(word) + r"(?:s|es)?\b")
        frame = pattern.sub("{object}", phrase)
        if frame != phrase:
            frames[action] = frame
    return frames


ACTION_REFERENCE_FRAMES: dict[str, str] = _action_reference_frames()
