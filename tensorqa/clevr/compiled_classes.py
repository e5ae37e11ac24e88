"""CLEVR's option classes for the compiled engine: ``grid._option_classes`` (class tables) and
``grid._draw_key`` (a draw in them), per row, over a scene's present keys as int64 bit sets.

Option classes are computed over the keys that match some object of the scene (at most 16 per
object), bit-parallel: each object's matching keys are a bit set over them; every other key has
|input ∩ key| = |scene ∩ key| = 0, so it is in one class per node kind and is counted, not visited.
Class tables whose input is the scene, an object's relation sets or ``same_<attr>`` of an object are
cached per scene (as ``scene_block.SceneTables`` caches them per block), other input sets in a few
slots keyed by their bits.

The per-row functions allocate nothing and run with numba's reference counting off (``_nrt=False``):
with it on, every call increfs each array of its NamedTuple arguments.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from tensorqa.clevr.compiled_bits import K, lowest_bit, popcount, select_bit
from tensorqa.clevr.plan import COUNTED, EXISTS, ONE, PLAIN

LOCAL = 6  # classes per input set: 2 x (membership - 1) + trivial
HASHED = 16  # class-table cache slots per scene for input sets other than the scene's, objects', same_<attr>'s
KW = (K + 63) // 64  # words of a bit set over a scene's present keys


class ClassTables(NamedTuple):
    """The class tables per table ``ct`` and cache slot (what :func:`class_table` writes)."""

    c_n: np.ndarray  # int64[CT, S, 4 * LOCAL] class sizes
    c_w: np.ndarray  # float64[CT, S, 4 * LOCAL] one option's weight in each class
    c_cdf: np.ndarray  # float64[CT, S, 4 * LOCAL] the cumulative masses
    c_bits: np.ndarray  # int64[CT, S, 4, 2, KW] per (relation, trivial): the options among the present keys
    allowed_bits: np.ndarray  # int64[CT, KW] the present keys that the table's NULL constraints allow
    allowed_stamp: np.ndarray  # int64[CT]


class Workspace(NamedTuple):
    """The class-table caches (:func:`workspace`); a slot holds the table of one input set for one
    scene (``stamp``: the scene's row in the block, ``tag``: the set's bits)."""

    stamp: np.ndarray  # int64[CT, S]
    tag: np.ndarray  # int64[CT, S]
    absent: np.ndarray  # int64[CT, K] the allowed keys that match no object (compiled_bits.absent_keys)
    absent_stamp: np.ndarray  # int64[CT]
    tables: ClassTables


class SceneKeys(NamedTuple):
    """The current scene's present keys as bit sets over their positions, and the class tables' inputs."""

    pk: np.ndarray  # int64[K] the present keys, in key order
    present_words: np.ndarray  # int64[KW] every present key
    null_words: np.ndarray  # int64[4, KW] per attribute: the present keys that leave it unspecified
    scnt1: np.ndarray  # int64[KW] the present keys that match one object
    obj_keys: np.ndarray  # int64[N, KW] per object: the present keys that match it
    sets: np.ndarray  # int64[4] a class table's input sets (one per relation)
    opt_words: np.ndarray  # int64[KW]
    ONCE: np.ndarray  # int64[4, KW] per input set: keys matching >= 1 of its objects,
    TWICE: np.ndarray  # int64[4, KW] >= 2 of them,
    OUTSIDE: np.ndarray  # int64[4, KW] >= 1 object outside it
    scene_box: np.ndarray  # int64[1] the scene's row in the block
    words_box: np.ndarray  # int64[1] words of the present keys' bit sets
    maskbits_box: np.ndarray  # int64[1] the scene's objects


class Scratch(NamedTuple):
    """A block's arrays for the current scene and row (``compiled.generate_block`` fills them)."""

    keys: SceneKeys
    key_null: np.ndarray  # int64[K] per key, its unspecified attributes (bit a)
    present: np.ndarray  # bool[K] the keys that match some object
    pkbits: np.ndarray  # int64[K] the present keys' objects (as keys.pk)
    pkscnt: np.ndarray  # int64[K] and their counts
    PRM: np.ndarray  # int64[P] the row's params
    VALS: np.ndarray  # int64[2, L] node outputs (row 1: the degeneracy test's re-run)
    PRE: np.ndarray  # int64[2, L] filter / count / exist inputs
    hist: np.ndarray  # int64[T, 11] answer counts (carried across blocks)
    hsort: np.ndarray  # int64[T, 11] hist, each template's sorted
    stats: np.ndarray  # int64[4] templates tried, rows run, class tables built (single, per relation)
    hs_box: np.ndarray  # uint64[1] the scene's hash: fold(root, scene)


def workspace(CT, N):
    """A :class:`Workspace` for ``CT`` tables and scenes of ``N`` object slots, allocated once per run
    and reused by every block (no fresh pages per block): per table, slots for the scene, each
    object's relation sets, ``same_<attr>`` of each object, and ``HASHED`` slots for any other input
    set. Contents are written before they are read, under the stamps that each block resets."""
    S_ = 1 + N + 4 * N + HASHED
    tables = ClassTables(np.zeros((CT, S_, 4 * LOCAL), np.int64), np.zeros((CT, S_, 4 * LOCAL), np.float64),
                         np.zeros((CT, S_, 4 * LOCAL), np.float64), np.zeros((CT, S_, 4, 2, KW), np.int64),
                         np.zeros((CT, KW), np.int64), np.full(CT, -1, np.int64))
    return Workspace(np.full((CT, S_), -1, np.int64), np.zeros((CT, S_), np.int64), np.zeros((CT, K), np.int64),
                     np.full(CT, -1, np.int64), tables)


@njit(cache=True, inline="always")
def has_extra_keys(base, rel):
    """``grid.extra_keys`` of a class table: filter, filter_count and filter_exist; no relate_filter*."""
    return rel == 0 and (base == PLAIN or base == COUNTED or base == EXISTS)


@njit(cache=True)
def key_nulls(keys):
    """int64[K]: per key, its unspecified attributes (bit a)."""
    key_null = np.zeros(keys.shape[0], np.int64)
    for k in range(keys.shape[0]):
        for a in range(4):
            if keys[k, a] < 0:
                key_null[k] |= 1 << a
    return key_null


@njit(cache=True, _nrt=False)  # allocates nothing: without NRT, no refcounting of the NamedTuple's arrays
def key_words(sc, npk):
    """A scene's present keys (``scene_keys``' pk, pkbits, pkscnt) as bit sets over their positions:
    every present key, per attribute those that leave it unspecified, those that match one object,
    per object those that match it (once per scene, read by the class tables)."""
    sk = sc.keys
    present_words, null_words, scnt1, obj_keys = sk.present_words, sk.null_words, sk.scnt1, sk.obj_keys
    for w in range((npk + 63) >> 6):
        scnt1[w] = 0
        present_words[w] = 0
        for a in range(4):
            null_words[a, w] = 0
        for i in range(obj_keys.shape[0]):
            obj_keys[i, w] = 0
    for p in range(npk):
        bit = np.int64(1) << (p & 63)
        present_words[p >> 6] |= bit
        m = sc.key_null[sk.pk[p]]
        for a in range(4):
            if (m >> a) & 1:
                null_words[a, p >> 6] |= bit
        if sc.pkscnt[p] == 1:
            scnt1[p >> 6] |= bit
        x = sc.pkbits[p]
        while x:
            obj_keys[lowest_bit(x), p >> 6] |= bit
            x &= x - 1


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def refresh_allowed(tb, sk, ct, null):
    """allowed_bits[ct]: the present keys that table ``ct``'s NULL constraints allow (once per scene):
    those that leave each of its NULL attributes (``null``, bit a) unspecified."""
    if tb.allowed_stamp[ct] != sk.scene_box[0]:
        for w in range(sk.words_box[0]):
            x = sk.present_words[w]
            for a in range(4):
                if (null >> a) & 1:
                    x &= sk.null_words[a, w]
            tb.allowed_bits[ct, w] = x
        tb.allowed_stamp[ct] = sk.scene_box[0]


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def set_words(sk, W):
    """Per input set ``sk.sets[j]`` and word: the keys matching >= 1 / >= 2 of its objects, and >= 1
    object outside it (ONCE, TWICE, OUTSIDE), the four sets at once, branch-free."""
    s0, s1, s2, s3 = sk.sets[0], sk.sets[1], sk.sets[2], sk.sets[3]
    for w in range(W):
        o0, o1, o2, o3 = np.int64(0), np.int64(0), np.int64(0), np.int64(0)
        t0, t1, t2, t3 = np.int64(0), np.int64(0), np.int64(0), np.int64(0)
        u0, u1, u2, u3 = np.int64(0), np.int64(0), np.int64(0), np.int64(0)
        x = sk.maskbits_box[0]
        while x:
            i = lowest_bit(x)
            x &= x - 1
            m = sk.obj_keys[i, w]
            i0, i1, i2, i3 = -((s0 >> i) & 1), -((s1 >> i) & 1), -((s2 >> i) & 1), -((s3 >> i) & 1)
            t0 |= o0 & m & i0
            o0 |= m & i0
            u0 |= m & ~i0
            t1 |= o1 & m & i1
            o1 |= m & i1
            u1 |= m & ~i1
            t2 |= o2 & m & i2
            o2 |= m & i2
            u2 |= m & ~i2
            t3 |= o3 & m & i3
            o3 |= m & i3
            u3 |= m & ~i3
        sk.ONCE[0, w], sk.ONCE[1, w], sk.ONCE[2, w], sk.ONCE[3, w] = o0, o1, o2, o3
        sk.TWICE[0, w], sk.TWICE[1, w], sk.TWICE[2, w], sk.TWICE[3, w] = t0, t1, t2, t3
        sk.OUTSIDE[0, w], sk.OUTSIDE[1, w], sk.OUTSIDE[2, w], sk.OUTSIDE[3, w] = u0, u1, u2, u3


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def class_sizes(tb, sk, ct, j, whole, slot, absent, base, rel, faithful):
    """Input set j of :func:`class_table`: its class sizes c_n, one option's weight c_w per class, and
    its options' bit sets c_bits[.., j, trivial, :]; ``absent``: the allowed keys matching no object."""
    counted, pk = has_extra_keys(base, rel), sk.pk
    n0, n1, n_one = 0, 0, 0
    for w in range(sk.words_box[0]):
        once, twice, outside = np.int64(0), np.int64(0), np.int64(0)
        if not whole:
            once, twice, outside = sk.ONCE[j, w], sk.TWICE[j, w], sk.OUTSIDE[j, w]
        al = tb.allowed_bits[ct, w]
        if whole:
            one = sk.scnt1[w]
            any_ = al  # every present key matches some object of the scene
        else:
            one = once & ~twice
            any_ = once
        if base == ONE:
            opt = one & al
        elif base == PLAIN:
            opt = any_ & al
            if rel == 0 and w == 0 and pk[0] == 0:
                opt &= ~np.int64(1)  # filter drops the all-unspecified key (key 0, first when present)
        else:
            opt = al  # count / exist: keys present in the scene
        triv = (opt & ~outside) if rel else np.int64(0)
        tb.c_bits[ct, slot, j, 0, w] = opt & ~triv
        tb.c_bits[ct, slot, j, 1, w] = triv
        n0 += popcount(opt & ~triv)
        n1 += popcount(triv)
        n_one += popcount(one & opt)
    n_opt = n0 + n1
    n_extra = n_opt if base == EXISTS else n_one
    has_extra = counted and n_extra > 0
    first = 4 if (has_extra and faithful) else 0  # the options' class: members 3 or 1
    c_n, c_w = tb.c_n, tb.c_w
    c_n[ct, slot, j * LOCAL + first] = n0
    c_n[ct, slot, j * LOCAL + first + 1] = n1
    if has_extra:
        c_n[ct, slot, j * LOCAL + 2 + rel] += absent  # keys matching nothing: extra only (trivial for relate)
        if base == PLAIN and faithful:
            c_n[ct, slot, j * LOCAL + 2] += 1  # filter's all-unspecified key: an extra key only
    if counted:
        n_extra_keys = (K if faithful else absent) if has_extra else 0
        share = np.float64(n_extra) / max(np.float64(n_opt + n_extra), 1.0)
        alpha = (1.0 - share) / max(np.float64(n_opt), 1.0)
        beta = share / max(np.float64(n_extra_keys), 1.0)
    else:
        alpha, beta = 1.0, 0.0
    for m in range(LOCAL):
        in_opt = 1.0 if (m // 2) != 1 else 0.0
        in_extra = 1.0 if m // 2 >= 1 else 0.0
        c_w[ct, slot, j * LOCAL + m] = alpha * in_opt + beta * in_extra


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def class_table(tb, sk, ct, J, whole, slot, base, rel, nallowed, null, faithful):
    """``grid._option_classes`` for the input sets ``sets[:J]`` (one per relation for relate_filter*;
    ``whole``: the input is the whole scene), into the caches at [ct, slot] (:func:`class_sizes`); the
    table's ``base``, ``rel``, ``nallowed`` and ``null`` from ``plan.Plan``, ``faithful`` from ``plan.Rules``.

    A present key's class is 2 x (membership - 1) + trivial, membership 1 = an option, 2 = an extra key
    only, 3 = both (``grid._option_classes``). Options of ``filter_unique`` and ``relate_filter*`` are
    members 1; of ``filter`` / ``filter_count`` / ``filter_exist`` members 3 where the extra keys may
    match objects (CLEVR's defect 1) and extras exist, else 1; the absent allowed keys are members 2
    and live in ``absent_keys``'s list, after ``filter``'s all-unspecified key (present, no option).
    So each (relation, trivial) has one class of present keys, and a draw selects in its bit set.

    Bit-parallel over the present keys: with M[i] the keys matching object i, |s ∩ key| = 1 is
    ``once & ~twice`` accumulated over the objects of s, |s ∩ key| = |scene ∩ key| (trivial) is no
    match among the objects outside s, and NULL constraints are the mask ``allowed_bits``."""
    c_n, c_w = tb.c_n, tb.c_w
    refresh_allowed(tb, sk, ct, null)
    nap = 0
    for w in range(sk.words_box[0]):
        nap += popcount(tb.allowed_bits[ct, w])
    absent = nallowed - nap  # allowed keys that match no object
    for i in range(J * LOCAL):
        c_n[ct, slot, i] = 0
    if not whole:
        set_words(sk, sk.words_box[0])
    for j in range(J):
        class_sizes(tb, sk, ct, j, whole, slot, absent, base, rel, faithful)
    if rel:
        n_tr, n_non = 0, 0
        for j in range(J):
            for m in range(LOCAL):
                if m % 2 == 1:
                    n_tr += c_n[ct, slot, j * LOCAL + m]
                else:
                    n_non += c_n[ct, slot, j * LOCAL + m]
        keep = 1.0
        if n_non > 0:
            keep = min(np.rint(np.float64(n_non) * 0.1 / 0.9) / max(np.float64(n_tr), 1.0), 1.0)
        for j in range(J):
            for m in range(1, LOCAL, 2):
                c_w[ct, slot, j * LOCAL + m] = c_w[ct, slot, j * LOCAL + m] * keep
    total = 0.0  # the cumulative masses, summed in grid._draw_key's order
    for i in range(J * LOCAL):
        total += np.float64(c_n[ct, slot, i]) * c_w[ct, slot, i]
        tb.c_cdf[ct, slot, i] = total


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def plain_draw(tb, sk, ct, null, s, base, u):
    """:func:`class_table` + :func:`draw_key` for one input set ``s`` (not the whole scene) of a
    ``filter_unique`` node (``base`` ONE, no relation; ``filter`` has extra keys: the tables): its
    options are one class of weight 1 (the present keys matching one object of s, or any, that NULL
    constraints allow), so the draw is the rank-th option, rank from u by draw_key's arithmetic.
    -1: no option."""
    W, pk = sk.words_box[0], sk.pk
    refresh_allowed(tb, sk, ct, null)
    n0 = 0
    for w in range(W):
        once, twice = np.int64(0), np.int64(0)
        x = sk.maskbits_box[0] & s
        while x:
            i = lowest_bit(x)
            x &= x - 1
            m = sk.obj_keys[i, w]
            twice |= once & m
            once |= m
        if base == ONE:
            opt = once & ~twice & tb.allowed_bits[ct, w]
        else:
            opt = once & tb.allowed_bits[ct, w]
            if w == 0 and pk[0] == 0:
                opt &= ~np.int64(1)
        sk.opt_words[w] = opt
        n0 += popcount(opt)
    if n0 == 0:
        return -1
    total = np.float64(n0)
    x = u * total
    rest = (x - (total - total)) / max(total, 1e-300)
    rank = np.int64(rest * total)
    rank = min(max(rank, 0), n0 - 1)
    for w in range(W):
        in_word = popcount(sk.opt_words[w])
        if rank < in_word:
            return pk[(w << 6) + select_bit(sk.opt_words[w], rank)]
        rank -= in_word
    return K - 1


@njit(cache=True, inline="always")  # inlined into callers that run without NRT
def draw_key(plan, rules, ws, sc, u, J, ct, slot, counted, rel):
    """``grid._draw_key`` for one row from the class table at [ct, slot]: (key, relation), (-2 - r,
    relation) for the r-th allowed key that matches no object (``compiled_bits.absent_keys``), or
    (-1, -1) where no option has weight."""
    c_n, c_w, c_cdf = ws.tables.c_n, ws.tables.c_w, ws.tables.c_cdf
    JL = J * LOCAL
    total = c_cdf[ct, slot, JL - 1]  # the table's cumulative masses (class_table)
    if not total > 0:
        return -1, -1
    x = u * total
    c = 0
    while c < JL and c_cdf[ct, slot, c] <= x:
        c += 1
    c = min(c, JL - 1)
    m_c = np.float64(c_n[ct, slot, c]) * c_w[ct, slot, c]
    rest = (x - (c_cdf[ct, slot, c] - m_c)) / max(m_c, 1e-300)
    n_c = c_n[ct, slot, c]
    rank = np.int64(rest * np.float64(n_c))
    rank = min(max(rank, 0), max(n_c - 1, 0))
    j, local = c // LOCAL, c % LOCAL
    if counted and local == 2 + rel:  # extra keys only: the allowed keys that match no object (the
        if plan.ct_base[ct] == PLAIN and rules.faithful:  # caller reads absent_keys' list, made only
            if rank == 0:  # when needed), after filter's all-unspecified key (key 0), present but no option
                return 0, j
            rank -= 1
        return -2 - min(rank, K - 1), j
    t = local % 2
    for w in range(sc.keys.words_box[0]):  # the rank-th set bit of the class's bit set
        word = ws.tables.c_bits[ct, slot, j, t, w]
        in_word = popcount(word)
        if rank < in_word:
            return sc.keys.pk[(w << 6) + select_bit(word, rank)], j
        rank -= in_word
    return K - 1, j
