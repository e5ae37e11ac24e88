"""The compiled twin of CLEVR's record writing (numba, CPU): accepted rows -> question text, program
JSON (optionally with ``_output``), answers and whole questions-JSON records, written as UTF-8 bytes
into growing buffers with offsets (Arrow's string layout), never as Python objects per question.

Twins: the question text (``compiled_text``), ``records.expand_program`` / ``clevr_json_program``
(the expansion, ``value_inputs``), ``columns._outputs`` (each node's output). The plan's strings
are checked JSON-safe when it is compiled (``plan.compile_text``), so nothing here escapes.
``tests/clevr/test_compiled_driver.py`` checks every byte against the Python path.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tensorqa.clevr.compiled_bits import lowest_bit
from tensorqa.clevr.compiled_bytes import (
    B_ANSWER, B_FALSE, B_INPUTS, B_NO, B_OUTPUT, B_PROGRAM, B_QUESTION, B_QUESTION_FAMILY_INDEX,
    B_QUESTION_INDEX, B_TEMPLATE_FILENAME, B_TRUE, B_TYPE, B_VALUE_INPUTS, B_YES, SET_LEN, SET_TEXT, copy24,
    copy48, grow, memcpy, node_texts, put, put_bytes, put_int, put_range,
)
from tensorqa.clevr.compiled_text import Block, Scratch, question_text
from tensorqa.clevr.plan import (
    ATTR, BOOL, COUNTED, FILTER, FILTER_ATTR, INT, OBJECT, ONE, RELATE, RELATION_TYPE, SET,
)

# The loops over a block's questions and their per-question / per-node helpers allocate nothing and are
# compiled without refcounts (``_nrt=False``, see ``compiled_text``); the helpers are inlined into the loops.


@njit(cache=True, inline="always", _nrt=False)
def node_output(PS, at, kd, a, v, tp):
    """A node's ``_output`` (``columns._outputs``) of kind ``kd`` (attribute ``a``) and value ``v``."""
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


@njit(cache=True, inline="always", _nrt=False)
def node_json(at, first, type_sid, in_a, in_b, value_sid, kd, a, v, blk, s, tp):
    """One program node, '{"type","inputs","value_inputs"[,"_output"]}', into ``s.PS[at:]``."""
    PS = s.PS
    if not first:
        PS[at] = 44
        at += 1
    hn = s.head_n[type_sid]
    if hn >= 0:
        copy48(PS, at, s.head, type_sid * 48)
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
    mn = s.mid_n[value_sid + 1]
    if mn >= 0:
        copy48(PS, at, s.mid, (value_sid + 1) * 48)
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
        if blk.with_output:
            at = put_bytes(PS, at, B_OUTPUT)
    if blk.with_output:
        at = node_output(PS, at, kd, a, v, tp)
    PS[at] = 125
    return at + 1


@njit(cache=True, inline="always", _nrt=False)
def program_json(q, at, blk, s, plan, tp):
    """``records.expand_program`` of question ``q`` as JSON text into ``s.PS[at:]``; returns the end."""
    ti, b, p, val, imap, word = blk.t[q], blk.b[q], blk.p, blk.v, s.imap, tp.word
    s.PS[at] = 91
    at += 1
    e = 0  # emitted nodes
    for k in range(plan.nnodes[ti]):
        a0, a1 = plan.in0[ti, k], plan.in1[ti, k]
        if plan.op[ti, k] == FILTER:  # [relate], one filter_<a> per key param, [unique / count / exist]
            cur, bits = imap[a0], val[q, a0]
            if plan.related[ti, k]:
                r = p[q, plan.rp[ti, k]]
                bits = blk.relbits[b, val[q, a0], r]
                at = node_json(at, e == 0, tp.relate_type, cur, -1, word[RELATION_TYPE, r + 1], SET, -1, bits, blk,
                               s, tp)
                cur, e = e, e + 1
            for i in range(4):
                x = plan.kp[ti, k, i]
                if x < 0 or p[q, x] < 0:
                    continue
                a = plan.kp_attr[ti, k, i]
                bits = bits & blk.attrbits[b, a, p[q, x]]
                at = node_json(at, e == 0, tp.filter_type[a], cur, -1, word[a, p[q, x] + 1], SET, -1, bits, blk, s,
                               tp)
                cur, e = e, e + 1
            sf = plan.suffix[ti, k]
            if sf != 0:
                kd = OBJECT if sf == ONE else (INT if sf == COUNTED else BOOL)
                at = node_json(at, e == 0, tp.suffix_type[sf], cur, -1, -1, kd, -1, val[q, k], blk, s, tp)
                cur, e = e, e + 1
            imap[k] = cur
            continue
        value = -1
        if plan.op[ti, k] == RELATE:
            value = word[RELATION_TYPE, p[q, plan.rp[ti, k]] + 1]
        elif plan.op[ti, k] == FILTER_ATTR:
            value = word[plan.attr[ti, k], p[q, plan.sp[ti, k]] + 1]
        at = node_json(at, e == 0, tp.node_type[ti, k], imap[a0] if a0 >= 0 else -1, imap[a1] if a1 >= 0 else -1,
                       value, plan.kind[ti, k], plan.attr[ti, k], val[q, k], blk, s, tp)
        imap[k] = e
        e += 1
    s.PS[at] = 93
    return at + 1


@njit(cache=True, inline="always", _nrt=False)
def answer_text(q, blk, s, tp):
    """The answer of question ``q`` into ``s.AS`` (JSON or Parquet string: ``Block.answer_json``);
    returns its length."""
    AS, ti, code = s.AS, blk.t[q], blk.a[q]
    akind = tp.answer_kind[ti]
    if akind == BOOL:
        if blk.answer_json:
            return put_bytes(AS, 0, B_TRUE if code else B_FALSE)
        return put_bytes(AS, 0, B_YES if code else B_NO)
    if akind == INT:
        return put_int(AS, 0, code)
    sid = tp.attr_word[tp.answer_attr[ti], code]
    a, z = tp.str_off[sid], tp.str_off[sid + 1]
    if blk.answer_json:
        AS[0] = 34
        memcpy(AS, 1, tp.strings, a, z - a)
        AS[z - a + 1] = 34
        return z - a + 2
    memcpy(AS, 0, tp.strings, a, z - a)
    return z - a


@njit(cache=True, _nrt=False)  # no refcounts; called once per block
def write_records(q, at, blk, s, plan, tp, scene_json, scene_off, first_index, psn):
    """Whole questions-JSON records ('{' + the scene's head + question, answer, program,
    template_filename, question_family_index, question_index '}', each preceded by ',' but the file's
    first) of questions ``q`` on into ``s.PS[at:]`` (the output) while they fit, where ``psn`` bytes
    bound a program; returns (the next question, the end of the bytes)."""
    out = s.PS
    while q < blk.b.shape[0]:
        nt, na = question_text(q, blk, s, plan, tp), answer_text(q, blk, s, tp)
        sc, t = blk.b[q], blk.t[q]
        fn = tp.filename[t]
        need = nt + psn + na + scene_off[sc + 1] - scene_off[sc] + 256 + tp.str_off[fn + 1] - tp.str_off[fn]
        if at + need > out.shape[0]:
            break
        if first_index + q > 0:
            out[at] = 44
            at += 1
        out[at] = 123
        at = put_range(out, at + 1, scene_json, scene_off[sc], scene_off[sc + 1])
        at = put_bytes(out, at, B_QUESTION)
        at = put_range(out, at, s.T2, 0, nt)
        at = put_bytes(out, at, B_ANSWER)
        at = put_range(out, at, s.AS, 0, na)
        at = put_bytes(out, at, B_PROGRAM)
        at = program_json(q, at, blk, s, plan, tp)
        at = put_bytes(out, at, B_TEMPLATE_FILENAME)
        at = put(out, at, tp.strings, tp.str_off, fn)
        at = put_bytes(out, at, B_QUESTION_FAMILY_INDEX)
        at = put_int(out, at, tp.family[t])
        at = put_bytes(out, at, B_QUESTION_INDEX)
        at = put_int(out, at, first_index + q)
        out[at] = 125
        at += 1
        q += 1
    return q, at


@njit(cache=True, _nrt=False)  # no refcounts; called once per block and growth of a column
def write_columns(q, blk, s, plan, tp, qb, qo, jq, pb, po, jp, ab, ao, ja):
    """Questions ``q`` on as the three columns (bytes from ``jq``, ``jp``, ``ja``; offsets) while
    each fits with 16 bytes to spare; returns (the next question, the three ends)."""
    while q < blk.b.shape[0]:
        nt, n_p = question_text(q, blk, s, plan, tp), program_json(q, 0, blk, s, plan, tp)
        na = answer_text(q, blk, s, tp)
        if jq + nt + 16 > qb.shape[0] or jp + n_p + 16 > pb.shape[0] or ja + na + 16 > ab.shape[0]:
            break
        jq = put_range(qb, jq, s.T2, 0, nt)
        jp = put_range(pb, jp, s.PS, 0, n_p)
        ja = put_range(ab, ja, s.AS, 0, na)
        qo[q + 1], po[q + 1], ao[q + 1] = jq, jp, ja
        q += 1
    return q, jq, jp, ja


@njit(cache=True)
def scratch(plan, tp, PS, with_output):
    """A block's :class:`Scratch` around the program buffer ``PS`` (of at least :func:`program_bytes`)."""
    head, head_n, mid, mid_n = node_texts(tp.strings, tp.str_off, with_output)
    return Scratch(np.empty(8192, np.uint8), np.empty(8192, np.uint8), PS, np.empty(256, np.uint8),
                   np.zeros(max(1, plan.ptype.shape[1]), np.int64), np.zeros(plan.op.shape[1], np.int64), head, head_n,
                   mid, mid_n)


@njit(cache=True, inline="always")
def program_bytes(plan, relbits):
    """Bytes a question's program may take."""
    return 1024 + plan.op.shape[1] * 6 * (200 + 4 * relbits.shape[1])


@njit(cache=True, nogil=True)  # nogil: the output file's writer thread runs meanwhile
def write_block(acc_b, acc_t, acc_m, acc_a, acc_p, acc_v, pos, root, with_output, answer_json, plan, relbits, attrbits,
                tp, other_thing_is_value):
    """The block's accepted questions as three string columns, (bytes, offsets) each: the question
    (``compiled_text``), the program (questions-JSON text of ``records.expand_program``, with
    ``_output`` if ``with_output``), the answer (as JSON if ``answer_json``: true, 3, "red"; else as
    the Parquet string: yes, 3, red). Returns (Q, 0, question bytes, offsets, program bytes,
    offsets, answer bytes, offsets). Each question is written into the fixed buffers of a
    :class:`Scratch`, then copied once into the columns."""
    blk = Block(acc_b, acc_t, acc_m, acc_a, acc_p, acc_v, pos, relbits, attrbits, root, with_output, answer_json,
                other_thing_is_value)
    Q, psn = acc_b.shape[0], program_bytes(plan, relbits)
    s = scratch(plan, tp, np.empty(psn, np.uint8), with_output)
    qb, pb, ab = np.empty(Q * 96 + 64, np.uint8), np.empty(Q * (1024 if with_output else 700) + 64, np.uint8), \
        np.empty(Q * 8 + 64, np.uint8)
    qo, po, ao = np.zeros(Q + 1, np.int64), np.zeros(Q + 1, np.int64), np.zeros(Q + 1, np.int64)
    q = jq = jp = ja = np.int64(0)  # not literal 0s, which numba would compile a second signature for
    while q < Q:
        q, jq, jp, ja = write_columns(q, blk, s, plan, tp, qb, qo, jq, pb, po, jp, ab, ao, ja)
        if q < Q:  # growing allocates: here, not in the functions compiled without refcounts
            qb, pb, ab = grow(qb, jq, 8192 + 16), grow(pb, jp, psn + 16), grow(ab, ja, 256 + 16)
    return Q, 0, qb[:jq], qo, pb[:jp], po, ab[:ja], ao


@njit(cache=True, nogil=True)  # nogil: the output file's writer thread runs meanwhile
def write_block_records(acc_b, acc_t, acc_m, acc_a, acc_p, acc_v, pos, root, with_output, plan, relbits, attrbits, tp,
                        other_thing_is_value, rec):
    """The block's accepted questions as whole questions-JSON records (:func:`write_records`), with
    ``rec`` = (out uint8[M], scene_json, scene_off, q_start, first_index, at): written from question
    ``q_start`` into ``out[at:]`` while they fit (programs straight into ``out``). Returns (the next
    question, the end of the bytes in ``out``); a record that does not fit is not written (the
    caller makes room). Apart from :func:`write_block` so that neither compiles the other's loop."""
    blk = Block(acc_b, acc_t, acc_m, acc_a, acc_p, acc_v, pos, relbits, attrbits, root, with_output, True,
                other_thing_is_value)
    out, scene_json, scene_off, q, first_index, at = rec
    return write_records(q, at, blk, scratch(plan, tp, out, with_output), plan, tp, scene_json, scene_off, first_index,
                         program_bytes(plan, relbits))
