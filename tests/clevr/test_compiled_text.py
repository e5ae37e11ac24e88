"""``clevr.compiled_text`` against the Python functions it restates: the oracle's ``picker`` (hashed picks),
``render`` of random parameter codes of every template (its whole records against the Python
path's, byte for byte: ``test_compiled_driver``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clevr import oracle  # tests/ is on sys.path (conftest)
from tensorqa.clevr import compiled_text, records, text


def test_text_picks_equal_text_picker_and_engine_rng():
    from tensorqa.clevr.compiled_driver import text_root
    from tensorqa.engine import rng

    for seed, scene, tid, draw in [(0, 0, 0, 0), (3, 99, 45, 15), (2**40, 7, 89, 31)]:
        k = compiled_text.text_key(text_root(seed), scene, tid, draw)
        pick = oracle.picker(seed, scene, tid, draw)
        for slot, n in [(0, 3), (1, 2), (5, 3), (text.BRACKET_SLOT + 2, 2)]:
            want = ((rng.derive_int(seed, "clevr.text", scene, tid, draw, slot) >> 32) * n) >> 32
            assert compiled_text.pick(np.uint64(k), slot, n) == pick(slot, n) == want


_TEXT = st.text(alphabet=" \t\nab oteh?r", max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, max_size=8))
def test_pieces_joined_by_their_cores_are_the_collapsed_text(pieces):
    """The writer's whitespace clean-up as it joins a question's pieces (each piece's collapsed core
    and spacing bits from ``plan._collapsed``; one space where whitespace separates two cores)
    equals ``" ".join(text.split())`` of the joined text."""
    from tensorqa.clevr.plan import StringTable, _collapsed

    tab = StringTable()
    ids = [tab.add(p) for p in pieces]
    core, spacing = _collapsed(tab)
    by_id = list(tab._ids)
    out, gap = "", False
    for i in ids:
        if spacing[i] & 4:
            out += (" " if out and (gap or spacing[i] & 1) else "") + by_id[core[i]]
            gap = bool(spacing[i] & 2)
        elif spacing[i] & 1:
            gap = True
    assert out == " ".join("".join(pieces).split())


def random_block(templates, plan, tp, seed: int, per_template: int, other_thing_is_value: bool = False):
    """A :class:`compiled_text.Block` of ``per_template`` questions of every template with random
    parameter codes (NULL included where a parameter may be), scenes and draws, and its
    :class:`Scratch` (nodes written piece by piece: no prepared node texts); and per question
    (template, {param: code})."""
    from tensorqa.clevr.compiled_driver import text_root
    from tensorqa.clevr.templates import param_order

    rng = np.random.default_rng(seed)
    T, P, L = plan.T, max(1, plan.ptype.shape[1]), plan.op.shape[1]
    Q = T * per_template
    t = np.repeat(np.arange(T), per_template)
    p = np.full((Q, P), -1, np.int64)
    rows = []
    for q in range(Q):
        tmpl = templates[t[q]]
        vals = {}
        for i, name in enumerate(param_order(tmpl)):
            ty = plan.ptype[t[q], i]
            p[q, i] = rng.integers(0, 4) if ty == 4 else rng.integers(-1, plan.nvals[ty])
            vals[name] = int(p[q, i])
        rows.append((tmpl, vals))
    B = 5
    blk = compiled_text.Block(rng.integers(0, B, Q), t, rng.integers(0, 40, Q), np.zeros(Q, np.int64), p,
                              np.zeros((Q, L), np.int64), rng.integers(0, 10**6, B), np.zeros((B, 10, 4), np.int64),
                              np.zeros((B, 4, 8), np.int64), text_root(seed), False, True, other_thing_is_value)
    u8, i64 = np.zeros(64, np.uint8), np.full(len(tp.str_off), -1, np.int64)
    s = compiled_text.Scratch(np.zeros(8192, np.uint8), np.zeros(8192, np.uint8), np.zeros(1 << 16, np.uint8),
                              np.zeros(256, np.uint8), np.zeros(P, np.int64), np.zeros(L, np.int64), u8, i64, u8, i64)
    return blk, s, rows


@pytest.mark.parametrize("other_thing_is_value", [False, True])
def test_question_text_equals_text_render(other_thing_is_value):
    """Every template, random codes: the compiled text equals the oracle's ``render`` of ``param_words``
    with ``picker``'s choices (variants, synonyms, optional parts, ``other_heuristic``)."""
    from types import SimpleNamespace

    from tensorqa.clevr.plan import plans
    from tensorqa.clevr.templates import DEFAULT_SYNONYMS, DEFAULT_TEMPLATES_DIR, load_synonyms, load_templates

    templates, syn = load_templates(DEFAULT_TEMPLATES_DIR), load_synonyms(DEFAULT_SYNONYMS)
    plan, tp = plans(templates, syn)
    seed = 11
    blk, s, rows = random_block(templates, plan, tp, seed, 6, other_thing_is_value)
    sem = SimpleNamespace(other_thing_is_value=other_thing_is_value)
    for q, (t, vals) in enumerate(rows):
        n = compiled_text.question_text(q, blk, s, plan, tp)
        words = oracle.param_words(t, vals)
        pick = oracle.picker(seed, int(blk.pos[blk.b[q]]), int(blk.t[q]), int(blk.m[q]))
        want = oracle.render(t, words, syn, pick, sem)
        assert bytes(s.T2[:n]).decode() == want, (t.filename, t.index, vals)
