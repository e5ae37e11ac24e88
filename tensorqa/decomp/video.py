"""One video's questions as AGQA-Decomp DAGs of sub-questions with exact answers:
``decompose_video(video_id, questions, scene, semantics) -> VideoDecomposition``.

Each program is split along :mod:`.subquestions`' table; every sub-question is answered by the scalar
executor (object presence and the collections, not AGQA syntax, here with the same window rules). A composition
is kept only when every child has an answer and they pass its official consistency check
(:func:`consistency_violations`), else with the table's fallback children, else it is counted as left out
(chiefly Between, and under AGQA's semantics an objTime Choose whose object is only in "other relationship" on
the other side). Identical sub-questions of a video are one node, one text and key (``<video>-d<n>``; a pool
question keeps its own text and ``question_id``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.agqa.program import Node, Word, verb_index

from tensorqa.engine.scalar import Undefined, twin
from tensorqa.engine.scalar.video import Window
# one executor per video: run_program rebuilds the video's tables on every call
from tensorqa.agqa.executor import VideoExecutor
from tensorqa.scenes.batch import VideoScene
from tensorqa.agqa.semantics import get_semantics, resolve_to_action
from tensorqa.agqa.templates.catalogue import template_spec
from tensorqa.scenes.vocab import vocab
from tensorqa.decomp.constants import BANNED_TYPES, EQUALS_PARENT_TYPE, EQUALS_PROGRAM_SLICE, IC_CHECKER, YES_NO_TYPES
from tensorqa.decomp.subquestions import PRESENT, SubQuestion, compositions, from_program, reference_question, texts


def consistency_violations(parent_type: str, rule: str, answer, kids: list[tuple], equals_texts=None) -> list[str]:
    """The consistency rules a composition breaks with every answer taken as the prediction (:mod:`.consistency`,
    both directions). kids: per child (raw type, answer, program, has compositions); equals_texts: for Choose, per
    child the text of the first child of its two-child Equals composition, or None."""
    checker = IC_CHECKER.get(rule)
    if checker is None or parent_type in BANNED_TYPES:
        return []
    q, types, answers = answer, [k[0] for k in kids], [k[1] for k in kids]
    valid = [a for t, a in zip(types, answers) if t not in BANNED_TYPES and t in YES_NO_TYPES]
    if checker == "implies":
        return _broken(rule, q == "yes" and any(a != "yes" for a in valid), q != "no" and "no" in valid)
    if checker == "conjunction":
        return _two_way(rule, q, all(a == "yes" for a in valid), any(a == "no" for a in valid)) if valid else []
    if checker == "equals" and parent_type != EQUALS_PARENT_TYPE:
        return []
    if len(kids) != 2:
        return [f"{rule}: {len(kids)} children"]
    if types[0] in BANNED_TYPES or types[1] in BANNED_TYPES:
        return []
    a1, a2 = answers
    if checker == "xor":
        return _two_way(rule, q, a1 == "yes" and a2 == "no")
    if checker == "equals":
        if kids[0][3]:  # the first child is a question with children of its own: answers must match
            return _two_way(rule, q, a1 == a2)
        # the first child is the object's existence: the object is read from its program
        hit, y1 = a2 == kids[0][2][EQUALS_PROGRAM_SLICE], a1 == "yes"
        return _broken(rule, (q == "yes" or hit) and not (q == "yes" and hit and y1),
                       (q == "no" or not hit or not y1) and (q != "no" or hit))
    # choose
    first, second = a1 == "yes" and a2 == "no", a1 == "no" and a2 == "yes"
    if q in ("before", "after"):
        return [] if (first if q == "before" else second) else ["Choose Temporal"]
    if equals_texts is None or None in equals_texts:
        return []
    for text, holds in zip(equals_texts, (first, second)):
        if f"{'None' if q is None else q} exist" in text:
            return [] if holds else ["Choose Object"]
    return []


def _two_way(rule: str, q, holds: bool, fails: bool | None = None) -> list[str]:
    """Parent = yes <=> ``holds``, parent = no <=> ``fails`` (default: not ``holds``; a conjunction's children
    may be neither)."""
    return _broken(rule, (q == "yes") != holds, (q == "no") != (not holds if fails is None else fails))


def _broken(rule: str, yes: bool, no: bool) -> list[str]:
    return [f"{rule} {w}" for w, broken in (("Yes", yes), ("No", no)) if broken]


@dataclass(eq=False)
class _Node:
    sq: SubQuestion
    answer: object                      # str, list[str], or None (no answer on this video)
    text: str | None = None
    key: str | None = None
    comps: list | None = None           # kept compositions [(rule, [_Node, ...])], once computed
    main: bool = False


@dataclass
class VideoDecomposition:
    """The DAGs of one video's questions: ``hierarchies`` (the per-video JSON), ``isolated`` entries,
    rows of the Parquet tables, and ``stats`` (dag_nodes, rules, dropped {"rule|reason": n}, fallbacks,
    text_collisions)."""

    video_id: str
    hierarchies: dict = field(default_factory=dict)
    isolated: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    dags: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)


class _VideoDecomposer:
    """Answers, texts and compositions of one video's sub-questions, each computed once."""

    def __init__(self, video_id: str, scene: VideoScene, semantics):
        self.video_id = video_id
        self.sem = get_semantics(semantics)
        self.executor = VideoExecutor(scene, self.sem)
        self.frame_ids = np.asarray(self.executor.video.frame_ids)  # ascending
        self.by_program: dict[str, _Node] = {}
        self.text_owner: dict[str, str] = {}
        self.next_key = 0
        self.dropped: Counter = Counter()
        self.fallbacks: Counter = Counter()
        self.collisions = 0

    # -- answers ------------------------------------------------------------------------------------
    def answer(self, sq: SubQuestion):
        """The sub-question's answer on this video; None when it has none."""
        v = vocab()
        if sq.kind == PRESENT:
            present = twin("present_objects")(self.executor.video)[v.object_index(sq.slot("object").text)]
            return "yes" if present else "no"
        if sq.kind in ("objsWith", "objsAll", "actsAll"):
            frames = self.executor.window_frames(sq.window)
            if isinstance(frames, Undefined):
                return None
            # the window's keyframe positions, for the window filters' scalar twins
            video, pos = self.executor.video, np.searchsorted(self.frame_ids, np.asarray(frames, self.frame_ids.dtype))
            w = Window(sq.window_kind, pos.tolist())
            if sq.kind == "actsAll":
                return [v.action_phrases[int(a)] for a in np.flatnonzero(twin("actions_in")(video, w))]
            if sq.kind == "objsWith":
                objs = twin("relate")(video, w)[:, v.relation_index(sq.slot("relation").text)]
            else:  # the objects objWhatGeneral picks from
                objs = twin("contacted")(video, w, self.sem.interaction_rule("objWhatGeneral"))
            return [v.object_english[int(o)] for o in np.flatnonzero(objs)]
        answer = self.executor.run(sq.tree)  # as run_program(sq.tree, scene, semantics)
        return None if isinstance(answer, Undefined) else answer

    def node(self, sq: SubQuestion) -> _Node:
        n = self.by_program.get(sq.program)
        if n is None:
            n = self.by_program[sq.program] = _Node(sq, self.answer(sq))
        return n

    def action_class(self, node: Node) -> int:
        """The class an action argument names on this video (ToAction resolves through its object)."""
        v = vocab()
        if isinstance(node, Word):
            return v.action_index(node.text)
        verb = verb_index(node.args[0].text)
        obj = node.args[1]
        name = obj.text if isinstance(obj, Word) else self.node(reference_question(obj)).answer
        o = v.object_index(name)
        classes = v.actions_named(verb, o)
        if len(classes) > 1:
            seen = {i.cls for i in self.executor.video.instances}  # the instances with keyframes
            present = [a for a in classes if a in seen]
            a = resolve_to_action(present, self.sem)  # as the executor: c043 beside c044 (§b.3)
            classes = [a] if a is not None else present
        if len(classes) != 1:
            raise TensorQAError(f"{self.video_id}: {node} names {len(classes)} actions")
        return classes[0]

    # -- names --------------------------------------------------------------------------------------
    def claim(self, n: _Node, candidates: list[str]) -> None:
        """Give ``n`` the first candidate text no other program of this video uses (numbered if all are)."""
        for t in candidates:
            if self.text_owner.setdefault(t, n.sq.program) == n.sq.program:
                n.text = t
                return
        self.collisions += 1
        base, k = candidates[0], 2
        while self.text_owner.setdefault(f"{base[:-1]} ({k})?", n.sq.program) != n.sq.program:
            k += 1
        n.text = f"{base[:-1]} ({k})?"

    def text(self, n: _Node) -> str:
        if n.text is None:
            self.claim(n, texts(n.sq, self.action_class))
        return n.text

    def key(self, n: _Node) -> str:
        if n.key is None:
            n.key = f"{self.video_id}-d{self.next_key}"
            self.next_key += 1
        return n.key

    # -- compositions -------------------------------------------------------------------------------
    def comps(self, n: _Node) -> list:
        """The kept compositions of a node (children's computed first: the checks read them)."""
        if n.comps is not None:
            return n.comps
        kept = []
        for rule, options in compositions(n.sq):
            reasons = []
            for i, kids in enumerate(options):
                reason = self.check(n, rule, [self.node(k) for k in kids])
                if reason is None:
                    kept.append((rule, [self.node(k) for k in kids]))
                    if i:
                        self.fallbacks[f"{rule}|children {i + 1}"] += 1
                    break
                reasons.append(reason)
            else:
                self.dropped[f"{rule}|{reasons[0]}"] += 1
        n.comps = kept
        return kept

    def check(self, n: _Node, rule: str, nodes: list[_Node]) -> str | None:
        """Why ``n`` cannot be the ``rule`` composition of ``nodes`` ("undefined child" /
        "inconsistent"), or None when it can."""
        if any(k.answer is None for k in nodes):
            return "undefined child"
        for k in nodes:
            self.comps(k)
        eq_texts = [self.equals_text(k) for k in nodes] if IC_CHECKER.get(rule) == "choose" else None
        info = [(k.sq.type, k.answer, k.sq.program, bool(k.comps)) for k in nodes]
        if consistency_violations(n.sq.type, rule, n.answer, info, eq_texts):
            return "inconsistent"
        return None

    def equals_text(self, n: _Node) -> str | None:
        for rule, kids in n.comps or ():
            if rule == "Equals" and len(kids) == 2:
                return self.text(kids[0])
        return None


AMBIGUOUS = object()


def _built_from_answer(d: _VideoDecomposer, q: dict):
    """The question's answer with each ToAction resolved to the action its record's indirect-object
    slots name; AMBIGUOUS when two such slots name two classes one ToAction fits; else None."""
    slots = ("action", "action2", "window_action", "window_action2")
    built = [q[s] for s in slots if q.get(s) and q.get(s + "_ref")]
    if "ToAction(" not in q["program"] or not built:
        return None
    answer = d.executor.run(q["program"], built)
    if isinstance(answer, Undefined):
        return AMBIGUOUS if len(set(built)) > 1 and "matches" in answer.reason else None
    return answer


def decompose_video(video_id: str, questions: list[dict], scene: VideoScene, semantics="agqa") -> VideoDecomposition:
    """Decompose one video's questions (pool rows with question_id, template, question, program,
    answer, in pool order) on its scene; a program whose answer differs from the pool's raises."""
    d = _VideoDecomposer(video_id, scene, semantics)
    mains = []
    for q in questions:  # the questions' own texts first, so that sub-questions never take them
        sq = from_program(template_spec(q["template"]).program, q["program"])
        n = d.node(sq)
        if n.answer is None and _built_from_answer(d, q) in (q["answer"], AMBIGUOUS):
            # its ToAction fits two actions of the video that both take indirect objects (c010 and c011,
            # semantics §b.3): only the record's action tells which, and sub-questions are keyed by program
            d.dropped["ambiguous ToAction"] += 1
            continue
        if n.answer != q["answer"]:
            raise TensorQAError(
                f"{video_id}: question {q['question_id']} ({q['template']}) has answer {q['answer']!r} in the pool "
                f"but {n.answer!r} on the store's scene: is the store the one the pool was generated from, and "
                f"the semantics ({d.sem.name}) the pool's?")
        if n.main:  # the same program asked twice: a node of its own, sharing the children
            n = _Node(sq, n.answer)
        n.main, n.key = True, q["question_id"]
        d.claim(n, [q["question"]])
        mains.append((q, n))

    out = VideoDecomposition(video_id)
    seen: dict[int, _Node] = {}
    dag_nodes, rules = [], Counter()
    for q, m in mains:
        order, ids = [m], {id(m)}
        i = 0
        while i < len(order):
            for _, kids in d.comps(order[i]):
                for k in kids:
                    if id(k) not in ids:
                        ids.add(id(k))
                        order.append(k)
            i += 1
        n_comps = sum(len(d.comps(n)) for n in order)
        out.dags.append({"video_id": video_id, "main_key": m.key, "template": q["template"], "type": m.sq.type,
                         "nodes": len(order), "compositions": n_comps, "isolated": n_comps == 0})
        for n in order:
            seen.setdefault(id(n), n)
        if n_comps == 0:
            out.isolated.append({"type": m.sq.type, "answer": m.answer, "key": m.key, "question": m.text,
                                 "program": m.sq.program, "video_id": video_id})
            continue
        dag_nodes.append(len(order))
        for n in order:
            for rule, _ in d.comps(n):
                rules[rule] += 1
        out.hierarchies[m.key] = {
            "subquestion": {d.text(n): {"type": n.sq.type, "answer": n.answer, "program": n.sq.program,
                                        "key": d.key(n)} for n in order},
            "hierarchy": {d.text(n): {rule: [d.text(k) for k in kids] for rule, kids in d.comps(n)}
                          for n in order if d.comps(n)},
        }
    for n in seen.values():
        answer = json.dumps(n.answer) if isinstance(n.answer, list) else n.answer  # a list as its JSON text
        out.nodes.append({"video_id": video_id, "key": d.key(n), "text": d.text(n), "type": n.sq.type,
                          "answer": answer, "program": n.sq.program, "is_main": n.main})
        for rule, kids in d.comps(n):
            for p, k in enumerate(kids):
                out.edges.append({"video_id": video_id, "parent_key": d.key(n), "rule": rule, "position": p,
                                  "child_key": d.key(k)})
    out.stats = {"dag_nodes": dag_nodes, "rules": dict(rules), "dropped": dict(d.dropped),
                 "fallbacks": dict(d.fallbacks),
                 "text_collisions": d.collisions}
    return out
