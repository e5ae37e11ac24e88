"""``clevr.compiled_records``' helpers against the Python functions they restate (its records
against the Python path's, byte for byte: ``test_compiled_driver``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from clevr.oracle import picker  # tests/ is on sys.path (conftest)
from tensorqa.clevr import compiled_records, text


def test_text_picks_equal_text_picker_and_engine_rng():
    from tensorqa.clevr.compiled_driver import text_root
    from tensorqa.engine import rng

    for seed, scene, tid, draw in [(0, 0, 0, 0), (3, 99, 45, 15), (2**40, 7, 89, 31)]:
        k = compiled_records.text_key(text_root(seed), scene, tid, draw)
        pick = picker(seed, scene, tid, draw)
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
