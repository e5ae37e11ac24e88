"""The per-question path, the test oracle of the columnar and compiled writers: one accepted grid row
at a time through ``records.param_words``, ``text.render``, ``records.expand_program`` and the scalar
executor (``_output``), as CLEVR's generator builds a question."""

from __future__ import annotations

import numpy as np
import orjson

from tensorqa.clevr import records, text
from tensorqa.clevr.generate import Options
from tensorqa.clevr.torch_backend import Bookkeeping, choose_block
from tensorqa.clevr.scalar import run_nodes
from tensorqa.clevr.templates import Template
from tensorqa.clevr.templates import answer_domain
from tensorqa.scenes.static_batch import StaticBatch
from tensorqa.scenes.static_store import StaticStore


def program_json(t: Template, words: dict[str, str], memo: dict, tid: int) -> str:
    """``records.program_skeleton`` with the words in its slots."""
    text = records.program_skeleton(t, words, memo, tid)
    for p, w in words.items():
        if w not in ("", "thing"):
            text = text.replace(records.slot(p), w)  # vocabulary words: nothing to escape
    return text


def _question(t: Template, batch: StaticBatch, b: int, values: dict, code: int, g: int, m: int, tid: int,
              synonyms: dict, opt: Options, with_output: bool, as_text: bool, memo: dict) -> dict:
    """One accepted row as a CLEVR question. ``memo``: program skeletons per template and scene JSON
    per block row, shared by the questions of a run. ``as_text``: the program as JSON text."""
    words = records.param_words(t, values)
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
    pick = text.picker(opt.seed, g, tid, m)
    fname = batch.image_filenames[b]
    return {"split": batch.splits[b], "image_filename": fname, "image_index": int(batch.image_indices[b]),
            "image": fname.rsplit(".", 1)[0], "question": text.render(t, words, synonyms, pick, opt.semantics),
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
