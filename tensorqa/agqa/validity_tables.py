"""The vocabulary facts AGQA's validity rules read (docs/reference/agqa_semantics.md §b), as tensors."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from tensorqa.scenes.vocab import RELATION_KINDS, vocab

# §b.0: relations never asked about
NEGATIVE_RELATIONS = ("notcontacting", "notlookingat")
# §b.0 P-validObjRel: verbs that only ever take one object
SINGLE_OBJECT_VERBS = ("talk", "make", "photograph", "walk", "turn", "pour", "grasp", "cook")
# §b.0 P-validObjRel: common-sense pairs (object, relation)
COMMONSENSE_PAIRS = (
    *(("floor", r) for r in ("standingon", "touching", "behind", "infrontof", "beneath", "above")),
    ("doorknob", "grasp"), ("clothes", "touching"), ("clothes", "wearing"), ("shoe", "touching"), ("shoe", "wearing"),
)
# §b.0 P-pair: object pairs never asked together
CONFUSED_PAIRS = (("food", "sandwich"), ("door", "doorway"), ("dish", "cupglassbottle"))
# §b.0 P-unambiguous: confusable groups
CONFUSABLE_GROUPS = (
    ("bed", "chair", "sofacouch"), ("blanket", "clothes", "towel"), ("book", "papernotebook", "picture"),
    ("closetcabinet", "door", "refrigerator"), ("cupglassbottle", "dish"),
    ("food", "sandwich", "groceries", "medicine"), ("shelf", "table"),
)
# objExists: objects never asked about (§b.1)
OBJ_EXISTS_EXCLUDED = ("clothes", "shoe", "light", "floor", "person", "doorway")
# relExists: relations never asked about (§b.1) besides the negatives; "other relationship" excluded
# as the spec recommends (whether it can occur depends on the graph builder)
REL_EXISTS_EXCLUDED = ("wash", "fix", "laugh", "run", "sittingon", "smile", "sneeze", "stand", "otherrelationship")
# verbs relExists may ask about when absent (§c.2): all but drink, eat, hold, lie, run, sit, sneeze, stand
REL_EXISTS_ABSENT_VERBS_EXCLUDED = ("drink", "eat", "hold", "lie", "run", "sit", "sneeze", "stand")
# relTime: relations never asked about (§b.1)
REL_TIME_EXCLUDED = ("notcontacting", "put", "sittingon", "wash", "fix", "awaken", "run", "smile", "sneeze", "stand", "eating")
# transition actions (§b.0): verbs taking, putting, throwing, closing, opening + c083
TRANSITION_VERBS = ("take", "put", "throw", "close", "open")
TRANSITION_ACTIONS = ("c083",)
MIN_PAIR_KEYFRAMES = 10  # AGQA: object-relation pairs must occur at least 10 times in the dataset
KIND_CODE = {kind: i for i, kind in enumerate(RELATION_KINDS)}  # VocabTables.relation_kind values


@dataclass(frozen=True)
class VocabTables:
    """Vocabulary facts as tensors on one device (index -1 reads the last, neutral entry)."""

    action_object: torch.Tensor  # int64[A + 1]
    action_verb: torch.Tensor  # int64[A + 1]
    action_verb_relation: torch.Tensor  # int64[A + 1] the relation column of the action's verb, -1 none
    relation_verb: torch.Tensor  # int64[R + 1] verb a relation stands for (holding -> hold), -1 none
    relation_kind: torch.Tensor  # int64[R + 1] index into RELATION_KINDS, -1 padding
    negative: torch.Tensor  # bool[R + 1]
    single_object_verb: torch.Tensor  # bool[R + 1]
    commonsense: torch.Tensor  # bool[O + 1, R + 1]
    confused_pair: torch.Tensor  # bool[O + 1, O + 1]
    confusable: torch.Tensor  # bool[O, O] (o, p): p is a confusable object of o (o != p)
    transition: torch.Tensor  # bool[A + 1]
    obj_exists_excluded: torch.Tensor  # bool[O + 1]
    rel_exists_excluded: torch.Tensor  # bool[R + 1]
    rel_exists_absent_ok: torch.Tensor  # bool[R + 1]
    rel_time_excluded: torch.Tensor  # bool[R + 1]
    take_verb: int
    put_verb: int


def _rel_words(names) -> list[int]:
    """Relation columns named by AG name or by verb (``wash`` -> the washing column)."""
    v = vocab()
    out = []
    for n in names:
        if n in v.relations:
            out.append(v.relations.index(n))
        else:
            col = v.verb_relation[v.verbs.index(n)]
            if col >= 0:
                out.append(col)
    return out


@functools.cache
def vocab_tables(device: str = "cpu") -> VocabTables:
    v = vocab()
    O, R, A = v.num_objects, v.num_relations, v.num_actions
    merged_obj = [v.object_merged_into[o] if o >= 0 else -1 for o in v.action_object]
    relation_verb = [-1] * (R + 1)
    for verb, col in enumerate(v.verb_relation):
        if col >= 0:
            relation_verb[col] = verb

    def mask(n, idx):
        m = torch.zeros(n, dtype=torch.bool)
        m[list(idx)] = True
        return m

    commonsense = torch.zeros(O + 1, R + 1, dtype=torch.bool)
    for o, r in COMMONSENSE_PAIRS:
        for col in _rel_words([r]):
            commonsense[v.objects.index(o), col] = True
    confused = torch.zeros(O + 1, O + 1, dtype=torch.bool)
    for a, b in CONFUSED_PAIRS:
        i, j = v.objects.index(a), v.objects.index(b)
        confused[i, j] = confused[j, i] = True
    confusable = torch.zeros(O, O, dtype=torch.bool)
    for group in CONFUSABLE_GROUPS:
        ids = [v.objects.index(o) for o in group]
        for i in ids:
            for j in ids:
                confusable[i, j] = i != j
    single = mask(R + 1, _rel_words(SINGLE_OBJECT_VERBS))
    verbs_absent_ok = [v.verb_relation[i] for i, name in enumerate(v.verbs)
                       if name not in REL_EXISTS_ABSENT_VERBS_EXCLUDED and v.verb_relation[i] >= 0]
    contact_absent_ok = [i for i, k in enumerate(v.relation_kinds) if k == "contact" and v.relations[i] != "otherrelationship"]
    transition = [(v.verbs[v.action_verb[a]] in TRANSITION_VERBS) or v.actions[a] in TRANSITION_ACTIONS for a in range(A)]
    t = VocabTables(
        action_object=torch.tensor(merged_obj + [-1]),
        action_verb=torch.tensor(list(v.action_verb) + [-1]),
        action_verb_relation=torch.tensor([v.verb_relation[vb] if vb >= 0 else -1 for vb in v.action_verb] + [-1]),
        relation_verb=torch.tensor(relation_verb),
        relation_kind=torch.tensor([KIND_CODE[k] for k in v.relation_kinds] + [-1]),
        negative=mask(R + 1, _rel_words(NEGATIVE_RELATIONS)),
        single_object_verb=single,
        commonsense=commonsense,
        confused_pair=confused,
        confusable=confusable,
        transition=torch.tensor(transition + [False]),
        obj_exists_excluded=mask(O + 1, [v.objects.index(o) for o in OBJ_EXISTS_EXCLUDED]),
        rel_exists_excluded=mask(R + 1, _rel_words(REL_EXISTS_EXCLUDED)),
        rel_exists_absent_ok=mask(R + 1, contact_absent_ok + verbs_absent_ok),
        rel_time_excluded=mask(R + 1, _rel_words(REL_TIME_EXCLUDED)),
        take_verb=v.verbs.index("take"),
        put_verb=v.verbs.index("put"),
    )
    return VocabTables(**{k: (x.to(device) if isinstance(x, torch.Tensor) else x) for k, x in t.__dict__.items()})
