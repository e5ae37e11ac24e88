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
    "first": ("the object they were {relation} first", "the first thing they were {relation}",
              "the first object the person was {relation}"),
    "last": ("the object they were {relation} last", "the last thing they were {relation}",
             "the last object the person was {relation}"),
    "whole": ("the object they were {relation}", "the thing they were {relation}", "the object the person was {relation}"),
}

# Localization phrases: {action}/{action2} are action phrases (direct or indirect-object). The
# whole video has no phrase.
WINDOW_FRAMES: dict[str, str] = {"video": "", "before": " before {action}", "after": " after {action}",
                                 "while": " while {action}", "between": " between {action} and {action2}"}

_DETERMINER = r"(?:(?:a|an|some|the|their) )?"


def _action_reference_frames() -> dict[str, str]:
    """{action id: its phrase with the object's noun phrase replaced by ``{object}``}, as AGQA makes
    the indirect form (LSKA2-2205: "taking the object they were on the side of first from
    somewhere"): an optional determiner plus the action's merged object word (§b.3), singular or
    plural, every occurrence. A phrase without that word gets no entry (c145, c147)."""
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
