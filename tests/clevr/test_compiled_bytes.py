"""``clevr.compiled_bytes``: the byte-level helpers of the numba writer against the Python operations
they restate (``str.replace``, ``str(int)``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorqa.clevr import compiled_bytes

_TEXT = st.text(alphabet=" \t\nab oteh?r", max_size=40)


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.sampled_from([(" other ", " "), (" another ", " a "), ("aa", "b")]))
def test_replace_all_is_str_replace(s, pair):
    old, new = pair
    src = np.frombuffer(s.encode(), np.uint8)
    dst = np.zeros(2 * len(src) + 8, np.uint8)
    n = compiled_bytes.replace_all(src, len(src), np.frombuffer(old.encode(), np.uint8),
                                     np.frombuffer(new.encode(), np.uint8), dst)
    assert bytes(dst[:n]).decode() == s.replace(old, new)


@settings(max_examples=300, deadline=None)
@given(st.integers(-(2**62), 2**62), st.integers(0, 5))
def test_put_int_writes_str_of_the_integer(v, at):
    buf = np.full(40, 120, np.uint8)
    end = compiled_bytes.put_int(buf, at, v)
    assert bytes(buf[at:end]).decode() == str(v)
    assert (buf[:at] == 120).all() and (buf[end:] == 120).all()  # nothing written outside


def test_grow_keeps_the_written_prefix():
    buf = np.arange(8, dtype=np.uint8)
    assert compiled_bytes.grow(buf, 8, 0) is buf
    out = compiled_bytes.grow(buf, 6, 20)
    assert len(out) >= 26 and (out[:6] == buf[:6]).all()
