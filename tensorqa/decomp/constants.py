"""Names the AGQA-Decomp evaluation uses (question types, composition and consistency rules), from
the official ``agqa_decomp_evaluation/constants.py`` (docs/reference/agqa.md §2.6-2.7); every metric
reads them from here."""

from __future__ import annotations

_WORDS = ("After", "Before", "While", "Between")

# Raw sub-question type -> the collapsed type the metrics report.
COLLAPSED_TYPES: dict[str, str] = {
    **{t: t for t in ("Object Exists", "Relation Exists", "Interaction", "Object", "Action", "Choose")},
    **{f"{k} {w}": f"{k} Temporal Localization" for k in ("Interaction", "Exists", "Object", "Action") for w in _WORDS},
    "And": "Conjunction", "Xor": "Conjunction", "Longer Choose": "Choose", "Shorter Choose": "Choose",
    "Object Equals": "Equals", "Action Equals": "Equals", "First Object": "First/Last", "Last Object": "First/Last",
    "First Action": "First/Last", "Last Action": "First/Last", "Longest Action": "Longest/Shortest Action",
    "Shortest Action": "Longest/Shortest Action",
}

# Raw types no metric scores (open answers over the whole object / action vocabulary).
BANNED_TYPES: frozenset[str] = frozenset(
    {"Object", "Action", "First Action", "Last Action", *(f"{k} {w}" for k in ("Object", "Action") for w in _WORDS)})

# Raw types with yes / no answers: the only children the implication checks look at.
YES_NO_TYPES: frozenset[str] = frozenset({"Object Exists", "Relation Exists", "Interaction", "And", "Xor",
                                          *(f"{k} {w}" for k in ("Interaction", "Exists") for w in _WORDS)})

# Row order of the per-type tables (``subq_type_ordering``). "Overall" is the pooled row.
QUESTION_TYPES: tuple[str, ...] = (
    "Object Exists", "Relation Exists", "Interaction", "Interaction Temporal Localization", "Exists Temporal Localization",
    "First/Last", "Longest/Shortest Action", "Conjunction", "Choose", "Equals", "Overall")

# Row order of the per-composition tables (``comp_type_ordering``).
COMPOSITION_RULES: tuple[str, ...] = ("Interaction", "First", "Last", "Equals", "And", "Xor", "Choose", "Longer Choose",
                                      "Shorter Choose", "After", "Before", "While", "Between", "Overall")

# The 18 logical consistency rules, in the official order (``consistency_per_rule``).
CONSISTENCY_RULES: tuple[str, ...] = (
    "Interaction Yes", "Interaction No", "Equals Yes", "Equals No", "And Yes", "And No", "Xor Yes", "Xor No",
    "Choose Temporal", "Choose Object", *(f"{w} {a}" for w in _WORDS for a in ("Yes", "No")))

# Which checker runs for a composition rule. Rules absent here (First, Last, Longer / Shorter Choose) are never
# checked: the official dispatcher has no branch for them, so their consistency rows are always N/A.
IC_CHECKER: dict[str, str] = {"Interaction": "implies", "After": "implies", "Before": "implies", "While": "implies",
                              "And": "conjunction", "Between": "conjunction", "Xor": "xor", "Equals": "equals",
                              "Choose": "choose"}

# Per parent type, the composition names whose consistency rules make up its IC score. A rule
# belongs to a composition when the composition name is a substring of the rule name.
PARENT_TO_RULES: dict[str, tuple[str, ...]] = {
    "Interaction": ("Interaction",), "Exists Temporal Localization": ("Between", "While", "After", "Before"),
    "Interaction Temporal Localization": ("While", "Between", "After", "Interaction", "Before"),
    "Conjunction": ("Xor", "And"), "Equals": ("Equals",), "Choose": ("Choose",), "Relation Exists": ("Interaction",)}

# The Equals check runs only under parents of this raw type.
EQUALS_PARENT_TYPE = "Object Equals"
# The leaf-case Equals check reads the object name as ``program[10:-1]`` of the first child.
EQUALS_PROGRAM_SLICE = slice(10, -1)


def collapse(qtype: str) -> str:
    """The collapsed type of a raw type; an unknown type is its own collapsed type."""
    return COLLAPSED_TYPES.get(qtype, qtype)


def rules_of(composition: str) -> list[str]:
    """The consistency rules counted under ``composition`` ("Overall": all of them)."""
    return [r for r in CONSISTENCY_RULES if composition == "Overall" or composition in r]
