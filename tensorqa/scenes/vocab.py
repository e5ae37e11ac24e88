"""Vocabularies: Action Genome objects and relations, Charades actions and verbs, read once from
``data/*.tsv`` into an immutable :class:`Vocab` (``vocab()``). Every file tensorqa writes carries
``Vocab.hash``, so a store built with another vocabulary is refused, not read with shifted ids.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from tensorqa.errors import TensorQAError

RELATION_KINDS = ("attention", "spatial", "contact", "verb")
NO_OBJECT = -1  # action_object entry of actions that have no object


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


def _read_tsv(name: str) -> list[dict[str, str]]:
    text = resources.files("tensorqa.data").joinpath(name).read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t") + [""] * (len(header) - line.count("\t") - 1))) for line in lines[1:]]


@dataclass(frozen=True)
class Vocab:
    """Immutable vocabularies. Indices are positions in these tuples (0-based).

    objects:   AG object class names (``person``, ``bag``, ...); AGQA id ``o{i+1}``.
    relations: AG relation names then verb relations; AGQA id ``r{i+1}`` or the verb's ``vNNN``.
    actions:   Charades ids ``c000`` ... ``c156``.
    """

    objects: tuple[str, ...]
    object_ids: tuple[str, ...]
    object_english: tuple[str, ...]
    object_merged_into: tuple[int, ...]  # index of the synonym target, or own index
    relations: tuple[str, ...]
    relation_ids: tuple[str, ...]
    relation_kinds: tuple[str, ...]
    relation_english: tuple[str, ...]
    actions: tuple[str, ...]
    action_descriptions: tuple[str, ...]
    action_phrases: tuple[str, ...]
    action_verb: tuple[int, ...]  # index into verbs
    action_object: tuple[int, ...]  # object index or NO_OBJECT
    action_merged_into: tuple[int, ...]
    verbs: tuple[str, ...]
    verb_ids: tuple[str, ...]
    verb_english: tuple[str, ...]
    verb_relation: tuple[int, ...]  # relation column that carries the verb
    verb_implies: tuple[int, ...]  # relation implied between person and object, or -1
    entailments: tuple[tuple[int, int], ...]  # (premise, consequence) relation indices
    _index: dict = field(default_factory=dict, compare=False, repr=False)

    # -- sizes -------------------------------------------------------------------------------
    @property
    def num_objects(self) -> int:
        return len(self.objects)

    @property
    def num_relations(self) -> int:
        return len(self.relations)

    @property
    def num_actions(self) -> int:
        return len(self.actions)

    # -- lookups -----------------------------------------------------------------------------
    def object_index(self, name: str) -> int:
        """Index of an object given its AG name, display name, English word or AGQA id."""
        return self._lookup("object", name)

    def relation_index(self, name: str) -> int:
        """Index of a relation given its AG name, English form or AGQA id (``r15``, ``v029``)."""
        return self._lookup("relation", name)

    def action_index(self, name: str) -> int:
        """Index of an action given its Charades id (``c076``) or its English phrase."""
        return self._lookup("action", name)

    def _lookup(self, kind: str, name: str) -> int:
        try:
            return self._index[kind][name]
        except KeyError:
            raise TensorQAError(f"unknown {kind} {name!r}") from None

    def relation_mask(self, *kinds: str) -> np.ndarray:
        """bool[R]: relations of the given kinds."""
        return np.isin(np.array(self.relation_kinds), kinds)

    def entailment_closure(self) -> np.ndarray:
        """bool[R, R]: ``M[p, c]`` is true when relation p entails relation c (reflexive, transitive)."""
        m = np.eye(self.num_relations, dtype=bool)
        for p, c in self.entailments:
            m[p, c] = True
        for k in range(self.num_relations):  # Warshall; R is 54
            m |= m[:, k : k + 1] & m[k : k + 1, :]
        return m

    def merged_action_object(self, a: int) -> int:
        """Action a's object in its merged form (semantics §b.3: c038's towel is blanket), the form
        the store and object references use; NO_OBJECT for actions without one."""
        o = self.action_object[a]
        return self.object_merged_into[o] if o != NO_OBJECT else NO_OBJECT

    def actions_named(self, verb: int, obj: int) -> list[int]:
        """The canonical (not merged-away) action classes with this verb whose object is ``obj``,
        both objects compared merged: what ``ToAction(verb, obj)`` may denote."""
        o = self.object_merged_into[obj]
        return [a for a in range(self.num_actions)
                if self.action_verb[a] == verb and self.action_merged_into[a] == a and self.merged_action_object(a) == o]

    @functools.cached_property
    def hash(self) -> str:
        """Short sha256 of the canonical JSON of every table: identifies this vocabulary."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    def to_json(self) -> str:
        tables = {k: v for k, v in self.__dict__.items() if not k.startswith("_") and k != "hash"}
        return json.dumps(tables, sort_keys=True, separators=(",", ":"))


@functools.cache
def vocab() -> Vocab:
    """The vocabulary tensorqa ships, loaded once."""
    objs = _read_tsv("objects.tsv")
    rels = _read_tsv("relations.tsv")
    verbs = _read_tsv("verbs.tsv")
    acts = _read_tsv("actions.tsv")
    ents = _read_tsv("entailments.tsv")

    obj_pos = {o["ag_name"]: i for i, o in enumerate(objs)}
    rel_pos = {r["ag_name"]: i for i, r in enumerate(rels)}
    rel_id_pos = {r["id"]: i for i, r in enumerate(rels)}
    act_pos = {a["id"]: i for i, a in enumerate(acts)}
    verb_pos = {v["id"]: i for i, v in enumerate(verbs)}

    index: dict[str, dict[str, int]] = {"object": {}, "relation": {}, "action": {}}
    for i, o in enumerate(objs):
        for key in (o["ag_name"], o["name"], o["id"]):
            index["object"][key] = i
        index["object"].setdefault(o["english"], i)
    for i, r in enumerate(rels):
        for key in (r["ag_name"], r["english"], r["id"]):
            index["relation"].setdefault(key, i)
    for v in verbs:  # the five verbs carried by AG relations resolve to those relations, by word and id
        carrier = rel_pos.get(v["relation"], rel_id_pos.get(v["relation"], -1))
        index["relation"].setdefault(v["english"], carrier)
        index["relation"].setdefault(v["id"], carrier)
    for i, a in enumerate(acts):
        index["action"][a["id"]] = i
        target = act_pos[a["merged_into"]] if a["merged_into"] else i
        index["action"].setdefault(a["phrase"], target)

    return Vocab(
        objects=tuple(o["ag_name"] for o in objs),
        object_ids=tuple(o["id"] for o in objs),
        object_english=tuple(o["english"] for o in objs),
        object_merged_into=tuple(obj_pos[o["merged_into"]] if o["merged_into"] else i for i, o in enumerate(objs)),
        relations=tuple(r["ag_name"] for r in rels),
        relation_ids=tuple(r["id"] for r in rels),
        relation_kinds=tuple(r["kind"] for r in rels),
        relation_english=tuple(r["english"] for r in rels),
        actions=tuple(a["id"] for a in acts),
        action_descriptions=tuple(a["charades"] for a in acts),
        action_phrases=tuple(a["phrase"] for a in acts),
        action_verb=tuple(verb_pos[a["verb_id"]] for a in acts),
        action_object=tuple(obj_pos[a["object"]] if a["object"] != "none" else NO_OBJECT for a in acts),
        action_merged_into=tuple(act_pos[a["merged_into"]] if a["merged_into"] else i for i, a in enumerate(acts)),
        verbs=tuple(v["verb"] for v in verbs),
        verb_ids=tuple(v["id"] for v in verbs),
        verb_english=tuple(v["english"] for v in verbs),
        verb_relation=tuple(rel_pos.get(v["relation"], rel_id_pos.get(v["relation"], -1)) for v in verbs),
        verb_implies=tuple(rel_pos[v["implies"]] if v["implies"] else -1 for v in verbs),
        entailments=tuple((rel_pos[e["premise"]], rel_pos[e["consequence"]]) for e in ents),
        _index=index,
    )
