"""The per-question path, the test oracle of the columnar and compiled writers: one accepted grid row
at a time through :func:`param_words`, :func:`render`, ``records.expand_program`` and the scalar
executor (``_output``), as CLEVR's generator builds a question; and CLEVR's :func:`is_degenerate`."""

from __future__ import annotations

import re

import numpy as np
import orjson

from tensorqa.clevr import records, text
from tensorqa.engine import rng
from tensorqa.clevr.generate import Options
from tensorqa.clevr.torch_backend import Bookkeeping, choose_block
from tensorqa.clevr.scalar import replace_and_prune, run_nodes, run_program
from tensorqa.clevr.templates import Template
from tensorqa.clevr.templates import answer_domain
from tensorqa.scenes.static_batch import RELATIONS, StaticBatch, clevr_vocab
from tensorqa.scenes.static_store import StaticStore

_OPTIONAL = re.compile(r"\[([^\[\]]*)\]")


def param_words(t: Template, values: dict[str, int]) -> dict[str, str]:
    """param -> canonical word in assignment order ('' unspecified; 'thing' for a shape)."""
    v, ty, out = clevr_vocab(), t.param_type, {}
    for node in t.nodes:
        for p in node.get("side_inputs", []):
            x = int(values[p])
            if ty[p] == "Relation":
                out[p] = RELATIONS[x]
            else:
                attr = ty[p].lower()
                out[p] = v.values(attr)[x] if x >= 0 else ("thing" if attr == "shape" else "")
    return out


def picker(seed: int, scene: int, tid: int, draw: int):
    """pick(slot, n) -> int in [0, n): the question's text choices, engine.rng's ``clevr.text``
    stream at (scene position, template, draw, slot) (``text.picks`` one question at a time)."""
    k = rng.derive_int(seed, "clevr.text", scene, tid, draw)
    return lambda slot, n: rng.below_int(rng.mix64_int(k ^ slot), n)


def _collapse(s: str) -> str:
    return " ".join(s.split())


def other_heuristic(s: str, vals: dict[str, str], sem) -> str:
    """Drop "other" when the two described objects differ in a specified attribute (CLEVR: only
    for exactly the params <Z><C><M><S><Z2><C2><M2><S2>)."""
    if (" other " not in s and " another " not in s) or set(vals) != text.PAIR_PARAMS:
        return s
    for x in ("<Z>", "<C>", "<M>", "<S>"):
        v1, v2 = vals[x], vals[x[:-1] + "2>"]
        if not sem.other_thing_is_value:
            v1, v2 = ("" if v == "thing" else v for v in (v1, v2))
        if v1 != "" and v2 != "" and v1 != v2:
            return s.replace(" other ", " ").replace(" another ", " a ")
    return s


def render(t: Template, vals: dict[str, str], synonyms: dict[str, list[str]], pick, sem) -> str:
    """vals: param -> canonical word ('' unspecified, 'thing' for an unspecified shape), in
    assignment order; pick(slot, n) -> int in [0, n) makes the random choices (:func:`picker`):
    the variant (slot 0), each parameter's synonym (slot 1 + its position), each optional part
    (slot BRACKET_SLOT + its position; kept when the pick of 2 is 1)."""
    s = t.text[pick(0, len(t.text))]
    for i, (name, v) in enumerate(vals.items()):
        word = synonyms[v][pick(1 + i, len(synonyms[v]))] if v in synonyms else v
        s = s.replace(name, word)
    s = _collapse(s)
    j = iter(range(text.BRACKET_SLOT, text.BRACKET_SLOT + 10_000))
    s = _collapse(_OPTIONAL.sub(lambda m: m.group(1) if pick(next(j), 2) == 1 else "", s))
    return other_heuristic(s, vals, sem)


def is_degenerate(program: list, scene) -> bool:
    """CLEVR's is_degenerate: some ``relate`` node, replaced by ``scene``, keeps the answer."""
    answer = run_program(program, scene)
    for i, n in enumerate(program):
        if n.get("type", n.get("function")) == "relate":
            pruned = replace_and_prune(program, i, {"type": "scene", "inputs": [], "side_inputs": []})
            if run_program(pruned, scene) == answer:
                return True
    return False


def program_json(t: Template, words: dict[str, str], memo: dict, tid: int) -> str:
    """``records.program_skeleton`` with the words in its slots."""
    s = records.program_skeleton(t, words, memo, tid)
    for p, w in words.items():
        if w not in ("", "thing"):
            s = s.replace(records.slot(p), w)  # vocabulary words: nothing to escape
    return s


def _question(t: Template, batch: StaticBatch, b: int, values: dict, code: int, g: int, m: int, tid: int,
              synonyms: dict, opt: Options, with_output: bool, as_text: bool, memo: dict) -> dict:
    """One accepted row as a CLEVR question. ``memo``: program skeletons per template and scene JSON
    per block row, shared by the questions of a run. ``as_text``: the program as JSON text."""
    words = param_words(t, values)
    if with_output:
        scene = memo.get(("scene", b))
        if scene is None:
            scene = memo[("scene", b)] = batch.scene(b).to_json()
        prog = records.expand_program(t, words)
        program = records.clevr_json_program(prog, run_nodes(prog, scene))
    else:
        program = program_json(t, words, memo, tid)
        if not as_text:
            program = orjson.loads(program)
    pick = picker(opt.seed, g, tid, m)
    fname = batch.image_filenames[b]
    return {"split": batch.splits[b], "image_filename": fname, "image_index": int(batch.image_indices[b]),
            "image": fname.rsplit(".", 1)[0], "question": render(t, words, synonyms, pick, opt.semantics),
            "program": program, "answer": records.answer_value(answer_domain(t)[0], code),
            "template_filename": t.filename, "question_family_index": t.index}


def generate_scenes(store: StaticStore, templates: list[Template], synonyms: dict, opt: Options,
                    start: int = 0, stop: int | None = None, with_output: bool = True,
                    program_text: bool = False) -> list[dict]:
    """The questions of scenes [start, stop) of the store, in scene order. ``program_text``: programs
    without ``_output`` as JSON text (what the writers take), not lists of nodes."""
    stop = len(store) if stop is None else min(stop, len(store))
    book = Bookkeeping(templates)
    qs: list[dict] = []
    memo: dict = {}
    for a in range(start, stop, opt.batch_scenes):
        z = min(a + opt.batch_scenes, stop)
        batch = store.batch(a, z, opt.device)
        pos = np.arange(a, z)
        if a == start:
            book.use = None  # CLEVR resets at the run's first scene
        accepted, rows = choose_block(templates, batch, pos, book, opt)
        memo = {k: v for k, v in memo.items() if k[0] != "scene"}  # programs carry over, scenes do not
        for b, tid, m in accepted:
            tr = rows[tid]
            vals = {k: int(v[b, m]) for k, v in tr.params.items()}
            qs.append(_question(templates[tid], batch, b, vals, int(tr.ans[b, m]), int(pos[b]), m, tid, synonyms, opt,
                                with_output, program_text, memo))
    return qs
