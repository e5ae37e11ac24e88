"""The scalar CLEVR executor: one program (CLEVR's JSON), one scene, through the registry's scalar
twins. The oracle every generated question is re-executed by."""

from __future__ import annotations

from tensorqa.engine.primitives import registry
from tensorqa.engine.scalar import static  # noqa: F401  (registers the clevr_* scalar twins)
from tensorqa.errors import TensorQAError
from tensorqa.scenes.static_batch import StaticScene

INVALID = "__INVALID__"


def _scene_json(scene) -> dict:
    if isinstance(scene, StaticScene):
        return scene.to_json()
    if not isinstance(scene, dict) or "objects" not in scene or "relationships" not in scene:
        raise TensorQAError("run_program: scene must be a CLEVR scene dict (objects, relationships) or a StaticScene")
    return scene


def run_nodes(program: list, scene, handlers: dict | None = None) -> list:
    """Every node's output (CLEVR's answer_question without the cache); after the first
    '__INVALID__' the rest are '__INVALID__' too. ``handlers``: CLEVR function name -> handler
    replacing its twin (an ablation)."""
    sc = _scene_json(scene)
    if not isinstance(program, list):
        raise TensorQAError("run_program: program must be a list of nodes")
    outs: list = []
    for k, node in enumerate(program):
        if not isinstance(node, dict):
            raise TensorQAError(f"run_program: node {k} is not an object")
        fn = node.get("type", node.get("function"))
        side = node.get("side_inputs", node.get("value_inputs", []))
        try:
            twin = (handlers or {}).get(fn) or registry.scalar(f"clevr_{fn}")
        except (TensorQAError, KeyError):
            raise TensorQAError(f"run_program: node {k}: unknown CLEVR function {fn!r}") from None
        ins = node.get("inputs", [])
        if any(not isinstance(i, int) or not 0 <= i < k for i in ins):
            raise TensorQAError(f"run_program: node {k} ({fn}): inputs {ins} do not name earlier nodes")
        args = [outs[i] for i in ins]
        if any(a == INVALID for a in args) or (outs and outs[-1] == INVALID):
            outs.append(INVALID)
            continue
        try:
            outs.append(twin(sc, args, list(side)))
        except (KeyError, IndexError, TypeError) as e:
            raise TensorQAError(f"run_program: node {k} ({fn}): cannot run on this scene ({e.__class__.__name__}: {e})") from None
    return outs


def run_program(program: list, scene, handlers: dict | None = None):
    """The answer CLEVR's engine gives (raw bool / int / string, or '__INVALID__')."""
    outs = run_nodes(program, scene, handlers)
    if INVALID in outs:
        return INVALID
    return outs[-1]


def replace_and_prune(program: list, index: int, node: dict) -> list:
    """``program`` with node ``index`` replaced by ``node`` and the nodes the final node no longer
    reaches removed (inputs renumbered)."""
    prog = [dict(n) for n in program]
    prog[index] = dict(node)
    keep, stack = set(), [len(prog) - 1]
    while stack:
        i = stack.pop()
        if i not in keep:
            keep.add(i)
            stack += list(prog[i].get("inputs", []))
    order = sorted(keep)
    new = {old: k for k, old in enumerate(order)}
    return [dict(prog[i], inputs=[new[j] for j in prog[i].get("inputs", [])]) for i in order]

