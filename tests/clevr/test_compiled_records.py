"""``clevr.compiled_records``' pieces against the Python functions they restate and hand-worked JSON
(its whole records against the Python path's, byte for byte: ``test_compiled_driver``)."""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest
from clevr.test_compiled_text import random_block  # tests/ is on sys.path (conftest)

from clevr import oracle  # tests/ is on sys.path (conftest)
from tensorqa.clevr import compiled_records, records
from tensorqa.clevr.plan import ATTR, BOOL, INT, OBJECT, SET


@pytest.fixture(scope="module")
def plans():
    from tensorqa.clevr.plan import plans
    from tensorqa.clevr.templates import DEFAULT_SYNONYMS, DEFAULT_TEMPLATES_DIR, load_synonyms, load_templates

    templates = load_templates(DEFAULT_TEMPLATES_DIR)
    return (templates, *plans(templates, load_synonyms(DEFAULT_SYNONYMS)))


def test_node_output_writes_each_kind_as_json(plans):
    """A set as the sorted list of its bits (one table copy below 1024, digit by digit above), a
    bool, an object or count as a number, an attribute value as its quoted word."""
    from tensorqa.scenes.static_batch import clevr_vocab

    _, _, tp = plans
    buf = np.zeros(256, np.uint8)

    def out(kd, a, v):
        return bytes(buf[:compiled_records.node_output(buf, 0, kd, a, v, tp)])

    for v in (0, 1, 0b1011, 1023, 1024, (1 << 12) | 2, (1 << 61) | (1 << 9) | 1):
        assert json.loads(out(SET, -1, v)) == [i for i in range(62) if v >> i & 1]
    assert out(SET, -1, 0b101) == b"[0,2]"
    assert (out(BOOL, -1, 1), out(BOOL, -1, 0)) == (b"true", b"false")
    assert (out(INT, -1, 0), out(INT, -1, 10), out(OBJECT, -1, 7)) == (b"0", b"10", b"7")
    for a, name in enumerate(("size", "color", "material", "shape")):
        for v, word in enumerate(clevr_vocab().values(name)):
            assert out(ATTR, a, v) == b'"' + word.encode() + b'"'


@pytest.mark.parametrize("answer_json", [True, False])
def test_answer_text_is_the_json_value_or_the_parquet_string(plans, answer_json):
    """Every template's answers (each code of its answer's domain): JSON ``true`` / ``3`` / ``"red"``
    (orjson of ``records.answer_value``), or the Parquet strings ``yes`` / ``3`` / ``red``."""
    from tensorqa.clevr.templates import answer_domain

    templates, plan, tp = plans
    blk, s, _ = random_block(templates, plan, tp, 3, 1)
    for ti, t in enumerate(templates):
        kind, domain = answer_domain(t)
        for code in range(len(domain)):
            b = blk._replace(t=np.array([ti]), a=np.array([code]), answer_json=answer_json)
            got = bytes(s.AS[:compiled_records.answer_text(0, b, s, tp)])
            value = records.answer_value(kind, code)
            if answer_json:
                assert got == orjson.dumps(value)
            else:
                assert got.decode() == ({True: "yes", False: "no"}[value] if kind == "bool" else str(value))


@pytest.mark.parametrize("node_texts", [True, False], ids=["node-texts", "piece-by-piece"])
def test_program_json_equals_the_expanded_program(plans, node_texts):
    """Every template, random codes (NULL filters left out of the expansion): the program's JSON text
    equals orjson of ``records.clevr_json_program(records.expand_program(...))``, whether a node is
    written from ``compiled_bytes.node_texts``' prepared pieces or piece by piece."""
    from tensorqa.clevr.compiled_bytes import node_texts as prepared

    templates, plan, tp = plans
    blk, s, rows = random_block(templates, plan, tp, 5, 6)
    if node_texts:
        s = s._replace(**dict(zip(("head", "head_n", "mid", "mid_n"), prepared(tp.strings, tp.str_off, False))))
    for q, (t, vals) in enumerate(rows):
        n = compiled_records.program_json(q, 3, blk, s, plan, tp)
        words = oracle.param_words(t, vals)
        assert bytes(s.PS[3:n]) == orjson.dumps(records.clevr_json_program(records.expand_program(t, words), None))


def test_write_block_columns_hold_each_question_as_written_alone(plans):
    """One question a block, every template, with ``_output``: the three columns (grown past their
    first estimate where a program is long) hold the text, program and answer that
    ``question_text``, ``program_json`` and ``answer_text`` write for the question alone."""
    from tensorqa.clevr.compiled_bytes import node_texts
    from tensorqa.clevr.compiled_text import question_text

    templates, plan, tp = plans
    blk, s, _ = random_block(templates, plan, tp, 9, 1)
    blk = blk._replace(with_output=True)
    s = s._replace(**dict(zip(("head", "head_n", "mid", "mid_n"), node_texts(tp.strings, tp.str_off, True))))
    grown = 0
    for q in range(len(templates)):
        one = blk._replace(**{k: getattr(blk, k)[q:q + 1] for k in ("b", "t", "m", "a", "p", "v")})
        Q, _, qb, qo, pb, po, ab, ao = compiled_records.write_block(*one[:7], one.root, True, True, plan, one.relbits,
                                                                    one.attrbits, tp, False)
        assert Q == 1 and (qo[0], po[0], ao[0]) == (0, 0, 0)
        assert bytes(qb[:qo[1]]) == bytes(s.T2[:question_text(0, one, s, plan, tp)])
        assert bytes(pb[:po[1]]) == bytes(s.PS[:compiled_records.program_json(0, 0, one, s, plan, tp)])
        assert bytes(ab[:ao[1]]) == bytes(s.AS[:compiled_records.answer_text(0, one, s, tp)])
        grown += po[1] + 16 > 1024 + 64
    assert grown > 0
