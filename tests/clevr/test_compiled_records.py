"""``clevr.compiled_records``' helpers against the Python functions they restate (its records
against the Python path's, byte for byte: ``test_compiled_driver``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorqa.clevr import compiled_bytes, compiled_records, compiled_scenes, text


def test_text_picks_equal_text_picker_and_engine_rng():
    from tensorqa.clevr.compiled_driver import text_root
    from tensorqa.engine import rng

    for seed, scene, tid, draw in [(0, 0, 0, 0), (3, 99, 45, 15), (2**40, 7, 89, 31)]:
        k = compiled_records.text_key(text_root(seed), scene, tid, draw)
        pick = text.picker(seed, scene, tid, draw)
        for slot, n in [(0, 3), (1, 2), (5, 3), (text.BRACKET_SLOT + 2, 2)]:
            want = ((rng.derive_int(seed, "clevr.text", scene, tid, draw, slot) >> 32) * n) >> 32
            assert compiled_records.pick(np.uint64(k), slot, n) == pick(slot, n) == want


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


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.sampled_from([(" other ", " "), (" another ", " a "), ("aa", "b")]))
def test_replace_all_is_str_replace(s, pair):
    old, new = pair
    src = np.frombuffer(s.encode(), np.uint8)
    dst = np.zeros(2 * len(src) + 8, np.uint8)
    n = compiled_bytes.replace_all(src, len(src), np.frombuffer(old.encode(), np.uint8),
                                     np.frombuffer(new.encode(), np.uint8), dst)
    assert bytes(dst[:n]).decode() == s.replace(old, new)


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
