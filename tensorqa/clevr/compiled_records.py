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

import numpy as np
from numba import njit

from tensorqa.clevr.compiled_bits import lowest_bit
from tensorqa.clevr.compiled_bytes import (
    B_A, B_ANOTHER, B_ANSWER, B_FALSE, B_INPUTS, B_NO, B_OPEN, B_OTHER, B_OUTPUT, B_PROGRAM, B_QUESTION,
    B_QUESTION_FAMILY_INDEX, B_QUESTION_INDEX, B_SPACE, B_TEMPLATE_FILENAME, B_TRUE, B_TYPE, B_VALUE_INPUTS,
    B_YES, SET_LEN, SET_TEXT, copy16, copy24, copy48, grow, memcpy, node_texts, put, put_bytes, put_int,
    put_range, replace_all,
)
from tensorqa.engine.rng_numba import below, fold
from tensorqa.clevr.plan import (
    ATTR,
    BOOL,
    CLOSE,
    COUNTED,
    FILTER,
    FILTER_ATTR,
    GAP,
    INT,
    LIT,
    OBJECT,
    ONE,
    OPEN,
    RELATE,
    RELATION_TYPE,
    SET,
)

BRACKET_SLOT = 64  # text.BRACKET_SLOT


@njit(cache=True, inline="always")
def text_key(root, scene, tid, draw):
    """``text.picker``'s key of a question: (scene, template, draw) folded into the text stream's root."""
    return fold(fold(fold(root, scene), tid), draw)


@njit(cache=True, inline="always")
def pick(k, slot, n):
    """``text.picker``'s pick(slot, n): an int in [0, n)."""
    return below(fold(k, slot), n)


@njit(cache=True, nogil=True)  # nogil: the output file's writer thread runs meanwhile
def write_block(acc_b, acc_t, acc_m, acc_a, acc_p, acc_v, pos, root, with_output, answer_json, plan, relbits, attrbits,
                tp, other_thing_is_value, rec=None):
    """The block's accepted questions as three string columns, (bytes, offsets) each: the question
    (``text.render``), the program (questions-JSON text of ``records.expand_program``, with
    ``_output`` if ``with_output``), the answer (as JSON if ``answer_json``: true, 3, "red"; else as
    the Parquet string: yes, 3, red). Returns (Q, 0, question bytes, offsets, program bytes,
    offsets, answer bytes, offsets).

    With ``rec`` = (out uint8[M], scene_json, scene_off, q_start, first_index, at), whole
    questions-JSON records instead (``join_records``' bytes, each preceded by ',' but the file's
    first), written from question ``q_start`` into ``out[at:]`` while they fit: returns (the next
    question, the end of the bytes in ``out``, and empty columns). A record that does not fit is not
    written (the caller makes room).

    Each question is written into fixed scratch buffers by closures over the block's arrays (numba
    refcounts every array passed to a function, even an inlined one, with an atomic operation), then
    copied once into the columns or ``out``; with ``rec`` the program is written in ``out`` directly."""
    # named reads of the plans (``plan.Plan``, ``plan.TextPlan``)
    op, in0, in1, suffix, related, attr, kind = plan.op, plan.in0, plan.in1, plan.suffix, plan.related, plan.attr, plan.kind
    kp, kpa, rp, sp, nnodes, ptype, nparams = plan.kp, plan.kp_attr, plan.rp, plan.sp, plan.nnodes, plan.ptype, plan.nparams
    strings, str_off, var_start, var_ops_start, ops = tp.strings, tp.str_off, tp.var_start, tp.var_ops_start, tp.ops
    word, syn_start, syn_count, syn_ids, other, pair = tp.word, tp.syn_start, tp.syn_count, tp.syn_ids, tp.other, tp.pair_params
    node_type, filter_type, suffix_type, relate_type = tp.node_type, tp.filter_type, tp.suffix_type, tp.relate_type
    attr_word, answer_kind, answer_attr, core, spacing = tp.attr_word, tp.answer_kind, tp.answer_attr, tp.core, tp.spacing
    Q = acc_b.shape[0]
    L = op.shape[1]
    T1, T2 = np.empty(8192, np.uint8), np.empty(8192, np.uint8)  # a question's text (T2), scratch (T1)
    PSN = 1024 + L * 6 * (200 + 4 * relbits.shape[1])  # bytes a question's program may take
    if rec is not None:
        PS = rec[0]  # programs go straight into the output (a record is written where there is room for PSN)
    else:
        PS = np.empty(PSN, np.uint8)  # a question's program
    AS = np.empty(256, np.uint8)  # its answer
    shown = np.zeros(max(1, ptype.shape[1]), np.int64)
    imap = np.zeros(L, np.int64)
    Qc = Q if rec is None else 0  # the columns' questions
    qb, pb, ab = np.empty(Qc * 96 + 64, np.uint8), np.empty(Qc * (1024 if with_output else 700) + 64, np.uint8), \
        np.empty(Qc * 8 + 64, np.uint8)
    qo, po, ao = np.zeros(Qc + 1, np.int64), np.zeros(Qc + 1, np.int64), np.zeros(Qc + 1, np.int64)

    HEAD, head_n, MID, mid_n = node_texts(strings, str_off, with_output)

    def t_put(at, sid):  # string sid into T2
        a, z = str_off[sid], str_off[sid + 1]
        if z - a <= 16:
            copy16(T2, at, strings, a)
        else:
            memcpy(T2, at, strings, a, z - a)
        return at + z - a

    def p_put(at, sid):  # string sid into PS
        a, z = str_off[sid], str_off[sid + 1]
        if z - a <= 16:
            copy16(PS, at, strings, a)
        else:
            memcpy(PS, at, strings, a, z - a)
        return at + z - a

    def p_lit(at, lit):  # a constant into PS
        memcpy(PS, at, lit, 0, lit.shape[0])
        return at + lit.shape[0]

    def p_int(at, v):  # decimal digits into PS
        if v < 0:
            PS[at] = 45
            at += 1
            v = -v
        if v < 10:
            PS[at] = 48 + v
            return at + 1
        n, x = 0, v
        while x > 0:
            n += 1
            x //= 10
        for i in range(n - 1, -1, -1):
            PS[at + i] = 48 + v % 10
            v //= 10
        return at + n

    def p_output(at, kd, a, v):  # a node's _output
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
                at = p_int(at, lowest_bit(v))
                v &= v - 1
                first = False
            PS[at] = 93
            return at + 1
        if kd == BOOL:
            return p_lit(at, B_TRUE if v else B_FALSE)
        if kd == ATTR:
            PS[at] = 34
            at = p_put(at + 1, attr_word[a, v])
            PS[at] = 34
            return at + 1
        return p_int(at, v)  # object, int

    def p_node(at, first, type_sid, in_a, in_b, value_sid, kd, a, v):  # {"type","inputs","value_inputs"[,"_output"]}
        if not first:
            PS[at] = 44
            at += 1
        hn = head_n[type_sid]
        if hn >= 0:
            copy48(PS, at, HEAD, type_sid * 48)
            at += hn
        else:
            at = p_lit(at, B_TYPE)
            at = p_put(at, type_sid)
            at = p_lit(at, B_INPUTS)
        if in_a >= 0:
            at = p_int(at, in_a)
            if in_b >= 0:
                PS[at] = 44
                at = p_int(at + 1, in_b)
        mn = mid_n[value_sid + 1]
        if mn >= 0:
            copy48(PS, at, MID, (value_sid + 1) * 48)
            at += mn
        else:
            at = p_lit(at, B_VALUE_INPUTS)
            if value_sid >= 0:
                PS[at] = 34
                at = p_put(at + 1, value_sid)
                PS[at] = 34
                at += 1
            PS[at] = 93
            at += 1
            if with_output:
                at = p_lit(at, B_OUTPUT)
        if with_output:
            at = p_output(at, kd, a, v)
        PS[at] = 125
        return at + 1

    def text(q):  # text.render of question q into T2; returns its length
        ti = acc_t[q]
        k = text_key(root, pos[acc_b[q]], ti, acc_m[q])
        nvar = var_start[ti + 1] - var_start[ti]
        v = var_start[ti] + pick(k, 0, nvar)
        for i in range(nparams[ti]):  # each parameter's word or a synonym (slot 1 + i)
            ty, code = ptype[ti, i], acc_p[q, i]
            cnt = syn_count[ty, code + 1]
            if cnt > 0:
                shown[i] = syn_ids[syn_start[ty, code + 1] + pick(k, 1 + i, cnt)]
            else:
                shown[i] = word[ty, code + 1]
        # the pieces joined with their whitespace collapsed as they come (" ".join(text.split())):
        # each piece's collapsed core, one space where whitespace separates two cores
        n, j, skip, gap = 0, 0, False, False
        for x in range(var_ops_start[v], var_ops_start[v + 1]):
            kd, arg = ops[x, 0], ops[x, 1]
            if kd >= GAP:  # a literal of whitespace only came before
                kd -= GAP
                if not skip:
                    gap = True
            if kd == OPEN:
                skip = pick(k, BRACKET_SLOT + j, 2) != 1
                j += 1
            elif kd == CLOSE:
                skip = False
            elif not skip:
                sid = arg if kd == LIT else shown[arg]
                sp = spacing[sid]
                if sp & 4:
                    if n > 0 and (gap or sp & 1):
                        T2[n] = 32
                        n += 1
                    n = t_put(n, core[sid])
                    gap = (sp & 2) != 0
                elif sp & 1:
                    gap = True
        if other[ti]:
            drop = False
            for a in range(4):
                v1, v2 = acc_p[q, pair[ti, a]], acc_p[q, pair[ti, a + 4]]
                if v1 != v2 and ((v1 >= 0 and v2 >= 0) or (a == 3 and other_thing_is_value)):
                    drop = True
            if drop:
                n = replace_all(T2, n, B_OTHER, B_SPACE, T1)
                n = replace_all(T1, n, B_ANOTHER, B_A, T2)
        return n

    def program(q, at):  # records.expand_program of question q as JSON text into PS[at:]; returns the end
        ti, b = acc_t[q], acc_b[q]
        PS[at] = 91
        at += 1
        e = 0  # emitted nodes
        for k in range(nnodes[ti]):
            o_ = op[ti, k]
            a0, a1 = in0[ti, k], in1[ti, k]
            if o_ == FILTER:
                cur = imap[a0]
                s = acc_v[q, a0]
                if related[ti, k]:
                    r = acc_p[q, rp[ti, k]]
                    s = relbits[b, acc_v[q, a0], r]
                    at = p_node(at, e == 0, relate_type, cur, -1, word[RELATION_TYPE, r + 1], SET, -1, s)
                    cur, e = e, e + 1
                for i in range(4):
                    p = kp[ti, k, i]
                    if p < 0 or acc_p[q, p] < 0:
                        continue
                    a = kpa[ti, k, i]
                    s = s & attrbits[b, a, acc_p[q, p]]
                    at = p_node(at, e == 0, filter_type[a], cur, -1, word[a, acc_p[q, p] + 1], SET, -1, s)
                    cur, e = e, e + 1
                sf = suffix[ti, k]
                if sf != 0:
                    kd = OBJECT if sf == ONE else (INT if sf == COUNTED else BOOL)
                    at = p_node(at, e == 0, suffix_type[sf], cur, -1, -1, kd, -1, acc_v[q, k])
                    cur, e = e, e + 1
                imap[k] = cur
                continue
            value = -1
            if o_ == RELATE:
                value = word[RELATION_TYPE, acc_p[q, rp[ti, k]] + 1]
            elif o_ == FILTER_ATTR:
                value = word[attr[ti, k], acc_p[q, sp[ti, k]] + 1]
            at = p_node(at, e == 0, node_type[ti, k], imap[a0] if a0 >= 0 else -1, imap[a1] if a1 >= 0 else -1,
                        value, kind[ti, k], attr[ti, k], acc_v[q, k])
            imap[k] = e
            e += 1
        PS[at] = 93
        return at + 1

    def answer(q):  # the answer into AS; returns its length
        ti, code = acc_t[q], acc_a[q]
        akind = answer_kind[ti]
        if akind == BOOL:
            if answer_json:
                lit = B_TRUE if code else B_FALSE
            else:
                lit = B_YES if code else B_NO
            memcpy(AS, 0, lit, 0, lit.shape[0])
            return lit.shape[0]
        if akind == INT:
            return put_int(AS, 0, code)
        sid = attr_word[answer_attr[ti], code]
        a, z = str_off[sid], str_off[sid + 1]
        if answer_json:
            AS[0] = 34
            memcpy(AS, 1, strings, a, z - a)
            AS[z - a + 1] = 34
            return z - a + 2
        memcpy(AS, 0, strings, a, z - a)
        return z - a

    if rec is not None:
        out, scene_json, scene_off, q_start, first_index, at = rec
        filename, family = tp.filename, tp.family
        cap, q = out.shape[0], q_start
        while q < Q:
            nt, na = text(q), answer(q)
            s, t = acc_b[q], acc_t[q]
            need = nt + PSN + na + scene_off[s + 1] - scene_off[s] + 256 + str_off[filename[t] + 1] - str_off[filename[t]]
            if at + need > cap:
                break
            if first_index + q > 0:
                out[at] = 44
                at += 1
            out[at] = 123
            at = put_range(out, at + 1, scene_json, scene_off[s], scene_off[s + 1])
            at = put_bytes(out, at, B_QUESTION)
            at = put_range(out, at, T2, 0, nt)
            at = put_bytes(out, at, B_ANSWER)
            at = put_range(out, at, AS, 0, na)
            at = put_bytes(out, at, B_PROGRAM)
            at = program(q, at)
            at = put_bytes(out, at, B_TEMPLATE_FILENAME)
            at = put(out, at, strings, str_off, filename[t])
            at = put_bytes(out, at, B_QUESTION_FAMILY_INDEX)
            at = put_int(out, at, family[t])
            at = put_bytes(out, at, B_QUESTION_INDEX)
            at = put_int(out, at, first_index + q)
            out[at] = 125
            at += 1
            q += 1
        return q, at, qb[:0], qo[:1], pb[:0], po[:1], ab[:0], ao[:1]
    jq, jp, ja = 0, 0, 0
    for q in range(Q):
        n = text(q)
        qb = grow(qb, jq, n + 16)
        jq = put_range(qb, jq, T2, 0, n)
        qo[q + 1] = jq
        n = program(q, 0)
        pb = grow(pb, jp, n + 16)
        jp = put_range(pb, jp, PS, 0, n)
        po[q + 1] = jp
        n = answer(q)
        ab = grow(ab, ja, n + 16)
        ja = put_range(ab, ja, AS, 0, n)
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


