"""Validity rules (docs/reference/agqa_semantics.md §b) as boolean masks over an answer grid: where
AGQA would *ask* what the grid can answer. One rule per template (``QUALIFIERS``), each bool[B, *n]
of the grid's shape, all tensor ops."""

from __future__ import annotations

import torch

from tensorqa.agqa.grid import AnswerGrid, GridContext, evaluate
from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.localize import VIDEO
from tensorqa.engine.windows import WINDOW_KINDS
from tensorqa.agqa.templates.catalogue import TEMPLATES
from tensorqa.scenes.vocab import vocab
from tensorqa.agqa.validity_tables import KIND_CODE, MIN_PAIR_KEYFRAMES, vocab_tables


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


RULES = {f.__name__[1:]: f for f in (  # rule name (TemplateSpec.validity) -> the rule
    _obj_exists, _obj_rel_exists, _rel_exists, _act_exists, _and_xor, _obj_what_general, _obj_what, _choose,
    _act_answer_not_window_action, _episode, _episode_verify, _act_first, _act_last, _length, _superlative,
    _act_time, _rel_time, _obj_time)}
# template program -> its rule (read from the catalogue's TemplateSpec.validity)
QUALIFIERS = {spec.program: RULES[spec.validity] for spec in TEMPLATES.values()}


def rule_cells(template_program: str, grid: AnswerGrid, ctx: GridContext, rel_obj_counts: torch.Tensor,
               windows: tuple[str, ...]) -> tuple[torch.Tensor, torch.Tensor | None, Cells]:
    """(keep, pairs, cells): ``keep`` bool[B, *n], the defined, real cells of an allowed time kind passing
    the template's rules, both orders of a pair; ``pairs``, the first order of each pair by id (None without
    a two-item slot or under ordered pairs): ``keep & pairs`` asks each unordered pair once (§b.0)."""
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


__all__ = ["Cells", "QUALIFIERS", "rule_cells", "vocab_tables"]
