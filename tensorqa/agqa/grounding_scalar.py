"""The scalar reference of :mod:`.grounding`: one record at a time, written to be read (plain loops
over its frame's parts; a reference phrase's wording variant is found by matching the question
text). ``grounding.ground_record`` is its public face; the bulk path sends it the rows it cannot
re-render."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tensorqa.errors import TensorQAError
from tensorqa.engine.scalar import twin
from tensorqa.engine.scalar.first_last import choose_stretch, episode_stretch
from tensorqa.engine.scalar.video import NoAnswer, ScalarVideo, Window
from tensorqa.scenes.batch import VideoScene
from tensorqa.agqa.semantics import Semantics
from tensorqa.agqa.templates import TEMPLATES
from tensorqa.scenes.vocab import vocab
from tensorqa.agqa.grounding_text import (
    EVIDENCE_OF_PROGRAM, FORWARD_PROGRAMS, ACT_EXISTS, ACTION_SLOTS, ACTIONS, CHOOSE, EXISTS_OBJ, NOTHING,
    REL_ANY, SIDE_OBJ, SIDE_REL, STRETCH, VIDEO_OPENING, VIDEO_OPENING_SPAN, ZERO_WIDTH_SHIFT,
    action_reference_layout, action_reference_relations, action_reference_text, frame_parts, vocabulary_ids,
    object_phrases, object_reference_phrases, window_parts)


class ScalarGroundingVideo:
    """One video's scene for the scalar path. Keyframe positions index the scene's keyframes in
    frame order (``VideoScene.sorted``); runs of keyframes are half-open ``(lo, hi)``."""

    def __init__(self, scene: VideoScene, sem: Semantics):
        s = scene.sorted()
        self.video_id, self.sem, self.F = s.video_id, sem, s.num_frames
        self.names = [f"{f:06d}" for f in s.frame_ids.tolist()]
        self.rel = s.rel  # bool[F, O, R]
        self.obj = s.obj  # bool[F, O]
        # instances with keyframes (start <= secs <= end in float32, as SceneBatch.inst_frames), in
        # (start, end, class) order: class -> [(first keyframe, last keyframe), ...]
        self.ranges: dict[int, list[tuple[int, int]]] = {}
        for n, a in enumerate(s.inst_cls.tolist()):
            kf = [f for f in range(self.F) if s.inst_start[n] <= s.frame_secs[f] <= s.inst_end[n]]
            if kf:
                self.ranges.setdefault(a, []).append((kf[0], kf[-1]))
        self.classes = set(s.inst_cls.tolist())  # every class with an instance has a cNNN/1 vertex
        self.scalar = ScalarVideo(s)

    # -- id lists --------------------------------------------------------------------------------------
    def frames(self, lo: int, hi: int) -> list[str]:
        return self.names[lo:hi]

    def where(self, prefix: str, test: Callable[[int], bool], lo: int, hi: int) -> list[str]:
        return [f"{prefix}/{self.names[f]}" for f in range(lo, hi) if test(f)]

    def instance(self, a: int) -> list[str]:
        return [f"{vocab().actions[a]}/1"] if a in self.classes else []

    def occurs(self, f: int, r: int) -> bool:
        return bool(self.rel[f, :, r].any())

    def interacts(self, f: int, o: int, context: str) -> bool:
        return bool(self.scalar.contact(self.sem.interaction_rule(context))[f, o])

    # -- runs of keyframes ---------------------------------------------------------------------------------
    def instance_range(self, a: int, last_instance: bool = False) -> tuple[int, int]:
        ranges = self.ranges.get(a)
        if not ranges:
            raise TensorQAError(f"sg_grounding: video {self.video_id}: action {vocab().actions[a]} has no keyframe")
        return ranges[-1] if last_instance else ranges[0]

    # the window and evidence rules are the scalar executor's (engine/scalar): one rule each
    def _run(self, what: str, rule: Callable[[], Any]):
        try:
            return rule()
        except NoAnswer as e:
            raise TensorQAError(f"sg_grounding: video {self.video_id}: no {what} ({e})") from None

    def window(self, kind: str, x: int, y: int) -> tuple[int, int]:
        """Localization window (docs/reference/agqa_semantics.md §a.1), as [lo, hi)."""
        for a in ((x,) if kind != "between" else (x, y)) if kind != "video" else ():
            self.instance_range(a)  # a localizing action without keyframes: the record is not about this video
        w = self._run(f"{kind} window", lambda: twin("localize")(self.scalar, self.sem, kind, x, y))
        return (w.frames[0], w.frames[-1] + 1) if w.frames else (0, 0)

    def side(self, a: int, answer: str) -> tuple[int, int]:
        """The compare side (§a.2) that a relTime / objTime answer names."""
        self.instance_range(a)
        if answer not in ("before", "after"):
            raise TensorQAError(f"sg_grounding: video {self.video_id}: compare answer {answer!r} is not before / after")
        before, _, after = self._run("compare windows", lambda: twin("compare_windows")(self.scalar, self.sem, a))
        frames = before if answer == "before" else after
        return (frames[0], frames[-1] + 1) if frames else (0, 0)

    def _frames(self, lo: int, hi: int) -> Window:
        return Window("evidence", list(range(lo, hi)))

    def stretch(self, r: int, lo: int, hi: int, forward: bool) -> tuple[int, int]:
        """objFirst (forward) / objLast (backward) stretch of relation r inside [lo, hi)."""
        frames = self._run(f"{'first' if forward else 'last'} stretch of relation {vocab().relation_ids[r]}",
                           lambda: episode_stretch(self.scalar, self.sem, self._frames(lo, hi), r, forward))
        return frames[0], frames[-1] + 1

    def choose_stretch(self, r: int, o1: int, o2: int, lo: int, hi: int, forward: bool) -> tuple[int, int]:
        """The chosen object's stretch of objFirstChoose / objLastChoose."""
        _, frames = self._run(f"choose stretch for relation {vocab().relation_ids[r]}",
                              lambda: choose_stretch(self.scalar, self.sem, self._frames(lo, hi), o1, o2, r, forward))
        return (frames[0], frames[-1] + 1) if frames else (lo, lo)

    # -- the ids of a question's arguments -----------------------------------------------------------------
    def arguments(self, program: str, answer: str, o1: int, o2: int, r: int, a1: int, a2: int,
                  window: tuple[int, int]) -> dict[str, list[str]]:
        """{slot: ids} for the object / object2 / relation / action / action2 slots."""
        v, rel = vocab(), self.rel
        cat = EVIDENCE_OF_PROGRAM[program]
        if cat == NOTHING:
            return {}
        if cat == ACTIONS:
            return {"action": self.instance(a1), "action2": self.instance(a2)}
        if cat == ACT_EXISTS:
            return {"action": self.instance(a1)}
        if cat in (SIDE_REL, SIDE_OBJ):
            lo, hi = self.side(a1, answer)
            if cat == SIDE_REL:
                return {"relation": self.where(v.relation_ids[r], lambda f: self.occurs(f, r), lo, hi),
                        "action": self.instance(a1)}
            return {"object": self.where(v.object_ids[o1], lambda f: self.interacts(f, o1, "objTime"), lo, hi),
                    "action": self.instance(a1)}
        lo, hi = window
        if cat == STRETCH:
            lo, hi = self.stretch(r, lo, hi, program in FORWARD_PROGRAMS)
        elif cat == CHOOSE:
            lo, hi = self.choose_stretch(r, o1, o2, lo, hi, program in FORWARD_PROGRAMS)
        if cat == EXISTS_OBJ:
            return {"object": self.where(v.object_ids[o1], lambda f: self.interacts(f, o1, "objExists"), lo, hi)}
        out = {}
        if o1 >= 0:
            out["object"] = self.where(v.object_ids[o1], lambda f: rel[f, o1, r], lo, hi)
        if o2 >= 0:
            out["object2"] = self.where(v.object_ids[o2], lambda f: rel[f, o2, r], lo, hi)
        if cat in (REL_ANY, STRETCH):
            out["relation"] = self.where(v.relation_ids[r], lambda f: self.occurs(f, r), lo, hi)
        else:
            out["relation"] = self.where(v.relation_ids[r], lambda f: rel[f, o1, r] or (o2 >= 0 and rel[f, o2, r]), lo, hi)
        return out

    def reference(self, kind: str, r: int, referent: int) -> list[str]:
        """An object reference inside an indirect-object action: the referent where the reference's
        relation holds with it, over the keyframes that define the reference."""
        lo, hi = (0, self.F) if kind == "whole" else self.stretch(r, 0, self.F, kind == "first")
        return self.where(vocab().object_ids[referent], lambda f: self.rel[f, referent, r], lo, hi)


def _index(table: str, value: str | None) -> int:
    if not value:
        return -1
    try:
        return vocabulary_ids()[table][value]
    except KeyError:
        raise TensorQAError(f"sg_grounding: unknown {table} id {value!r}") from None


class _Cursor:
    """Reads a question left to right along its frame, collecting ``(start, end, ids)`` keys."""

    def __init__(self, video: ScalarGroundingVideo, row: Mapping[str, Any], act: dict[str, int], refs: dict):
        self.video, self.row, self.act, self.refs = video, row, act, refs
        self.question, self.pos, self.keys = row["question"], 0, []

    def fail(self, what: str) -> TensorQAError:
        row = self.row
        return TensorQAError(f"sg_grounding: record {row.get('question_id')}: question {self.question!r} does not "
                             f"follow frame {TEMPLATES[row['template']].frames[int(row['frame'])]!r} of "
                             f"{row['template']} ({what} at {self.pos})")

    def literal(self, text: str) -> None:
        if not self.question.startswith(text, self.pos):
            raise self.fail(f"{text!r} expected")
        self.pos += len(text)

    def match(self, candidates: Iterable[str]) -> str:
        for text in candidates:
            if self.question.startswith(text, self.pos):
                return text
        raise self.fail("no phrase of the record's slots")

    def key(self, text: str, ids: list[str]) -> None:
        """Key the span of ``text`` at the cursor and step over it."""
        self.keys.append((self.pos, self.pos + len(text), ids))
        self.pos += len(text)

    def action(self, slot: str) -> str:
        """Match an action slot's phrase at the cursor; key the inner object reference phrase(s)."""
        v, pos = vocab(), self.pos
        a, ref = self.act[slot], self.row.get(slot + "_ref") or ""
        if not ref:
            return self.match((v.action_phrases[a],))
        for phrase in object_reference_phrases(ref, self.refs[slot]):  # any wording variant
            text = action_reference_text(a, phrase)
            if self.question.startswith(text, pos):
                inner = self.video.reference(ref, self.refs[slot], v.merged_action_object(a))
                for k, before in enumerate(action_reference_layout(a)):
                    start = pos + before + k * len(phrase)
                    self.keys.append((start, start + len(phrase), inner))
                return text
        raise self.fail(f"no wording of the indirect-object action {v.actions[a]}")

    def window(self, kind: str, window: tuple[int, int]) -> None:
        """The window slot: a zero-width key for the whole video, else X's (and Y's) keys, then the phrase's."""
        if kind == "video":
            z = max(self.pos + ZERO_WIDTH_SHIFT, 0)
            self.keys.append((z, z, self.video.frames(0, self.video.F)))
            return
        start = self.pos
        for is_slot, piece in window_parts(kind):
            if not is_slot:
                self.literal(piece)
            else:
                slot = "window_action" if piece == "action" else "window_action2"
                self.key(self.action(slot), self.video.instance(self.act[slot]))
        self.keys.append((start + 1, self.pos, self.video.frames(*window)))


def ground_one(video: ScalarGroundingVideo, row: Mapping[str, Any]) -> dict[str, list[str]]:
    """The sg_grounding of one record on its video (scalar reference)."""
    v = vocab()
    template = row["template"]
    spec = TEMPLATES.get(template)
    if spec is None:
        raise TensorQAError(f"sg_grounding: record {row.get('question_id')}: unknown template {template!r}")
    parts = frame_parts(template, int(row["frame"]))
    o1, o2 = _index("object", row["object"]), _index("object", row["object2"])
    r = _index("relation", row["relation"])
    act = {slot: _index("action", row[slot]) for slot in ACTION_SLOTS}
    kind = row["window"] if spec.has_window else "video"
    window = video.window(kind, act["window_action"], act["window_action2"])
    args = video.arguments(spec.program, row["answer"], o1, o2, r, act["action"], act["action2"], window)
    indirect = any(row.get(slot + "_ref") for slot in ACTION_SLOTS)
    cur = _Cursor(video, row, act, action_reference_relations(spec.program, row["program"]) if indirect else {})
    if cur.question.startswith(VIDEO_OPENING):
        cur.keys.append((0, VIDEO_OPENING_SPAN, video.frames(0, video.F)))
    for is_slot, part in parts:
        if not is_slot:
            cur.literal(part)
        elif part in ("object", "object2"):
            ref = row[part + "_ref"]
            phrases = (object_reference_phrases(ref, _index("relation", row[part + "_ref_relation"])) if ref
                       else (object_phrases()[o1 if part == "object" else o2],))
            cur.key(cur.match(phrases), args.get(part, []))
        elif part == "relation":
            cur.key(cur.match((v.relation_english[r],)), args.get("relation", []))
        elif part in ("action", "action2"):
            cur.key(cur.action(part), args.get(part, []))
        elif part == "window":
            cur.window(kind, window)
        else:
            raise cur.fail(f"unknown placeholder {{{part}}}")
    if cur.pos != len(cur.question):
        raise cur.fail("text left over")
    return {f"{a}-{b}": ids for a, b, ids in cur.keys}
