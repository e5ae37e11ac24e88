"""``clevr.compiled_classes``: a scene's present keys as bit sets, the option classes of a table and a
draw in them, against sets computed with numpy from the keys each object matches."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tensorqa.clevr import compiled_classes as cc
from tensorqa.clevr.compiled_bits import K, scene_keys
from tensorqa.clevr.keys import key_table
from tensorqa.clevr.plan import ONE
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_batch import StaticBatch


def _scene(seed=3):
    """One sampled scene's key bits int64[K] and objects, and a Scratch / Workspace over it."""
    from tensorqa.clevr.compiled_driver import scene_bits

    bits = scene_bits(StaticBatch.from_scenes(sample_scenes(1, seed=seed), "cpu"))
    keybits, mb, N = bits.keybits[0], int(bits.maskbits[0]), bits.relbits.shape[1]
    KW = cc.KW
    z = lambda *s: np.zeros(s, np.int64)  # noqa: E731
    sk = cc.SceneKeys(z(K), z(KW), z(4, KW), z(KW), z(max(N, 1), KW), z(4), z(KW), z(4, KW), z(4, KW),
                     z(4, KW), z(1), z(1), z(1))
    sc = cc.Scratch(sk, cc.key_nulls(key_table()), np.zeros(K, np.bool_), z(K), z(K), z(1), z(2, 1), z(2, 1),
                    z(1, 11), z(1, 11), z(4), np.zeros(1, np.uint64))
    npk = scene_keys(keybits, sc.present, sk.pk, sc.pkbits, sc.pkscnt)
    sk.words_box[0], sk.maskbits_box[0], sk.scene_box[0] = (npk + 63) >> 6, mb, 0
    cc.key_words(sc, npk)
    return keybits, mb, sk, sc, cc.workspace(1, N)


def _keys_of(words, pk):
    """The keys whose positions in ``pk`` are set in ``words``."""
    return sorted(int(pk[p]) for p in range(64 * len(words)) if (int(words[p >> 6]) >> (p & 63)) & 1)


def test_key_nulls_mark_the_unspecified_attributes():
    keys = key_table()
    want = ((keys < 0).astype(np.int64) << np.arange(4)).sum(1)
    np.testing.assert_array_equal(cc.key_nulls(keys), want)
    assert cc.key_nulls(keys)[0] == 0b1111  # key 0: nothing specified


def test_key_words_are_the_present_keys_per_object():
    keybits, mb, sk, sc, _ = _scene()
    present = np.flatnonzero(keybits)
    assert _keys_of(sk.present_words, sk.pk) == list(present)
    once = [k for k in present if bin(int(keybits[k])).count("1") == 1]
    assert _keys_of(sk.scnt1, sk.pk) == once
    for i in range(bin(mb).count("1")):
        assert _keys_of(sk.obj_keys[i], sk.pk) == [k for k in present if (int(keybits[k]) >> i) & 1]


def test_filter_unique_classes_of_the_scene_are_the_keys_of_one_object():
    """Table 0 as filter_unique of the whole scene, no NULL constraint: one class of weight 1, the
    keys that match exactly one object."""
    keybits, mb, sk, sc, ws = _scene()
    tb = ws.tables
    cc.refresh_allowed(tb, sk, 0, 0)
    cc.class_table(tb, sk, 0, 1, True, 0, ONE, 0, K, 0, True)
    once = [k for k in range(K) if bin(int(keybits[k])).count("1") == 1]
    assert tb.c_n[0, 0, 0] == len(once) and tb.c_n[0, 0, 1:cc.LOCAL].sum() == 0
    assert tb.c_w[0, 0, 0] == 1.0 and tb.c_cdf[0, 0, cc.LOCAL - 1] == len(once)
    assert _keys_of(tb.c_bits[0, 0, 0, 0], sk.pk) == once
    for u in (0.01, 0.5, 0.99):  # the inverse CDF of one class: the int(u * n)-th option in key order
        key, j = cc.draw_key(_Plan(np.array([ONE])), _Rules(True), ws, sc, u, 1, 0, 0, False, 0)
        assert (key, j) == (once[int(u * len(once))], 0)


def test_plain_draw_is_the_rank_th_option_of_a_subset():
    """filter_unique of objects {0, 2}: the keys matching exactly one of them, in key order."""
    keybits, mb, sk, sc, ws = _scene(seed=5)
    s = 0b101
    opts = [k for k in range(K) if bin(int(keybits[k]) & s).count("1") == 1]
    assert opts
    for u in (0.0001, 0.3, 0.9999):
        assert cc.plain_draw(ws.tables, sk, 0, 0, s, ONE, u) == opts[int(u * len(opts))]
    assert cc.plain_draw(ws.tables, sk, 0, 0, 0, ONE, 0.5) == -1  # no object: no option



class _Plan(NamedTuple):  # the one field of plan.Plan that draw_key reads
    ct_base: np.ndarray


class _Rules(NamedTuple):
    faithful: bool
