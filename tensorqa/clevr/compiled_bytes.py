"""Byte-level writing for the compiled record writer (numba, CPU): copies into uint8 buffers as LLVM
memcpy (of constant size where the string is short), decimal integers, ``str.replace``, the constant
JSON pieces of a record and of a program node."""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

# byte strings the writer copies (numba freezes global arrays as constants)
B_SPACE = np.frombuffer(b" ", np.uint8).copy()
B_A = np.frombuffer(b" a ", np.uint8).copy()
B_ANOTHER = np.frombuffer(b" another ", np.uint8).copy()
B_OTHER = np.frombuffer(b" other ", np.uint8).copy()
B_FALSE = np.frombuffer(b"false", np.uint8).copy()
B_NO = np.frombuffer(b"no", np.uint8).copy()
B_TRUE = np.frombuffer(b"true", np.uint8).copy()
B_YES = np.frombuffer(b"yes", np.uint8).copy()
B_ANSWER = np.frombuffer(b'","answer":', np.uint8).copy()
B_INPUTS = np.frombuffer(b'","inputs":[', np.uint8).copy()
B_QUESTION = np.frombuffer(b'"question":"', np.uint8).copy()
B_OUTPUT = np.frombuffer(b',"_output":', np.uint8).copy()
B_PROGRAM = np.frombuffer(b',"program":', np.uint8).copy()
B_QUESTION_FAMILY_INDEX = np.frombuffer(b',"question_family_index":', np.uint8).copy()
B_QUESTION_INDEX = np.frombuffer(b',"question_index":', np.uint8).copy()
B_TEMPLATE_FILENAME = np.frombuffer(b',"template_filename":', np.uint8).copy()
B_VALUE_INPUTS = np.frombuffer(b'],"value_inputs":[', np.uint8).copy()
B_TYPE = np.frombuffer(b'{"type":"', np.uint8).copy()
B_SPLIT = np.frombuffer(b'"split":', np.uint8).copy()
B_IMAGE_FILENAME = np.frombuffer(b',"image_filename":', np.uint8).copy()
B_IMAGE_INDEX = np.frombuffer(b',"image_index":', np.uint8).copy()
B_IMAGE = np.frombuffer(b',"image":', np.uint8).copy()


@njit(cache=True, inline="always")
def grow(buf, at, need):
    """``buf`` with room for ``need`` more bytes after ``at``."""
    if at + need <= buf.shape[0]:
        return buf
    out = np.empty(max(2 * buf.shape[0], at + need), np.uint8)
    out[:at] = buf[:at]
    return out


@intrinsic
def memcpy(typingctx, dst, dst_at, src, src_at, n):
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
    memcpy(buf, at, src, a, z - a)
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


copy16 = _fixed_copy(16)
copy24 = _fixed_copy(24)
copy48 = _fixed_copy(48)


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


SET_TEXT, SET_LEN = _set_texts()


@njit(cache=True, inline="always")
def put(buf, at, strings, str_off, sid):
    """Copy string ``sid`` of the (padded) table to buf[at:]; returns the end."""
    a, z = str_off[sid], str_off[sid + 1]
    if z - a <= 16:
        copy16(buf, at, strings, a)
    else:
        memcpy(buf, at, strings, a, z - a)
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
