"""The compiled twin of CLEVR's record writing (numba, CPU): accepted rows -> question text, program
JSON (optionally with ``_output``), answers and whole questions-JSON records, written as UTF-8 bytes
into growing buffers with offsets (Arrow's string layout), never as Python objects per question.

Twins: ``text.render`` (variant, synonyms, optional parts, whitespace, ``other_heuristic``, with
the same hashed choices as ``text.picks``), ``records.expand_program`` / ``clevr_json_program``
(the expansion, ``value_inputs``), ``columns._outputs`` (each node's output). The plan's strings
are checked JSON-safe when it is compiled (``plan.compile_text``), so nothing here escapes.
``tests/clevr/test_compiled_driver.py`` checks every byte against the Python path.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from tensorqa.clevr.compiled_bits import lowest_bit
from tensorqa.clevr.compiled_bytes import (
    B_ANSWER,
    B_FALSE,
    B_INPUTS,
    B_NO,
    B_OPEN,
    B_OUTPUT,
    B_PROGRAM,
    B_QUESTION,
    B_QUESTION_FAMILY_INDEX,
    B_QUESTION_INDEX,
    B_TEMPLATE_FILENAME,
    B_TRUE,
    B_TYPE,
    B_VALUE_INPUTS,
    B_YES,
    SET_LEN,
    SET_TEXT,
    copy24,
    copy48,
    grow,
    put,
    put_bytes,
    put_int,
    put_range,
)
from tensorqa.clevr.compiled_text import render_text
from tensorqa.clevr.plan import (
    ATTR,
    BOOL,
    COUNTED,
    FILTER,
    FILTER_ATTR,
    INT,
    OBJECT,
    ONE,
    RELATE,
    RELATION_TYPE,
    SET,
)

@njit(cache=True, nogil=True)
def node_texts(strings, str_off, with_output):
    """A program node's JSON text around its inputs, per string of the table, 48 bytes apart:
    '{"type":"<s>","inputs":[' (``head``, per type string) and '],"value_inputs":["<s>"]' (+
    ',"_output":' if ``with_output``; ``mid`` at sid + 1, at 0 with no value), so that a node is
    two copies of constant size around its input digits. Lengths -1 where the text exceeds 48 bytes
    (the writer then puts the pieces one by one)."""
    NS = str_off.shape[0] - 1
    head, mid = np.zeros(NS * 48 + 64, np.uint8), np.zeros((NS + 1) * 48 + 64, np.uint8)
    head_n, mid_n = np.full(NS, -1, np.int64), np.full(NS + 1, -1, np.int64)
    for sid in range(-1, NS):
        ln = 0 if sid < 0 else str_off[sid + 1] - str_off[sid]
        if sid >= 0 and B_TYPE.shape[0] + ln + B_INPUTS.shape[0] <= 48:
            at = put_bytes(head, sid * 48, B_TYPE)
            at = put_range(head, at, strings, str_off[sid], str_off[sid + 1])
            head_n[sid] = put_bytes(head, at, B_INPUTS) - sid * 48
        if B_VALUE_INPUTS.shape[0] + ln + 3 + B_OUTPUT.shape[0] <= 48:
            at = put_bytes(mid, (sid + 1) * 48, B_VALUE_INPUTS)
            if sid >= 0:
                mid[at] = 34
                at = put_range(mid, at + 1, strings, str_off[sid], str_off[sid + 1])
                mid[at] = 34
                at += 1
            mid[at] = 93
            at += 1
            if with_output:
                at = put_bytes(mid, at, B_OUTPUT)
            mid_n[sid + 1] = at - (sid + 1) * 48
    return head, head_n, mid, mid_n


class Accepted(NamedTuple):
    """A block's accepted questions (``compiled.generate_block``'s output) with their scenes' draw
    positions: scene row, template, draw, answer code int64[Q]; params int64[Q, P]; node outputs
    int64[Q, L]; ``pos`` int64[B]."""

    b: np.ndarray
    t: np.ndarray
    m: np.ndarray
    a: np.ndarray
    p: np.ndarray
    v: np.ndarray
    pos: np.ndarray


class Scratch(NamedTuple):
    """One question's bytes while it is written: its text (``text``; ``spare`` for the clean-up's
    second pass), its answer, the words shown per param, the program's node numbering, and the node
    pieces of :func:`node_texts`."""

    text: np.ndarray  # uint8[8192]
    spare: np.ndarray  # uint8[8192]
    answer: np.ndarray  # uint8[256]
    shown: np.ndarray  # int64[P]
    imap: np.ndarray  # int64[L]
    head: np.ndarray
    head_n: np.ndarray
    mid: np.ndarray
    mid_n: np.ndarray


@njit(cache=True, inline="always")
def output_json(PS, at, kd, a, v, tp):
    """A node's ``_output`` (a set of objects, a bool, an attribute value, an object or a count)."""
    if kd == SET:
        if v < 1024:
            copy24(PS, at, SET_TEXT, v * 24)
            return at + SET_LEN[v]
        PS[at] = 91
        at += 1
        first = True
        while v:
            if not first:
                PS[at] = 44
                at += 1
            at = put_int(PS, at, lowest_bit(v))
            v &= v - 1
            first = False
        PS[at] = 93
        return at + 1
    if kd == BOOL:
        return put_bytes(PS, at, B_TRUE if v else B_FALSE)
    if kd == ATTR:
        PS[at] = 34
        at = put(PS, at + 1, tp.strings, tp.str_off, tp.attr_word[a, v])
        PS[at] = 34
        return at + 1
    return put_int(PS, at, v)  # object, int


@njit(cache=True, inline="always")
def node_json(PS, at, first, type_sid, in_a, in_b, value_sid, kd, a, v, tp, sc, with_output):
    """One program node, {"type","inputs","value_inputs"[,"_output"]}, into PS[at:]; returns the end."""
    if not first:
        PS[at] = 44
        at += 1
    hn = sc.head_n[type_sid]
    if hn >= 0:
        copy48(PS, at, sc.head, type_sid * 48)
        at += hn
    else:
        at = put_bytes(PS, at, B_TYPE)
        at = put(PS, at, tp.strings, tp.str_off, type_sid)
        at = put_bytes(PS, at, B_INPUTS)
    if in_a >= 0:
        at = put_int(PS, at, in_a)
        if in_b >= 0:
            PS[at] = 44
            at = put_int(PS, at + 1, in_b)
    mn = sc.mid_n[value_sid + 1]
    if mn >= 0:
        copy48(PS, at, sc.mid, (value_sid + 1) * 48)
        at += mn
    else:
        at = put_bytes(PS, at, B_VALUE_INPUTS)
        if value_sid >= 0:
            PS[at] = 34
            at = put(PS, at + 1, tp.strings, tp.str_off, value_sid)
            PS[at] = 34
            at += 1
        PS[at] = 93
        at += 1
        if with_output:
            at = put_bytes(PS, at, B_OUTPUT)
    if with_output:
        at = output_json(PS, at, kd, a, v, tp)
    PS[at] = 125
    return at + 1


@njit(cache=True, inline="always")
def program_json(q, PS, at, acc, plan, tp, sc, relbits, attrbits, with_output):
    """``records.expand_program`` of question q as JSON text into PS[at:] (a filter node expands into
    relate, filter_<attr> per given key param and its suffix); returns the end."""
    ti, b, word, imap = acc.t[q], acc.b[q], tp.word, sc.imap
    PS[at] = 91
    at += 1
    e = 0  # emitted nodes
    for k in range(plan.nnodes[ti]):
        o_ = plan.op[ti, k]
        a0, a1 = plan.in0[ti, k], plan.in1[ti, k]
        if o_ == FILTER:
            cur, s = imap[a0], acc.v[q, a0]
            if plan.related[ti, k]:
                r = acc.p[q, plan.rp[ti, k]]
                s = relbits[b, acc.v[q, a0], r]
                at = node_json(PS, at, e == 0, tp.relate_type, cur, -1, word[RELATION_TYPE, r + 1], SET, -1, s, tp,
                               sc, with_output)
                cur, e = e, e + 1
            for i in range(4):
                p = plan.kp[ti, k, i]
                if p < 0 or acc.p[q, p] < 0:
                    continue
                a = plan.kp_attr[ti, k, i]
                s = s & attrbits[b, a, acc.p[q, p]]
                at = node_json(PS, at, e == 0, tp.filter_type[a], cur, -1, word[a, acc.p[q, p] + 1], SET, -1, s, tp,
                               sc, with_output)
                cur, e = e, e + 1
            sf = plan.suffix[ti, k]
            if sf != 0:
                kd = OBJECT if sf == ONE else (INT if sf == COUNTED else BOOL)
                at = node_json(PS, at, e == 0, tp.suffix_type[sf], cur, -1, -1, kd, -1, acc.v[q, k], tp, sc,
                               with_output)
                cur, e = e, e + 1
            imap[k] = cur
            continue
        value = -1
        if o_ == RELATE:
            value = word[RELATION_TYPE, acc.p[q, plan.rp[ti, k]] + 1]
        elif o_ == FILTER_ATTR:
            value = word[plan.attr[ti, k], acc.p[q, plan.sp[ti, k]] + 1]
        at = node_json(PS, at, e == 0, tp.node_type[ti, k], imap[a0] if a0 >= 0 else -1, imap[a1] if a1 >= 0 else -1,
                       value, plan.kind[ti, k], plan.attr[ti, k], acc.v[q, k], tp, sc, with_output)
        imap[k] = e
        e += 1
    PS[at] = 93
    return at + 1


@njit(cache=True, inline="always")
def answer_text(q, acc, tp, AS, answer_json):
    """The answer of question q into AS (as JSON if ``answer_json``: true, 3, "red"; else the Parquet
    string: yes, 3, red); returns its length."""
    ti, code = acc.t[q], acc.a[q]
    akind = tp.answer_kind[ti]
    if akind == BOOL:
        if answer_json:
            lit = B_TRUE if code else B_FALSE
        else:
            lit = B_YES if code else B_NO
        return put_bytes(AS, 0, lit)
    if akind == INT:
        return put_int(AS, 0, code)
    sid = tp.attr_word[tp.answer_attr[ti], code]
    if answer_json:
        AS[0] = 34
        n = put(AS, 1, tp.strings, tp.str_off, sid)
        AS[n] = 34
        return n + 1
    return put(AS, 0, tp.strings, tp.str_off, sid)


@njit(cache=True, inline="always")
def write_records(acc, root, plan, tp, sc, relbits, attrbits, with_output, other_thing_is_value, rec, PSN):
    """Whole questions-JSON records (see :func:`write_block`) into ``rec``'s buffer while they fit;
    the program is written in the buffer directly. Returns (the next question, the end)."""
    out, scene_json, scene_off, q, first_index, at = rec
    filename, family, strings, str_off = tp.filename, tp.family, tp.strings, tp.str_off
    while q < acc.b.shape[0]:
        nt = render_text(q, acc, root, plan, tp, sc, other_thing_is_value)
        na = answer_text(q, acc, tp, sc.answer, True)
        s, t = acc.b[q], acc.t[q]
        need = nt + PSN + na + scene_off[s + 1] - scene_off[s] + 256 + str_off[filename[t] + 1] - str_off[filename[t]]
        if at + need > out.shape[0]:
            break
        if first_index + q > 0:
            out[at] = 44
            at += 1
        out[at] = 123
        at = put_range(out, at + 1, scene_json, scene_off[s], scene_off[s + 1])
        at = put_bytes(out, at, B_QUESTION)
        at = put_range(out, at, sc.text, 0, nt)
        at = put_bytes(out, at, B_ANSWER)
        at = put_range(out, at, sc.answer, 0, na)
        at = put_bytes(out, at, B_PROGRAM)
        at = program_json(q, out, at, acc, plan, tp, sc, relbits, attrbits, with_output)
        at = put_bytes(out, at, B_TEMPLATE_FILENAME)
        at = put(out, at, strings, str_off, filename[t])
        at = put_bytes(out, at, B_QUESTION_FAMILY_INDEX)
        at = put_int(out, at, family[t])
        at = put_bytes(out, at, B_QUESTION_INDEX)
        at = put_int(out, at, first_index + q)
        out[at] = 125
        at += 1
        q += 1
    return q, at


@njit(cache=True, nogil=True)  # nogil: the output file's writer thread runs meanwhile
def write_block(acc_b, acc_t, acc_m, acc_a, acc_p, acc_v, pos, root, with_output, answer_json, plan, relbits, attrbits,
                tp, other_thing_is_value, rec=None):
    """The block's accepted questions as three string columns, (bytes, offsets) each: the question
    (``text.render``), the program (questions-JSON text of ``records.expand_program``, with
    ``_output`` if ``with_output``), the answer (:func:`answer_text`). Returns (Q, 0, question bytes,
    offsets, program bytes, offsets, answer bytes, offsets).

    With ``rec`` = (out uint8[M], scene_json, scene_off, q_start, first_index, at), whole
    questions-JSON records instead (``join_records``' bytes, each preceded by ',' but the file's
    first), written from question ``q_start`` into ``out[at:]`` while they fit: returns (the next
    question, the end of the bytes in ``out``, and empty columns). A record that does not fit is not
    written (the caller makes room)."""
    acc = Accepted(acc_b, acc_t, acc_m, acc_a, acc_p, acc_v, pos)
    Q, L = acc_b.shape[0], plan.op.shape[1]
    head, head_n, mid, mid_n = node_texts(tp.strings, tp.str_off, with_output)
    sc = Scratch(np.empty(8192, np.uint8), np.empty(8192, np.uint8), np.empty(256, np.uint8),
                 np.zeros(max(1, plan.ptype.shape[1]), np.int64), np.zeros(L, np.int64), head, head_n, mid, mid_n)
    PSN = 1024 + L * 6 * (200 + 4 * relbits.shape[1])  # bytes a question's program may take
    Qc = Q if rec is None else 0  # the columns' questions
    qb, pb, ab = np.empty(Qc * 96 + 64, np.uint8), np.empty(Qc * (1024 if with_output else 700) + 64, np.uint8), \
        np.empty(Qc * 8 + 64, np.uint8)
    qo, po, ao = np.zeros(Qc + 1, np.int64), np.zeros(Qc + 1, np.int64), np.zeros(Qc + 1, np.int64)
    if rec is not None:
        q, at = write_records(acc, root, plan, tp, sc, relbits, attrbits, with_output, other_thing_is_value, rec, PSN)
        return q, at, qb[:0], qo[:1], pb[:0], po[:1], ab[:0], ao[:1]
    PS = np.empty(PSN, np.uint8)  # a question's program
    jq, jp, ja = 0, 0, 0
    for q in range(Q):
        n = render_text(q, acc, root, plan, tp, sc, other_thing_is_value)
        qb = grow(qb, jq, n + 16)
        jq = put_range(qb, jq, sc.text, 0, n)
        qo[q + 1] = jq
        n = program_json(q, PS, 0, acc, plan, tp, sc, relbits, attrbits, with_output)
        pb = grow(pb, jp, n + 16)
        jp = put_range(pb, jp, PS, 0, n)
        po[q + 1] = jp
        n = answer_text(q, acc, tp, sc.answer, answer_json)
        ab = grow(ab, ja, n + 16)
        ja = put_range(ab, ja, sc.answer, 0, n)
        ao[q + 1] = ja
    return Q, 0, qb[:jq], qo, pb[:jp], po, ab[:ja], ao


@njit(cache=True)
def join_records(qb, qo, pb, po, ab, ao, scene_of, scene_json, scene_off, tmpl_of, filename, family, strings, str_off,
                 first_index):
    """Questions-JSON records joined by ',': '{' + the scene's '"split":..,"image_filename":..,
    "image_index":..,"image":..,' (``scene_json`` from ``scene_off``) + question, answer, program,
    template_filename, question_family_index, question_index '}' (``generate_store``'s key order)."""
    Q = scene_of.shape[0]
    out = np.empty(qb.shape[0] + pb.shape[0] + ab.shape[0] + Q * 256 + 64, np.uint8)
    at = 0
    for q in range(Q):
        s, t = scene_of[q], tmpl_of[q]
        out = grow(out, at, 1024 + (qo[q + 1] - qo[q]) + (po[q + 1] - po[q]) + (scene_off[s + 1] - scene_off[s]))
        if q > 0:
            out[at] = 44
            at += 1
        at = put_bytes(out, at, B_OPEN)
        at = put_range(out, at, scene_json, scene_off[s], scene_off[s + 1])
        at = put_bytes(out, at, B_QUESTION)
        at = put_range(out, at, qb, qo[q], qo[q + 1])
        at = put_bytes(out, at, B_ANSWER)
        at = put_range(out, at, ab, ao[q], ao[q + 1])
        at = put_bytes(out, at, B_PROGRAM)
        at = put_range(out, at, pb, po[q], po[q + 1])
        at = put_bytes(out, at, B_TEMPLATE_FILENAME)
        at = put(out, at, strings, str_off, filename[t])
        at = put_bytes(out, at, B_QUESTION_FAMILY_INDEX)
        at = put_int(out, at, family[t])
        at = put_bytes(out, at, B_QUESTION_INDEX)
        at = put_int(out, at, first_index + q)
        out[at] = 125
        at += 1
    return out[:at]


