"""``clevr.compiled_scenes``: each scene's questions-JSON fields, compiled, against orjson's pieces
built one by one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorqa.clevr import compiled_scenes

_NAME = st.text(alphabet=st.sampled_from(list('ab._"\\/\n\t é水') + ["\U0001f600", "\x7f", "\x1f"]), max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["train", "val", 'a"b']), _NAME, st.integers(0, 10**12)), max_size=6))
def test_scene_pieces_equal_orjson_pieces(scenes):
    """Each scene's questions-JSON fields, cut from orjson's arrays, equal the pieces built one by one
    (``image``: the name up to its last '.', escaped)."""
    import orjson

    splits, names, idx = ([s[i] for s in scenes] for i in range(3))
    data, off = compiled_scenes.scene_pieces(np.frombuffer(orjson.dumps(splits), np.uint8),
                                              np.frombuffer(orjson.dumps(names), np.uint8), np.array(idx, np.int64))
    assert len(off) == len(scenes) + 1
    for i, (s, f, x) in enumerate(scenes):
        want = (b'"split":' + orjson.dumps(s) + b',"image_filename":' + orjson.dumps(f) + b',"image_index":'
                + str(x).encode() + b',"image":' + orjson.dumps(f.rsplit(".", 1)[0]) + b",")
        assert bytes(data[off[i]:off[i + 1]]) == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["train", "val", 'a"b', "new"]), _NAME, st.integers(0, 10**12)), max_size=6))
def test_stored_scene_pieces_equal_orjson_pieces_or_refuse(scenes):
    """The same pieces from the store's fixed-width bytes: equal to orjson's where every string is
    plain printable ASCII without '"' and '\\'; otherwise refused (the caller takes orjson's way)."""
    import orjson

    splits, names, idx = ([s[i] for s in scenes] for i in range(3))
    sp = np.array([s.encode() for s in splits], dtype="S") if scenes else np.zeros(0, "S1")
    nm = np.array([f.encode() for f in names], dtype="S") if scenes else np.zeros(0, "S1")
    W1, W2 = max(sp.dtype.itemsize, 1), max(nm.dtype.itemsize, 1)
    data, off, ok = compiled_scenes.stored_scene_pieces(
        np.frombuffer(sp.astype(f"S{W1}").tobytes(), np.uint8), W1,
        np.frombuffer(nm.astype(f"S{W2}").tobytes(), np.uint8), W2, np.array(idx, np.int64))
    plain = all(c.isascii() and c.isprintable() and c not in '"\\' for s in splits + names for c in s)
    assert ok == plain
    if ok:
        for i, (s, f, x) in enumerate(scenes):
            want = (b'"split":' + orjson.dumps(s) + b',"image_filename":' + orjson.dumps(f) + b',"image_index":'
                    + str(x).encode() + b',"image":' + orjson.dumps(f.rsplit(".", 1)[0]) + b",")
            assert bytes(data[off[i]:off[i + 1]]) == want
