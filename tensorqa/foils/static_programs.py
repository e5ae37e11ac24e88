"""Captions and foils on static (CLEVR) scenes as CLEVR programs, and their scalar proof.

A description is a key ``(size, color, material, shape)`` of class ids, -1 where unsaid (a shape
unsaid reads "thing"); :data:`KEYS` holds all 324, key id = row. A text is ``Text(program, answer)``:
CLEVR's program JSON (a string, one records column) and what ``tensorqa.clevr.run_program`` must
return (``exist``: yes / no; ``count``: the number, "several" for >= 2). A relation text's first
branch ``unique`` makes "the A" definite: it has an answer only where both descriptions pick out one
object. Words are CLEVR's class names, so a false word is false under every synonym.
"""

from __future__ import annotations

import json

from tensorqa.clevr.constants import KEY_RADIX
from tensorqa.clevr.keys import all_keys
from tensorqa.clevr.scalar import INVALID, run_program
from tensorqa.foils.programs import Text, holds as video_holds
from tensorqa.scenes.static_batch import ATTRS, RELATIONS, clevr_vocab

KEYS = all_keys().numpy()  # [K, 4]: CLEVR's filter keys, the engine's order (clevr.keys)
THING = len(clevr_vocab().shape)  # the shape slot of a key with no shape: "thing"
RELATION_ENGLISH = {"left": "to the left of", "right": "to the right of", "behind": "behind", "front": "in front of"}


def key_id(key) -> int:
    """The row of ``KEYS`` holding ``key`` (4 ints, -1 = unsaid)."""
    k = 0
    for radix, x in zip(KEY_RADIX, key):
        k = k * radix + int(x) + 1
    return k


def noun_slot(key) -> int:
    """The key's noun: its shape id, or ``THING``."""
    return int(key[3]) if key[3] >= 0 else THING


def describe(key, plural: bool = False) -> str:
    """"large red metal cube" (CLEVR's order: size, color, material, shape); "things" when plural."""
    v = clevr_vocab()
    words = [v.values(a)[int(x)] for a, x in zip(ATTRS[:3], key[:3]) if x >= 0]
    noun = v.shape[int(key[3])] if key[3] >= 0 else "thing"
    return " ".join(words + [noun + ("s" if plural else "")])


def _filters(key, start: int) -> list[dict]:
    """The filter chain of ``key`` after node ``start``."""
    v, out, cur = clevr_vocab(), [], start
    for a, x in zip(ATTRS, key):
        if x >= 0:
            out.append({"type": f"filter_{a}", "inputs": [cur], "side_inputs": [v.values(a)[int(x)]]})
            cur = start + len(out)
    return out


def _scene_filtered(key, start: int = 0) -> list[dict]:
    return [{"type": "scene", "inputs": [], "side_inputs": []}] + _filters(key, start)


def _program(nodes: list[dict]) -> str:
    return json.dumps(nodes, separators=(",", ":"))


def exist_program(key) -> str:
    nodes = _scene_filtered(key)
    return _program(nodes + [{"type": "exist", "inputs": [len(nodes) - 1], "side_inputs": []}])


def count_program(key) -> str:
    nodes = _scene_filtered(key)
    return _program(nodes + [{"type": "count", "inputs": [len(nodes) - 1], "side_inputs": []}])


def relation_program(subject, r: int, anchor) -> str:
    """"The <subject> is RELATIONS[r] the <anchor>": some subject is in relationships[r][the anchor], and
    each description is unique in the scene."""
    nodes = _scene_filtered(subject)
    nodes.append({"type": "unique", "inputs": [len(nodes) - 1], "side_inputs": []})
    start = len(nodes)
    nodes += _scene_filtered(anchor, start)
    nodes.append({"type": "unique", "inputs": [len(nodes) - 1], "side_inputs": []})
    nodes.append({"type": "relate", "inputs": [len(nodes) - 1], "side_inputs": [RELATIONS[r]]})
    nodes += _filters(subject, len(nodes) - 1)
    nodes.append({"type": "exist", "inputs": [len(nodes) - 1], "side_inputs": []})
    return _program(nodes)


def answer_word(value) -> str | None:
    """run_program's raw answer as a record's answer: bool -> yes / no, int -> digits, invalid -> None."""
    if value == INVALID:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def evaluate(program: str, scene) -> str | None:
    """The answer of a CLEVR program (JSON string) on one scene (StaticScene or CLEVR scene dict)."""
    return answer_word(run_program(json.loads(program), scene))


def holds(text: Text, scene) -> bool | None:
    return video_holds(text, scene, evaluate)
