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
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from tensorqa.clevr.compiled_bits import lowest_bit
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
# byte strings the writer copies (numba freezes global arrays as constants)
_B_SPACE = np.frombuffer(b" ", np.uint8).copy()
_B_A = np.frombuffer(b" a ", np.uint8).copy()
_B_ANOTHER = np.frombuffer(b" another ", np.uint8).copy()
_B_OTHER = np.frombuffer(b" other ", np.uint8).copy()
_B_FALSE = np.frombuffer(b"false", np.uint8).copy()
_B_NO = np.frombuffer(b"no", np.uint8).copy()
_B_TRUE = np.frombuffer(b"true", np.uint8).copy()
_B_YES = np.frombuffer(b"yes", np.uint8).copy()
_B_ANSWER = np.frombuffer(b'","answer":', np.uint8).copy()
_B_INPUTS = np.frombuffer(b'","inputs":[', np.uint8).copy()
_B_QUESTION = np.frombuffer(b'"question":"', np.uint8).copy()
_B_OUTPUT = np.frombuffer(b',"_output":', np.uint8).copy()
_B_PROGRAM = np.frombuffer(b',"program":', np.uint8).copy()
_B_QUESTION_FAMILY_INDEX = np.frombuffer(b',"question_family_index":', np.uint8).copy()
_B_QUESTION_INDEX = np.frombuffer(b',"question_index":', np.uint8).copy()
_B_TEMPLATE_FILENAME = np.frombuffer(b',"template_filename":', np.uint8).copy()
_B_VALUE_INPUTS = np.frombuffer(b'],"value_inputs":[', np.uint8).copy()
_B_TYPE = np.frombuffer(b'{"type":"', np.uint8).copy()
_B_OPEN = np.frombuffer(b'{', np.uint8).copy()
_B_SPLIT = np.frombuffer(b'"split":', np.uint8).copy()
_B_IMAGE_FILENAME = np.frombuffer(b',"image_filename":', np.uint8).copy()
_B_IMAGE_INDEX = np.frombuffer(b',"image_index":', np.uint8).copy()
_B_IMAGE = np.frombuffer(b',"image":', np.uint8).copy()


@njit(cache=True, inline="always")
def text_key(root, scene, tid, draw):
    """``text.picker``'s key of a question: (scene, template, draw) folded into the text stream's root."""
    return fold(fold(fold(root, scene), tid), draw)


@njit(cache=True, inline="always")
def pick(k, slot, n):
    """``text.picker``'s pick(slot, n): an int in [0, n)."""
    return below(fold(k, slot), n)


@njit(cache=True, inline="always")
def grow(buf, at, need):
    """``buf`` with room for ``need`` more bytes after ``at``."""
    if at + need <= buf.shape[0]:
        return buf
    out = np.empty(max(2 * buf.shape[0], at + need), np.uint8)
    out[:at] = buf[:at]
    return out


@intrinsic
def _memcpy(typingctx, dst, dst_at, src, src_at, n):
    """dst[dst_at:dst_at + n] = src[src_at:src_at + n] for uint8 arrays, as LLVM's memcpy (the callers
    have checked the bounds): the strings are short and many, and slice views or byte loops cost
    several times more."""
    sig = types.void(dst, types.int64, src, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        d, da, s_, sa, n_ = args
        dary = context.make_array(signature.args[0])(context, builder, d)
        sary = context.make_array(signature.args[2])(context, builder, s_)
        dptr = builder.gep(dary.data, [da])
        sptr = builder.gep(sary.data, [sa])
        cgutils.raw_memcpy(builder, dptr, sptr, n_, 1)

    return sig, codegen


@njit(cache=True, inline="always")
def put_range(buf, at, src, a, z):
    """Copy src[a:z] to buf[at:]; returns the end."""
    _memcpy(buf, at, src, a, z - a)
    return at + z - a


def _fixed_copy(size: int):
    """An intrinsic copying ``size`` bytes from src[src_at:] to dst[dst_at:], a copy of constant size
    (a few moves, no call): for strings of at most ``size`` bytes where both arrays have room (the
    string table and the constants are padded, the output buffers keep slack) and the bytes past
    the string are overwritten later or unused."""

    @intrinsic
    def copy(typingctx, dst, dst_at, src, src_at):
        sig = types.void(dst, types.int64, src, types.int64)

        def codegen(context, builder, signature, args):
            d, da, s_, sa = args
            dary = context.make_array(signature.args[0])(context, builder, d)
            sary = context.make_array(signature.args[2])(context, builder, s_)
            cgutils.raw_memcpy(builder, builder.gep(dary.data, [da]), builder.gep(sary.data, [sa]),
                               context.get_constant(types.intp, size), 1)

        return sig, codegen

    return copy


_copy16 = _fixed_copy(16)
_copy24 = _fixed_copy(24)
_copy48 = _fixed_copy(48)


def _set_texts(bits: int = 10):
    """The JSON text of every set of objects 0 .. bits - 1 ('[]', '[0]', '[0,1]', ...), 24 bytes apart, and
    the lengths: a node's ``_output`` in one copy for CLEVR-sized scenes."""
    n = 1 << bits
    table, length = np.zeros(n * 24 + 8, np.uint8), np.zeros(n, np.int64)
    for v in range(n):
        s = ("[" + ",".join(str(i) for i in range(bits) if v >> i & 1) + "]").encode()
        table[v * 24:v * 24 + len(s)] = np.frombuffer(s, np.uint8)
        length[v] = len(s)
    return table, length


_SET_TEXT, _SET_LEN = _set_texts()


@njit(cache=True, inline="always")
def put(buf, at, strings, str_off, sid):
    """Copy string ``sid`` of the (padded) table to buf[at:]; returns the end."""
    a, z = str_off[sid], str_off[sid + 1]
    if z - a <= 16:
        _copy16(buf, at, strings, a)
    else:
        _memcpy(buf, at, strings, a, z - a)
    return at + z - a


@njit(cache=True, inline="always")
def put_bytes(buf, at, src):
    return put_range(buf, at, src, 0, src.shape[0])


@njit(cache=True, inline="always")
def put_int(buf, at, v):
    """Decimal digits of v (may be negative)."""
    if v < 0:
        buf[at] = 45
        at += 1
        v = -v
    if v == 0:
        buf[at] = 48
        return at + 1
    n, x = 0, v
    while x > 0:
        n += 1
        x //= 10
    for i in range(n - 1, -1, -1):
        buf[at + i] = 48 + v % 10
        v //= 10
    return at + n


@njit(cache=True, inline="always")
def is_space(c):
    return c == 32 or (9 <= c <= 13)


@njit(cache=True, inline="always")
def replace_all(src, n, old, new, dst):
    """Python's ``str.replace(old, new)`` (left to right, non-overlapping) of src[:n] into dst; returns
    the length."""
    m, at, i = old.shape[0], 0, 0
    while i < n:
        if i + m <= n:
            hit = True
            for j in range(m):
                if src[i + j] != old[j]:
                    hit = False
                    break
            if hit:
                at = put_bytes(dst, at, new)
                i += m
                continue
        dst[at] = src[i]
        at += 1
        i += 1
    return at


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
        if sid >= 0 and _B_TYPE.shape[0] + ln + _B_INPUTS.shape[0] <= 48:
            at = put_bytes(head, sid * 48, _B_TYPE)
            at = put_range(head, at, strings, str_off[sid], str_off[sid + 1])
            head_n[sid] = put_bytes(head, at, _B_INPUTS) - sid * 48
        if _B_VALUE_INPUTS.shape[0] + ln + 3 + _B_OUTPUT.shape[0] <= 48:
            at = put_bytes(mid, (sid + 1) * 48, _B_VALUE_INPUTS)
            if sid >= 0:
                mid[at] = 34
                at = put_range(mid, at + 1, strings, str_off[sid], str_off[sid + 1])
                mid[at] = 34
                at += 1
            mid[at] = 93
            at += 1
            if with_output:
                at = put_bytes(mid, at, _B_OUTPUT)
            mid_n[sid + 1] = at - (sid + 1) * 48
    return head, head_n, mid, mid_n


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
            _copy16(T2, at, strings, a)
        else:
            _memcpy(T2, at, strings, a, z - a)
        return at + z - a

    def p_put(at, sid):  # string sid into PS
        a, z = str_off[sid], str_off[sid + 1]
        if z - a <= 16:
            _copy16(PS, at, strings, a)
        else:
            _memcpy(PS, at, strings, a, z - a)
        return at + z - a

    def p_lit(at, lit):  # a constant into PS
        _memcpy(PS, at, lit, 0, lit.shape[0])
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
                _copy24(PS, at, _SET_TEXT, v * 24)
                return at + _SET_LEN[v]
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
            return p_lit(at, _B_TRUE if v else _B_FALSE)
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
            _copy48(PS, at, HEAD, type_sid * 48)
            at += hn
        else:
            at = p_lit(at, _B_TYPE)
            at = p_put(at, type_sid)
            at = p_lit(at, _B_INPUTS)
        if in_a >= 0:
            at = p_int(at, in_a)
            if in_b >= 0:
                PS[at] = 44
                at = p_int(at + 1, in_b)
        mn = mid_n[value_sid + 1]
        if mn >= 0:
            _copy48(PS, at, MID, (value_sid + 1) * 48)
            at += mn
        else:
            at = p_lit(at, _B_VALUE_INPUTS)
            if value_sid >= 0:
                PS[at] = 34
                at = p_put(at + 1, value_sid)
                PS[at] = 34
                at += 1
            PS[at] = 93
            at += 1
            if with_output:
                at = p_lit(at, _B_OUTPUT)
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
                n = replace_all(T2, n, _B_OTHER, _B_SPACE, T1)
                n = replace_all(T1, n, _B_ANOTHER, _B_A, T2)
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
                lit = _B_TRUE if code else _B_FALSE
            else:
                lit = _B_YES if code else _B_NO
            _memcpy(AS, 0, lit, 0, lit.shape[0])
            return lit.shape[0]
        if akind == INT:
            return put_int(AS, 0, code)
        sid = attr_word[answer_attr[ti], code]
        a, z = str_off[sid], str_off[sid + 1]
        if answer_json:
            AS[0] = 34
            _memcpy(AS, 1, strings, a, z - a)
            AS[z - a + 1] = 34
            return z - a + 2
        _memcpy(AS, 0, strings, a, z - a)
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
            at = put_bytes(out, at, _B_QUESTION)
            at = put_range(out, at, T2, 0, nt)
            at = put_bytes(out, at, _B_ANSWER)
            at = put_range(out, at, AS, 0, na)
            at = put_bytes(out, at, _B_PROGRAM)
            at = program(q, at)
            at = put_bytes(out, at, _B_TEMPLATE_FILENAME)
            at = put(out, at, strings, str_off, filename[t])
            at = put_bytes(out, at, _B_QUESTION_FAMILY_INDEX)
            at = put_int(out, at, family[t])
            at = put_bytes(out, at, _B_QUESTION_INDEX)
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
        at = put_bytes(out, at, _B_OPEN)
        at = put_range(out, at, scene_json, scene_off[s], scene_off[s + 1])
        at = put_bytes(out, at, _B_QUESTION)
        at = put_range(out, at, qb, qo[q], qo[q + 1])
        at = put_bytes(out, at, _B_ANSWER)
        at = put_range(out, at, ab, ao[q], ao[q + 1])
        at = put_bytes(out, at, _B_PROGRAM)
        at = put_range(out, at, pb, po[q], po[q + 1])
        at = put_bytes(out, at, _B_TEMPLATE_FILENAME)
        at = put(out, at, strings, str_off, filename[t])
        at = put_bytes(out, at, _B_QUESTION_FAMILY_INDEX)
        at = put_int(out, at, family[t])
        at = put_bytes(out, at, _B_QUESTION_INDEX)
        at = put_int(out, at, first_index + q)
        out[at] = 125
        at += 1
    return out[:at]


@njit(cache=True)
def json_string_items(arr):
    """(start, stop) of each string, quotes included, in a compact JSON array of strings (orjson's
    output of a list of str)."""
    n = 0
    for i in range(arr.shape[0]):  # an upper bound on the items: the quotes
        n += arr[i] == 34
    se = np.zeros((n // 2 + 1, 2), np.int64)
    k, i = 0, 1
    while i < arr.shape[0] and arr[i] == 34:
        j = i + 1
        while arr[j] != 34:
            j += 2 if arr[j] == 92 else 1  # a backslash escapes the next byte
        se[k, 0], se[k, 1] = i, j + 1
        k += 1
        i = j + 2  # past '",'
    return se[:k]


@njit(cache=True, nogil=True)
def scene_pieces(splits_json, names_json, image_indices):
    """Each scene's '"split":..,"image_filename":..,"image_index":..,"image":..,' as (bytes,
    offsets), from orjson's arrays of the splits and the image file names. "image" is the name up to
    its last '.', cut in the escaped text (no JSON escape holds a '.', no UTF-8 sequence a 0x2E)."""
    sp, nm = json_string_items(splits_json), json_string_items(names_json)
    S = image_indices.shape[0]
    out = np.empty(splits_json.shape[0] + 2 * names_json.shape[0] + S * 80 + 64, np.uint8)
    off = np.zeros(S + 1, np.int64)
    at = 0
    for s in range(S):
        at = put_bytes(out, at, _B_SPLIT)
        at = put_range(out, at, splits_json, sp[s, 0], sp[s, 1])
        at = put_bytes(out, at, _B_IMAGE_FILENAME)
        a, z = nm[s, 0], nm[s, 1]
        at = put_range(out, at, names_json, a, z)
        at = put_bytes(out, at, _B_IMAGE_INDEX)
        at = put_int(out, at, image_indices[s])
        at = put_bytes(out, at, _B_IMAGE)
        dot = z - 1
        while dot > a and names_json[dot] != 46:
            dot -= 1
        if dot > a:
            at = put_range(out, at, names_json, a, dot)
            out[at] = 34
            at += 1
        else:
            at = put_range(out, at, names_json, a, z)
        out[at] = 44
        at += 1
        off[s + 1] = at
    return out[:at], off


@njit(cache=True, nogil=True)
def _stored_string(flat, a, W, out, at):
    """'"' + the fixed-width stored string at flat[a:a + W] (up to its NUL padding) + '"' into out,
    or -1 where a byte is not plain printable ASCII without '"' and '\\' (those go through orjson)."""
    n = W
    while n > 0 and flat[a + n - 1] == 0:
        n -= 1
    for i in range(a, a + n):
        c = flat[i]
        if c < 32 or c > 126 or c == 34 or c == 92:
            return -1
    out[at] = 34
    at = put_range(out, at + 1, flat, a, a + n)
    out[at] = 34
    return at + 1


@njit(cache=True, nogil=True)
def stored_scene_pieces(splits, W1, names, W2, image_indices):
    """:func:`scene_pieces` from the store's fixed-width bytes (``splits`` uint8[S * W1], ``names``
    uint8[S * W2]), where every string is plain printable ASCII without '"' and '\\' (its JSON is
    itself in quotes): (bytes, offsets, True), else (.., .., False) and the caller takes orjson's way."""
    S = image_indices.shape[0]
    out = np.empty(S * (W1 + 2 * W2 + 100) + 64, np.uint8)
    off = np.zeros(S + 1, np.int64)
    at = 0
    for s in range(S):
        at = put_bytes(out, at, _B_SPLIT)
        at = _stored_string(splits, s * W1, W1, out, at)
        if at < 0:
            return out[:0], off, False
        at = put_bytes(out, at, _B_IMAGE_FILENAME)
        a = at
        at = _stored_string(names, s * W2, W2, out, at)
        if at < 0:
            return out[:0], off, False
        z = at
        at = put_bytes(out, at, _B_IMAGE_INDEX)
        at = put_int(out, at, image_indices[s])
        at = put_bytes(out, at, _B_IMAGE)
        dot = z - 1
        while dot > a and out[dot] != 46:
            dot -= 1
        stop = dot if dot > a else z - 1
        for i in range(a, stop):  # the name up to its last '.', in quotes
            out[at] = out[i]
            at += 1
        out[at] = 34
        out[at + 1] = 44
        at += 2
        off[s + 1] = at
    return out[:at], off, True
