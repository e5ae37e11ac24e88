"""Validity rules (docs/reference/agqa_semantics.md §b) as boolean masks over an answer grid.

The grid says where a program *has* an answer; these masks say where AGQA would *ask* it:
not-in-action, valid object-relation pairs (from the dataset's own co-occurrence counts),
confusable-object ambiguity, distinct pairs, negative relations, transition actions, and each
template's own qualifiers. One function per template in ``QUALIFIERS``; each returns
bool[B, *n] of the grid's shape. Everything is a tensor op over the whole grid.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from tensorqa.agqa.grid import AnswerGrid, GridContext, evaluate
from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.localize import AFTER, BEFORE, BETWEEN, VIDEO, WHILE
from tensorqa.engine.windows import WINDOW_KINDS
from tensorqa.agqa.templates.catalogue import TEMPLATES
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




class Cells:
    """Slot ids of the cells of a grid as broadcastable views: ``ids(name)`` has the grid's rank,
    with size 1 on every axis but dimension 0 (videos, or window rows) and its own (-1 = none).
    Predicates are computed on these small views and broadcast to the full grid only when combined."""

    def __init__(self, grid: AnswerGrid, ctx: GridContext, rel_obj_counts: torch.Tensor):
        self.grid, self.ctx = grid, ctx
        self.shape = grid.answer.shape
        self.device = grid.answer.device
        self.t = vocab_tables(str(self.device))
        self.counts = rel_obj_counts  # int64[O, R] keyframes per (object, relation) in the dataset
        self._pairs: torch.Tensor | None = None
        # the batch position of each cell's video, broadcastable (dimension 0 is videos or window rows)
        self.vid = grid.video.reshape([-1] + [1] * (len(self.shape) - 1))
        w = grid.windows
        if w is not None:
            pos = self.ids("window")
            self.kind = w.word[self.vid, pos]
            self.x = w.action[..., 0][self.vid, pos]
            self.y = w.action[..., 1][self.vid, pos]
        else:
            self.kind = torch.full_like(self.vid, VIDEO)
            self.x = self.y = torch.full_like(self.vid, -1)

    def ids(self, name: str) -> torch.Tensor:
        """int64 view broadcastable to the grid: the id each position of axis ``name`` holds
        (window position on ``grid.windows`` for "window")."""
        return self.grid.axis_ids(name)

    def full(self, t: torch.Tensor) -> torch.Tensor:
        return t.expand(self.shape)

    def has(self, name: str) -> bool:
        return name in self.grid.axes

    # -- common predicates (§b.0) -------------------------------------------------------------------
    def not_in_action_object(self, o: torch.Tensor, first_only: bool = False) -> torch.Tensor:
        ao = self.t.action_object
        ok = o != ao[self.x]
        return ok if first_only else ok & (o != ao[self.y])

    def not_in_action_relation(self, r: torch.Tensor, x=None, y=None) -> torch.Tensor:
        x = self.x if x is None else x
        y = self.y if y is None else y
        rv, av = self.t.relation_verb[r], self.t.action_verb
        return ((rv < 0) | (rv != av[x])) & ((rv < 0) | (rv != av[y]))

    def valid_obj_rel(self, o: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """(object, relation) pairs that may be asked: frequent in the dataset, not a single-object
        verb, not commonsense; id -1 (no slot value) never. One lookup in :meth:`_pair_table`."""
        return self._pair_table()[o, r]

    def _pair_table(self) -> torch.Tensor:
        """bool[O + 1, R + 1]: valid_obj_rel for every id pair, with a last row and column of False
        that ids of -1 index (a single gather, however large the grid)."""
        if self._pairs is None:
            O, R = self.counts.shape
            table = torch.zeros(O + 1, R + 1, dtype=torch.bool, device=self.device)
            table[:O, :R] = ((self.counts >= MIN_PAIR_KEYFRAMES) & ~self.t.single_object_verb[None, :R]
                             & ~self.t.commonsense[:O, :R])
            self._pairs = table
        return self._pairs

    def valid_rel(self, r: torch.Tensor) -> torch.Tensor:
        v = vocab()
        bad = self.t.single_object_verb[r] | (r == v.relations.index("wearing")) | (r == v.relations.index("standingon"))
        return ~bad

    def pair(self, o1: torch.Tensor, o2: torch.Tensor) -> torch.Tensor:
        return (o1 != o2) & ~self.t.confused_pair[o1, o2]

    def unambiguous(self, o: torch.Tensor, answer_yes: torch.Tensor) -> torch.Tensor:
        """P-unambiguous: a "no" answer is invalid when a confusable object of o is in the video."""
        b = self.ctx.batch
        present = (b.obj & b.frame_mask[:, :, None]).any(1).float()  # [B, O]
        conf_present = (present @ self.t.confusable.float().T) > 0  # [B, O]: some confusable of o present
        return answer_yes | ~conf_present[self.vid, o.clamp(min=0)]

    def kind_of(self, r: torch.Tensor, *kinds: str) -> torch.Tensor:
        k = self.t.relation_kind[r]
        out = torch.zeros_like(r, dtype=torch.bool)
        for name in kinds:
            out |= k == KIND_CODE[name]
        return out

    def not_negative(self, r: torch.Tensor) -> torch.Tensor:
        return ~self.t.negative[r]

    def window_allowed(self, kinds: tuple[str, ...]) -> torch.Tensor:
        ok = torch.zeros_like(self.kind, dtype=torch.bool)
        for k in kinds:
            ok |= self.kind == WINDOW_KINDS.index(k)
        return ok

    def relate_count(self, r: torch.Tensor) -> torch.Tensor:
        """int64: distinct objects relation r holds with in the cell's window."""
        n = self.ctx.relate("all").sum(2)  # [B, W, R]
        return n[self.vid, self.ids("window"), r.clamp(min=0)]

    def episode_answer(self, template: str, r: torch.Tensor) -> torch.Tensor:
        """int64: the objFirst / objLast (``template``) answer for relation r in the cell's window,
        -1 where it does not exist or is not unique. Evaluated once per batch."""
        def table() -> torch.Tensor:
            g = evaluate(template, self.ctx.batch, self.ctx.semantics, context=self.ctx)
            B, W = self.ctx.windows.word.shape
            out = torch.full((B, W, vocab().num_relations + 1), -1, dtype=torch.long, device=self.device)
            shape = g.answer.shape
            rel = g.axis_ids("relation").expand(shape)
            ok = g.defined & (rel >= 0)
            vid = g.video.reshape(-1, 1).expand(shape)
            out[vid[ok], g.axis_ids("window").expand(shape)[ok], rel[ok]] = g.answer[ok]
            return out
        return self.ctx.cached(f"episode_answer:{template}", table)[self.vid, self.ids("window"), r.clamp(min=0)]

    def occurrence_count(self, r: torch.Tensor) -> torch.Tensor:
        """int64: keyframes of the cell's window at which relation r holds (with any object)."""
        def table() -> torch.Tensor:  # [B, W, R + 1]; the last column (r = -1) is 0
            b = self.ctx.batch
            occurs = (b.rel & b.frame_mask[:, :, None, None]).any(2).float()  # [B, F, R]
            n = torch.bmm(self.ctx.windows.mask.float(), occurs).round().long()  # [B, W, R]
            return torch.cat([n, torch.zeros_like(n[..., :1])], -1)
        return self.ctx.cached("occurrence_count", table)[self.vid, self.ids("window"), r]

    def relates(self, o: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """bool: relation r holds with object o somewhere in the cell's window."""
        rel = self.ctx.relate("all")  # [B, W, O, R]
        return rel[self.vid, self.ids("window"), o.clamp(min=0), r.clamp(min=0)]


# -- per-template rules --------------------------------------------------------------------------------

def _obj_exists(c: Cells) -> torch.Tensor:
    o = c.ids("object")
    return c.not_in_action_object(o) & ~c.t.obj_exists_excluded[o] & c.unambiguous(o, c.grid.answer == 1)


def _obj_rel_exists(c: Cells) -> torch.Tensor:
    o, r = c.ids("object"), c.ids("relation")
    return (c.kind_of(r, "contact", "verb") & c.not_negative(r) & c.valid_obj_rel(o, r)
            & c.not_in_action_object(o, first_only=True))


def _rel_exists(c: Cells) -> torch.Tensor:
    r = c.ids("relation")
    b = c.ctx.batch
    present = (b.rel & b.frame_mask[:, :, None, None]).any(2).any(1)  # [B, R]
    is_present = present[c.vid, r.clamp(min=0)]
    candidate = (is_present & c.kind_of(r, "contact", "verb")) | (~is_present & c.t.rel_exists_absent_ok[r])
    return (candidate & c.not_negative(r) & ~c.t.rel_exists_excluded[r] & c.valid_rel(r)
            & c.not_in_action_relation(r))


def _act_exists(c: Cells) -> torch.Tensor:
    # §b.2 (AGQA 1.0): not one of the window's own actions, and the action's object is among the
    # video's objects or its verb among the video's relations (verb relations included)
    a = c.ids("action")
    b = c.ctx.batch

    def table() -> torch.Tensor:  # bool[B, A + 1]: action a is plausible in the video (last column: -1)
        objects = registry.lookup("present_objects")(b)  # [B, O]
        relations = registry.lookup("present_relations")(b)  # [B, R]
        ao, verb_rel = c.t.action_object[:-1], c.t.action_verb_relation[:-1]
        by_obj = objects[:, ao.clamp(min=0)] & (ao >= 0)[None, :]
        by_verb = relations[:, verb_rel.clamp(min=0)] & (verb_rel >= 0)[None, :]
        return torch.cat([by_obj | by_verb, torch.zeros_like(by_obj[:, :1])], 1)

    plausible = c.ctx.cached("act_exists_plausible", table)[c.vid, a]
    return (a != c.x) & (a != c.y) & plausible


def _and_xor(c: Cells) -> torch.Tensor:
    # grouped by the axes each rule spans, so that only the last two & ops are full-grid sized
    o1, o2, r = c.ids("object"), c.ids("object2"), c.ids("relation")
    first = c.kind_of(r, "contact", "verb") & c.not_negative(r) & c.valid_obj_rel(o1, r) & c.not_in_action_object(o1)
    second = c.valid_obj_rel(o2, r) & c.not_in_action_object(o2)
    return (first & second) & c.pair(o1, o2)


def _answer_object(c: Cells) -> torch.Tensor:
    return torch.where(c.grid.defined, c.grid.answer, torch.full_like(c.grid.answer, -1))


def _obj_what_general(c: Cells) -> torch.Tensor:
    return c.not_in_action_object(_answer_object(c))


def _obj_what(c: Cells) -> torch.Tensor:
    r = c.ids("relation")
    return (c.kind_of(r, "contact", "spatial", "verb") & c.not_negative(r)
            & c.not_in_action_object(_answer_object(c)) & c.not_in_action_relation(r))


def _choose(c: Cells) -> torch.Tensor:
    o1, o2, r = c.ids("object"), c.ids("object2"), c.ids("relation")
    rel_ok = c.kind_of(r, "contact", "spatial", "verb") & c.not_negative(r) & c.not_in_action_relation(r)
    in1, in2 = c.relates(o1, r), c.relates(o2, r)
    first = rel_ok & c.valid_obj_rel(o1, r) & c.not_in_action_object(o1)
    second = c.valid_obj_rel(o2, r) & c.not_in_action_object(o2)
    if c.grid.shape == "objWhatChoose":  # exactly one of the two is the relation's object in W
        return ((first & second) & (in1 ^ in2)) & c.pair(o1, o2)
    # first / last choose: both occur in W, and the objFirst / objLast answer for (relation, W)
    # exists, is unique and is one of the pair
    episode = c.episode_answer("objFirst" if c.grid.shape == "objFirstChoose" else "objLast", r)
    return ((first & in1) & (second & in2)) & c.pair(o1, o2) & ((episode == o1) | (episode == o2))


def _episode(c: Cells) -> torch.Tensor:
    r = c.ids("relation")
    ans = _answer_object(c)
    return (c.kind_of(r, "contact", "spatial", "verb") & c.not_negative(r) & c.not_in_action_object(ans)
            & c.not_in_action_relation(r) & (c.relate_count(r) > 1) & c.valid_obj_rel(ans, r))


def _episode_verify(c: Cells) -> torch.Tensor:
    o, r = c.ids("object"), c.ids("relation")
    ok = (c.kind_of(r, "contact", "spatial", "verb") & c.not_negative(r) & c.valid_obj_rel(o, r) & c.valid_rel(r)
          & c.not_in_action_relation(r) & c.not_in_action_object(o))
    if c.grid.semantics.apply_nonfiring_checks:  # §b.1: the "more than one candidate" check AGQA never fires
        ok &= c.relate_count(r) > 1
    if c.grid.shape == "objLastVerify" and c.grid.semantics.obj_last_verify_needs_two_keyframes:
        # §b.1 objLastVerify: AGQA's "last keyframe of the relation" helper needs two hits in W
        ok &= c.occurrence_count(r) >= 2
    return ok


def _act_answer_not_window_action(c: Cells) -> torch.Tensor:
    ans = _answer_object(c)
    return (ans != c.x) & (ans != c.y)


def _act_first(c: Cells) -> torch.Tensor:
    ans = _answer_object(c)
    return _act_answer_not_window_action(c) & (c.t.action_verb[ans] != c.t.take_verb)


def _act_last(c: Cells) -> torch.Tensor:
    ans = _answer_object(c)
    return _act_answer_not_window_action(c) & (c.t.action_verb[ans] != c.t.put_verb)


def _length(c: Cells) -> torch.Tensor:
    a1, a2 = c.ids("action"), c.ids("action2")
    return ~c.t.transition[a1] & ~c.t.transition[a2] & (a1 != a2)


def _superlative(c: Cells) -> torch.Tensor:
    return ~c.t.transition[_answer_object(c)]


def _act_time(c: Cells) -> torch.Tensor:
    return c.ids("action") != c.ids("action2")


def _rel_time(c: Cells) -> torch.Tensor:
    r, a = c.ids("relation"), c.ids("action")
    none = torch.full_like(a, -1)
    return (c.kind_of(r, "contact", "verb") & ~c.t.rel_time_excluded[r] & c.not_negative(r)
            & c.not_in_action_relation(r, a, none))


def _obj_time(c: Cells) -> torch.Tensor:
    o, a = c.ids("object"), c.ids("action")
    return o != c.t.action_object[a]


RULES = {  # rule name (TemplateSpec.validity) -> the rule
    "obj_exists": _obj_exists,
    "obj_rel_exists": _obj_rel_exists,
    "rel_exists": _rel_exists,
    "act_exists": _act_exists,
    "and_xor": _and_xor,
    "obj_what_general": _obj_what_general,
    "obj_what": _obj_what,
    "choose": _choose,
    "act_answer_not_window_action": _act_answer_not_window_action,
    "episode": _episode,
    "episode_verify": _episode_verify,
    "act_first": _act_first,
    "act_last": _act_last,
    "length": _length,
    "superlative": _superlative,
    "act_time": _act_time,
    "rel_time": _rel_time,
    "obj_time": _obj_time,
}
# template program -> its rule (read from the catalogue's TemplateSpec.validity)
QUALIFIERS = {spec.program: RULES[spec.validity] for spec in TEMPLATES.values()}


def valid_cells(template_program: str, grid: AnswerGrid, ctx: GridContext, rel_obj_counts: torch.Tensor,
                windows: tuple[str, ...], ordered_pairs: bool = True) -> tuple[torch.Tensor, Cells]:
    """bool[B, *n]: cells that are defined, real, of an allowed time kind and pass the template's
    rules; with ``ordered_pairs``, each unordered pair of a two-item slot once (§b.0)."""
    keep, pairs, c = rule_cells(template_program, grid, ctx, rel_obj_counts, windows)
    return (keep & pairs if ordered_pairs and pairs is not None else keep), c


def rule_cells(template_program: str, grid: AnswerGrid, ctx: GridContext, rel_obj_counts: torch.Tensor,
               windows: tuple[str, ...]) -> tuple[torch.Tensor, torch.Tensor | None, Cells]:
    """(keep, pairs, cells): ``keep`` bool[B, *n], the cells that are defined, real, of an allowed
    time kind and pass the template's rules, with both orders of a pair; ``pairs``, a mask of
    the first order of each pair, by id (broadcastable; None when the template has no two-item
    slot or the semantics keeps ordered pairs). ``keep & pairs`` is :func:`valid_cells`, the direct
    cells ``generate`` and ``ablate`` ask."""
    c = Cells(grid, ctx, rel_obj_counts)
    extra = c.window_allowed(windows) if grid.windows is not None else torch.ones((), dtype=torch.bool, device=c.device)
    pairs = None
    if grid.semantics.pairs_as_combinations:  # §b.0: a two-item slot yields each unordered pair once
        for first, second in (("object", "object2"), ("action", "action2")):
            if c.has(first) and c.has(second):
                order = c.ids(first) < c.ids(second)
                pairs = order if pairs is None else pairs & order
    # small masks first: only the final & ops are full-grid sized (grid.defined includes real)
    return (QUALIFIERS[template_program](c) & extra) & grid.defined, pairs, c


__all__ = ["Cells", "QUALIFIERS", "valid_cells", "rule_cells", "vocab_tables", "AFTER", "BEFORE", "BETWEEN", "WHILE"]
