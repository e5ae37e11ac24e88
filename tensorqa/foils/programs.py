"""Caption and foil programs, and their scalar proof: a text is (program, answer), true on a video iff
the program executes there to that answer. AGQA-syntax programs (Exists over objects in a window,
relations or actions) run on the engine's scalar executor (``run_program``); AGQA's syntax has no
count, instance order or first / last over instances, so these forms of our own run by the plain
loops below (the scalar twin of ``generate``):

    Count(Iterate(video, Filter(frame, [objects])))  objects the person interacts with (objExists rule)
    Count(Instances(<action>))                        instances; "<n>", or "several" (n >= 2)
    Order(<action x>, <action y>)                     "before": every x ends before every y starts
    Extreme(first|last, actions)                      the unique instance that starts first / ends last
    Together(<r1>, <o1>, <r2>, <o2>)                  some keyframe has r1 o1 and r2 o2 (actant swap)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tensorqa.agqa.executor import run_program
from tensorqa.agqa.semantics import AGQA
from tensorqa.engine.primitives.filter import interaction_relations
from tensorqa.errors import TensorQAError
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.vocab import vocab


@dataclass(frozen=True)
class Text:
    """One caption or foil as a proposition: ``program`` executes to ``answer`` iff the text is true."""

    program: str
    answer: str


# -- builders (the generator's and the records' one source of program strings) -------------------------
def window_program(action: int | None, kind: str = "while") -> str:
    """AGQA's ``Localize(while|before|after, <action>)``, or the whole video (action None)."""
    return "video" if action is None else f"Localize({kind}, {vocab().action_phrases[action]})"


def exists_object(o: int, action: int | None = None, kind: str = "while") -> str:
    return f"Exists({vocab().objects[o]}, Iterate({window_program(action, kind)}, Filter(frame, [objects])))"


def exists_relation(o: int, r: int) -> str:
    v = vocab()
    return f"Exists({v.objects[o]}, Iterate(video, Filter(frame, [relations, {v.relation_english[r]}, objects])))"


def exists_action(a: int) -> str:
    return f"Exists({vocab().action_phrases[a]}, Iterate(video, Filter(frame, [actions])))"


COUNT_OBJECTS = "Count(Iterate(video, Filter(frame, [objects])))"


def count_times(a: int) -> str:
    return f"Count(Instances({vocab().action_phrases[a]}))"


def order(x: int, y: int) -> str:
    v = vocab()
    return f"Order({v.action_phrases[x]}, {v.action_phrases[y]})"


def extreme(which: str) -> str:
    return f"Extreme({which}, actions)"


def together(r1: int, o1: int, r2: int, o2: int) -> str:
    v = vocab()
    return f"Together({v.relation_english[r1]}, {v.objects[o1]}, {v.relation_english[r2]}, {v.objects[o2]})"


# -- the scalar twin of our own forms ---------------------------------------------------------------------
_COUNT_TIMES = re.compile(r"^Count\(Instances\((?P<a>[^()\[\],]+)\)\)$")
_ORDER = re.compile(r"^Order\((?P<x>[^()\[\],]+), (?P<y>[^()\[\],]+)\)$")
_EXTREME = re.compile(r"^Extreme\((?P<w>first|last), actions\)$")
_TOGETHER = re.compile(r"^Together\((?P<r1>[^()\[\],]+), (?P<o1>[^()\[\],]+), (?P<r2>[^()\[\],]+), (?P<o2>[^()\[\],]+)\)$")


def interaction_mask() -> np.ndarray:
    """bool[R]: the relations by which the person "interacts with" an object (AGQA's objExists rule)."""
    mask = interaction_relations(AGQA.interaction_rule("objExists"))
    if mask is None:  # a semantics whose rule is "any annotated object"
        raise TensorQAError("foils: the objExists rule of this semantics reads obj, not relations")
    return mask


def count_objects(scene: VideoScene) -> int:
    mask = interaction_mask()
    found = set()
    for f in range(scene.num_frames):
        for o in range(1, scene.rel.shape[1]):  # 0 is the person
            if any(scene.rel[f, o, r] for r in np.nonzero(mask)[0]):
                found.add(o)
    return len(found)


def graph_instances(scene: VideoScene) -> list[tuple[int, float, float]]:
    """(class, start, end) of the instances that cover a keyframe: as in AGQA's graph, one that covers
    none is not there."""
    secs = [np.float32(x) for x in scene.frame_secs]
    out = []
    for c, s, e in zip(scene.inst_cls, scene.inst_start, scene.inst_end):
        s, e = np.float32(s), np.float32(e)
        if any(s <= t <= e for t in secs):
            out.append((int(c), float(s), float(e)))
    return out


def instances(scene: VideoScene, a: int) -> list[tuple[float, float]]:
    return [(s, e) for c, s, e in graph_instances(scene) if c == a]


def extreme_action(scene: VideoScene, which: str) -> int | None:
    """The class of the one instance that starts first (ends last); None on a tie or no instance."""
    found = graph_instances(scene)
    if not found:
        return None
    key = [s if which == "first" else -e for _, s, e in found]
    best = min(key)
    winners = [c for (c, _, _), k in zip(found, key) if k == best]
    return winners[0] if len(winners) == 1 else None


def evaluate(program: str, scene: VideoScene) -> str | None:
    """The answer of ``program`` on one video; None where it has none (undefined there)."""
    v = vocab()
    if program == COUNT_OBJECTS:
        return str(count_objects(scene))
    if m := _COUNT_TIMES.match(program):
        return str(len(instances(scene, v.action_index(m["a"]))))
    if m := _ORDER.match(program):
        xs, ys = instances(scene, v.action_index(m["x"])), instances(scene, v.action_index(m["y"]))
        if not xs or not ys:
            return None
        if max(e for _, e in xs) < min(s for s, _ in ys):
            return "before"
        if max(e for _, e in ys) < min(s for s, _ in xs):
            return "after"
        return None
    if m := _TOGETHER.match(program):
        r1, r2 = v.relation_index(m["r1"]), v.relation_index(m["r2"])
        o1, o2 = v.object_index(m["o1"]), v.object_index(m["o2"])
        both = any(scene.rel[f, o1, r1] and scene.rel[f, o2, r2] for f in range(scene.num_frames))
        return "yes" if both else "no"
    if m := _EXTREME.match(program):
        a = extreme_action(scene, m["w"])
        return None if a is None else v.action_phrases[a]
    answer = run_program(program, scene)
    return answer if isinstance(answer, str) else None  # Undefined -> None


def holds(text: Text, scene: VideoScene, evaluate=evaluate) -> bool | None:
    """True / False where the program is defined on the scene, None where it is not (``evaluate``:
    this module's, or the static scenes' twin)."""
    got = evaluate(text.program, scene)
    if got is None:
        return None
    if text.answer == "several":
        return int(got) >= 2
    return got == text.answer
