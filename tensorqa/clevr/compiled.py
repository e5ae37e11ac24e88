"""The compiled twin of CLEVR's grid generation (numba, CPU): ``grid.run_template`` (draws),
``validity.valid_rows`` (constraints, degeneracy), ``torch_backend.TemplateRows.fill`` (rounds of draws)
and ``torch_backend.choose`` (CLEVR's per-scene loop) in one pass over a block of scenes.

Why compiled: a scene has at most 62 objects here (CLEVR: 3 to 10), so an object set is one int64
word and every CLEVR function is a few integer operations; the torch grid spends its time in
per-call overheads on small tensors. This module does the same arithmetic (the same hashes, the
same option classes and float64 weights, the same inverse CDF) per row, and evaluates a template
for a scene only when CLEVR's loop reaches it (draws hash (seed, scene, template, node, draw), so a
row does not depend on what else is evaluated). ``tests/clevr/test_compiled.py`` checks the accepted
rows against the torch grid's, ``test_compiled_driver.py`` both engines' files, byte for byte, in
both semantics and under CLEVR's options.

Option classes (``grid._option_classes``) are computed over the keys that match some object of the
scene (at most 16 per object), bit-parallel: each object's matching keys are a bit set over them;
every other key has |input ∩ key| = |scene ∩ key| = 0, so it is in one class per node kind and is
counted, not visited. Class tables whose input is the scene, an object's relation sets or
``same_<attr>`` of an object are cached per scene, as ``scene_block.SceneTables`` caches them per block,
and other input sets in a few slots keyed by their bits.

Numba refcounts every array passed to a function, even an inlined one, with an atomic operation,
so the per-row code is closures over the block's arrays inside :func:`generate_block`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tensorqa.clevr.constants import MAX_BINS
from tensorqa.clevr.compiled_bits import (
    K,
    absent_keys,
    key_index,
    lowest_bit,
    popcount,
    scene_keys,
    select_bit,
    stable_order,
    uniform_in,
)
from tensorqa.clevr.options import rejects as _rejects
from tensorqa.engine.rng_numba import fold
from tensorqa.clevr.plan import (
    BOOL,
    COUNT,
    COUNTED,
    EQUAL,
    EXIST,
    EXISTS,
    FILTER,
    FILTER_ATTR,
    GREATER,
    INT,
    INTERSECT,
    LESS,
    NEQ,
    ONE,
    OUT_NEQ,
    PLAIN,
    QUERY,
    RELATE,
    SAME,
    SCENE,
    UNION,
    UNIQUE,
)

LOCAL = 6
rejects = njit(cache=True, inline="always")(_rejects)  # the one definition, compiled
HASHED = 16  # class-table cache slots per scene for input sets other than the scene's, objects', same_<attr>'s
_ = (BOOL, INT)


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


@njit(cache=True)
def key_words(npk, pk, pkbits, pkscnt, key_null, present_words, null_words, scnt1, obj_keys):
    """A scene's present keys (``scene_keys``' pk, pkbits, pkscnt) as bit sets over their positions:
    every present key, per attribute those that leave it unspecified, those that match one object,
    per object those that match it (once per scene, read by the class tables)."""
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
        m = key_null[pk[p]]
        for a in range(4):
            if (m >> a) & 1:
                null_words[a, p >> 6] |= bit
        if pkscnt[p] == 1:
            scnt1[p >> 6] |= bit
        x = pkbits[p]
        while x:
            obj_keys[lowest_bit(x), p >> 6] |= bit
            x &= x - 1


@njit(cache=True)
def only_false(plan, out_neq_counts):
    """bool[T]: whether every valid row of a template answers False: the last node is ``equal_*`` of
    two outputs that an OUT_NEQ keeps apart (CLEVR's ``compare_integer#0`` under defect 4)."""
    T = plan.nnodes.shape[0]
    out = np.zeros(T, np.bool_)
    for ti in range(T):
        last = plan.nnodes[ti] - 1
        if plan.op[ti, last] != EQUAL:
            continue
        i, j = plan.in0[ti, last], plan.in1[ti, last]
        ints = plan.kind[ti, i] == INT and plan.kind[ti, j] == INT
        for c in range(plan.ncons[ti]):
            a, z = plan.cons[ti, c, 1], plan.cons[ti, c, 2]
            apart = plan.cons[ti, c, 0] == OUT_NEQ and ((a == i and z == j) or (a == j and z == i))
            if apart and (out_neq_counts or not ints):
                out[ti] = True
    return out


@njit(cache=True)
def sort_counts(hist, hsort, nbins):
    """hsort[ti]: each template's answer counts in ascending order (insertion sort: at most 11 bins)."""
    for ti in range(hist.shape[0]):
        for i in range(nbins[ti]):
            v = hist[ti, i]
            j = i
            while j > 0 and hsort[ti, j - 1] > v:
                hsort[ti, j] = hsort[ti, j - 1]
                j -= 1
            hsort[ti, j] = v


def workspace(CT, N):
    """The class-table caches of :func:`generate_block` for ``CT`` tables and scenes of ``N`` object
    slots, allocated once per run and reused by every block (no fresh pages per block): per table,
    slots for the scene, each object's relation sets, ``same_<attr>`` of each object, and ``HASHED``
    slots for any other input set (tagged with the set's bits). Contents are written before they are
    read, under the stamps that each block resets."""
    S_ = 1 + N + 4 * N + HASHED
    KW = (K + 63) // 64  # words of a bit set over a scene's present keys
    return (np.full((CT, S_), -1, np.int64), np.zeros((CT, S_), np.int64), np.zeros((CT, K), np.int64),
            np.full(CT, -1, np.int64), np.zeros((CT, S_, 4 * LOCAL), np.int64),
            np.zeros((CT, S_, 4 * LOCAL), np.float64), np.zeros((CT, S_, 4 * LOCAL), np.float64),
            np.zeros((CT, S_, 4, 2, KW), np.int64), np.zeros((CT, KW), np.int64), np.full(CT, -1, np.int64))


@njit(cache=True, nogil=True)  # nogil: the output file's writer thread runs meanwhile
def generate_block(plan, rules, scene, pos, use, hist, fresh, stats, ws):
    """CLEVR's per-scene loop over a block's scenes (``torch_backend.choose`` with ``TemplateRows.fill``
    done lazily). ``use`` int64[T], ``hist`` int64[T, 11]: the bookkeeping, carried across blocks
    (``fresh``: the run's first block, which resets); ``ws``: a :func:`workspace` for the block's
    object slots. Returns the accepted questions in order: (scene row, template, draw, answer code,
    params int64[Q, Pmax], node outputs int64[Q, L])."""
    # named reads of the plan (``plan.Plan``), the options (``plan.Rules``) and the scenes (``plan.SceneBits``)
    op, in0, in1, suffix, related, attr, kind = plan.op, plan.in0, plan.in1, plan.suffix, plan.related, plan.attr, plan.kind
    kp, kpa, rp, sp, ctid, nnodes = plan.kp, plan.kp_attr, plan.rp, plan.sp, plan.ctid, plan.nnodes
    nvals, keys, cons, ncons, nparams, nbins = plan.nvals, plan.keys, plan.cons, plan.ncons, plan.nparams, plan.nbins
    ct_base, ct_related, ct_allowed, ct_nallowed, ct_null = (plan.ct_base, plan.ct_related, plan.ct_allowed,
                                                             plan.ct_nallowed, plan.ct_null)
    root, ipt, tpi, reset_every, rounds = rules.root, rules.ipt, rules.tpi, rules.reset_every, rules.rounds
    draws, valid_draws = rules.draws, rules.valid_draws
    out_neq_counts, neq_inverted, faithful = rules.out_neq_counts, rules.neq_inverted, rules.faithful
    attrs, maskbits, relbits, attrbits, keybits = scene.attrs, scene.maskbits, scene.relbits, scene.attrbits, scene.keybits
    T = nparams.shape[0]
    B, N = relbits.shape[0], relbits.shape[1]
    Pmax = max(1, nparams.max())
    L = op.shape[1]
    stamp, tag, absent, absent_stamp, c_n, c_w, c_cdf, c_bits, allowed_bits, allowed_stamp = ws
    stamp[:, :] = -1  # stamps hold a scene's row in the block
    absent_stamp[:] = -1
    allowed_stamp[:] = -1
    KW = (K + 63) // 64
    obj_keys = np.zeros((max(N, 1), KW), np.int64)  # per object: the present keys that match it
    scnt1 = np.zeros(KW, np.int64)  # the present keys that match one object
    key_null = key_nulls(keys)
    null_words = np.zeros((4, KW), np.int64)  # per attribute: the present keys that leave it unspecified
    present_words = np.zeros(KW, np.int64)  # every present key
    words_box = np.zeros(1, np.int64)
    maskbits_box = np.zeros(1, np.int64)
    sets = np.zeros(4, np.int64)
    opt_words = np.zeros(KW, np.int64)
    ONCE, TWICE, OUTSIDE = np.zeros((4, KW), np.int64), np.zeros((4, KW), np.int64), np.zeros((4, KW), np.int64)
    present = np.zeros(K, np.bool_)
    pk = np.zeros(K, np.int64)
    pkbits = np.zeros(K, np.int64)
    pkscnt = np.zeros(K, np.int64)
    order = np.zeros(T, np.int64)
    bucket = np.zeros(T * draws + 2, np.int64)
    # the current row: params, node outputs and filter inputs (row 1: the degeneracy test's re-run)
    PRM = np.full(Pmax, -1, np.int64)
    VALS, PRE = np.zeros((2, L), np.int64), np.zeros((2, L), np.int64)
    hsort = np.zeros((T, MAX_BINS), np.int64)  # each template's answer counts (hist), sorted
    npk_box = np.zeros(1, np.int64)  # the current scene's present keys and id, read by run()
    scene_box = np.zeros(1, np.int64)
    hs_box = np.zeros(1, np.uint64)  # the scene's hash: fold(root, scene)
    Qmax = B * min(tpi, T) * ipt
    acc_b = np.zeros(Qmax, np.int64)
    acc_t = np.zeros(Qmax, np.int64)
    acc_m = np.zeros(Qmax, np.int64)
    acc_a = np.zeros(Qmax, np.int64)
    acc_p = np.full((Qmax, Pmax), -1, np.int64)
    acc_v = np.zeros((Qmax, L), np.int64)

    def refresh_allowed(ct):
        """allowed_bits[ct]: the present keys that table ``ct``'s NULL constraints allow (once per scene):
        those that leave each of its NULL attributes unspecified."""
        if allowed_stamp[ct] != scene_box[0]:
            r = ct_null[ct]
            for w in range(words_box[0]):
                x = present_words[w]
                for a in range(4):
                    if (r >> a) & 1:
                        x &= null_words[a, w]
                allowed_bits[ct, w] = x
            allowed_stamp[ct] = scene_box[0]

    def class_table(ct, J, whole, slot):
        """``grid._option_classes`` for the input sets ``sets[:J]`` (one per relation for relate_filter*;
        ``whole``: the input is the whole scene), into the block's caches at [ct, slot]: the class sizes
        c_n[.., j * 6 + c] (the keys matching no object included), one option's weight c_w[.., j * 6 + c],
        and the present keys that are options, as bit sets over their positions in ``pk`` (key order),
        split by whether the relation removes nothing (``trivial``): c_bits[.., j, trivial, :].

        A present key's class is 2 x (membership - 1) + trivial, membership 1 = an option, 2 = an extra key
        only, 3 = both (``grid._option_classes``). Options of ``filter_unique`` and ``relate_filter*`` are
        members 1; of ``filter`` / ``filter_count`` / ``filter_exist`` members 3 where the extra keys may
        match objects (CLEVR's defect 1) and extras exist, else 1; the absent allowed keys are members 2
        and live in ``absent_keys``'s list, after ``filter``'s all-unspecified key (present, no option). So each (relation, trivial) has one class
        of present keys, and a draw selects in its bit set.

        Bit-parallel over the present keys: with M[i] the keys matching object i, |s ∩ key| = 1 is
        ``once & ~twice`` accumulated over the objects of s, |s ∩ key| = |scene ∩ key| (trivial) is no
        match among the objects outside s, and NULL constraints are the mask ``allowed_bits``."""
        base, rel = ct_base[ct], ct_related[ct]
        counted = has_extra_keys(base, rel)
        W = words_box[0]
        refresh_allowed(ct)
        nap = 0
        for w in range(W):
            nap += popcount(allowed_bits[ct, w])
        absent = ct_nallowed[ct] - nap  # allowed keys that match no object
        for i in range(J * LOCAL):
            c_n[ct, slot, i] = 0
        mb = maskbits_box[0]
        if not whole:  # per set and word: keys matching >= 1 / >= 2 objects of the set, >= 1 outside it
            s0, s1, s2, s3 = sets[0], sets[1], sets[2], sets[3]
            for w in range(W):
                o0, o1, o2, o3 = np.int64(0), np.int64(0), np.int64(0), np.int64(0)
                t0, t1, t2, t3 = np.int64(0), np.int64(0), np.int64(0), np.int64(0)
                u0, u1, u2, u3 = np.int64(0), np.int64(0), np.int64(0), np.int64(0)
                x = mb
                while x:  # the four sets at once, branch-free (J = 1 uses the first)
                    i = lowest_bit(x)
                    x &= x - 1
                    m = obj_keys[i, w]
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
                ONCE[0, w], ONCE[1, w], ONCE[2, w], ONCE[3, w] = o0, o1, o2, o3
                TWICE[0, w], TWICE[1, w], TWICE[2, w], TWICE[3, w] = t0, t1, t2, t3
                OUTSIDE[0, w], OUTSIDE[1, w], OUTSIDE[2, w], OUTSIDE[3, w] = u0, u1, u2, u3
        for j in range(J):
            n0, n1, n_one = 0, 0, 0
            for w in range(W):
                once, twice, outside = np.int64(0), np.int64(0), np.int64(0)
                if not whole:
                    once, twice, outside = ONCE[j, w], TWICE[j, w], OUTSIDE[j, w]
                al = allowed_bits[ct, w]
                if whole:
                    one = scnt1[w]
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
                c_bits[ct, slot, j, 0, w] = opt & ~triv
                c_bits[ct, slot, j, 1, w] = triv
                n0 += popcount(opt & ~triv)
                n1 += popcount(triv)
                n_one += popcount(one & opt)
            n_opt = n0 + n1
            n_extra = n_opt if base == EXISTS else n_one
            has_extra = counted and n_extra > 0
            first = 4 if (has_extra and faithful) else 0  # the options' class: members 3 or 1
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
            c_cdf[ct, slot, i] = total

    def plain_draw(ct, s, base, u):
        """:func:`class_table` + :func:`draw_key` for one input set ``s`` (not the whole scene) of a
        ``filter_unique`` node (``base`` ONE, no relation; ``filter`` has extra keys: the tables): its options are one
        class of weight 1 (the present keys matching one object of s, or any, that NULL constraints
        allow), so the draw is the rank-th option, rank from u by draw_key's arithmetic. -1: no option."""
        W = words_box[0]
        refresh_allowed(ct)
        mb = maskbits_box[0]
        n0 = 0
        for w in range(W):
            once, twice = np.int64(0), np.int64(0)
            x = mb & s
            while x:
                i = lowest_bit(x)
                x &= x - 1
                m = obj_keys[i, w]
                twice |= once & m
                once |= m
            if base == ONE:
                opt = once & ~twice & allowed_bits[ct, w]
            else:
                opt = once & allowed_bits[ct, w]
                if w == 0 and pk[0] == 0:
                    opt &= ~np.int64(1)
            opt_words[w] = opt
            n0 += popcount(opt)
        if n0 == 0:
            return -1
        total = np.float64(n0)
        x = u * total
        rest = (x - (total - total)) / max(total, 1e-300)
        rank = np.int64(rest * total)
        rank = min(max(rank, 0), n0 - 1)
        for w in range(W):
            in_word = popcount(opt_words[w])
            if rank < in_word:
                return pk[(w << 6) + select_bit(opt_words[w], rank)]
            rank -= in_word
        return K - 1

    def draw_key(u, J, ct, slot, counted, rel):
        """``grid._draw_key`` for one row from the class table at [ct, slot]: (key, relation), (-2 - r,
        relation) for the r-th allowed key that matches no object (:func:`absent_keys`), or (-1, -1) where
        no option has weight."""
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
            if ct_base[ct] == PLAIN and faithful:  # caller reads absent_keys' list, made only when needed),
                if rank == 0:  # after filter's all-unspecified key (key 0), present but no option
                    return 0, j
                rank -= 1
            return -2 - min(rank, K - 1), j
        t = local % 2
        for w in range(words_box[0]):  # the rank-th set bit of the class's bit set
            word = c_bits[ct, slot, j, t, w]
            in_word = popcount(word)
            if rank < in_word:
                return pk[(w << 6) + select_bit(word, rank)], j
            rank -= in_word
        return K - 1, j

    def run(ti, b, draw, sample, replace, w):
        """One row of template ``ti`` on scene ``b``: draws its params into PRM (``sample``) or uses
        them, node outputs in VALS[w] (sets as object bits), filter / count / exist inputs in PRE[w]. ``replace``:
        a node whose output is the whole scene (the degeneracy test), or -1. False where the row has no
        answer ('__INVALID__', or a node with no option); the remaining nodes are then not run."""
        N = relbits.shape[1]
        for k in range(nnodes[ti]):
            o_ = op[ti, k]
            a0 = in0[ti, k]
            x = VALS[w, a0] if a0 >= 0 else 0
            v, pre = np.int64(0), np.int64(0)  # the node's output and input set, stored once below
            if k == replace or o_ == SCENE:
                v = maskbits[b]
            elif o_ == FILTER:
                rel = related[ti, k]
                if sample:
                    ct = ctid[ti, k]
                    if not rel and x == 0 and ct_base[ct] <= ONE:
                        return False  # filter / filter_unique of the empty set: no key is an option
                    J = 4 if rel else 1
                    slot = -1
                    if rel:
                        slot = 1 + x
                        for j in range(4):
                            sets[j] = relbits[b, x, j]
                    else:
                        sets[0] = x
                        if op[ti, a0] == SCENE:
                            slot = 0
                        elif op[ti, a0] == SAME:
                            slot = 1 + N + attr[ti, a0] * N + VALS[w, in0[ti, a0]]
                    base = ct_base[ct]
                    if slot < 0 and base == ONE:
                        # any other set (a row's own: rarely seen twice) as input of filter_unique:
                        # one class of options, drawn without a table
                        key = plain_draw(ct, x, base, uniform_in(hs_box[0], ti, draw, k))
                        if key < 0:
                            return False
                        for i in range(4):
                            p = kp[ti, k, i]
                            if p >= 0:
                                PRM[p] = keys[key, kpa[ti, k, i]]
                        slot = -2
                    if slot == -1:  # any other set: a hashed slot, tagged with the set
                        slot = 1 + 5 * N + ((x * 0x9E3779B1) >> 7) % HASHED
                    if slot >= 0:
                        cache = slot
                        if stamp[ct, cache] != scene_box[0] or tag[ct, cache] != x:
                            stats[2 + (J == 4)] += 1
                            class_table(ct, J, slot == 0, cache)
                            stamp[ct, cache] = scene_box[0]
                            tag[ct, cache] = x
                        u = uniform_in(hs_box[0], ti, draw, k)
                        key, j = draw_key(u, J, ct, cache, has_extra_keys(base, rel), rel)
                        if key == -1:
                            return False
                        if key < -1:
                            if absent_stamp[ct] != scene_box[0]:
                                absent_keys(ct, present, ct_allowed, absent)
                                absent_stamp[ct] = scene_box[0]
                            key = absent[ct, -2 - key]
                        for i in range(4):
                            p = kp[ti, k, i]
                            if p >= 0:
                                PRM[p] = keys[key, kpa[ti, k, i]]
                        if rel:
                            PRM[rp[ti, k]] = j
                s = relbits[b, x, PRM[rp[ti, k]]] if rel else x
                f = s & keybits[b, key_index(PRM, kp[ti, k], kpa[ti, k])]
                pre = f
                sf = suffix[ti, k]
                if sf == PLAIN:
                    v = f
                elif sf == ONE:
                    if popcount(f) != 1:
                        return False
                    v = lowest_bit(f)
                elif sf == COUNTED:
                    v = popcount(f)
                else:
                    v = 1 if f != 0 else 0
            elif o_ == RELATE:
                if sample:
                    PRM[rp[ti, k]] = min(np.int64(uniform_in(hs_box[0], ti, draw, k) * 4.0), 3)
                v = relbits[b, x, PRM[rp[ti, k]]]
            elif o_ == FILTER_ATTR:
                a = attr[ti, k]
                if sample:
                    PRM[sp[ti, k]] = min(np.int64(uniform_in(hs_box[0], ti, draw, k) * nvals[a]), nvals[a] - 1)
                v = x & attrbits[b, a, PRM[sp[ti, k]]]
            elif o_ == SAME:
                a = attr[ti, k]
                v = attrbits[b, a, attrs[b, x, a]] & ~(np.int64(1) << x)
            elif o_ == UNION:
                v = x | VALS[w, in1[ti, k]]
            elif o_ == INTERSECT:
                v = x & VALS[w, in1[ti, k]]
            elif o_ == COUNT:
                pre = x
                v = popcount(x)
            elif o_ == EXIST:
                pre = x
                v = 1 if x != 0 else 0
            elif o_ == UNIQUE:
                if popcount(x) != 1:
                    return False
                v = lowest_bit(x)
            elif o_ == QUERY:
                v = attrs[b, x, attr[ti, k]]
            elif o_ == EQUAL:
                v = 1 if x == VALS[w, in1[ti, k]] else 0
            elif o_ == LESS:
                v = 1 if x < VALS[w, in1[ti, k]] else 0
            elif o_ == GREATER:
                v = 1 if x > VALS[w, in1[ti, k]] else 0
            VALS[w, k] = v
            PRE[w, k] = pre
        return True

    def is_valid(ti, b):
        """``validity.valid_rows`` for a row that ran: NEQ / OUT_NEQ, the answer's range, CLEVR's
        degeneracy test (a raw relate replaced by the scene keeps the answer)."""
        for c in range(ncons[ti]):
            typ, i, j = cons[ti, c, 0], cons[ti, c, 1], cons[ti, c, 2]
            if typ == OUT_NEQ:
                if kind[ti, i] == INT and kind[ti, j] == INT and not out_neq_counts:
                    if PRE[0, i] == PRE[0, j]:
                        return False
                elif VALS[0, i] == VALS[0, j]:
                    return False
            elif typ == NEQ:
                v1, v2 = PRM[i], PRM[j]
                if v1 >= 0 and v2 >= 0 and ((v1 != v2) if neq_inverted else (v1 == v2)):
                    return False
        last = nnodes[ti] - 1
        ans = VALS[0, last]
        if ans < 0 or ans > MAX_BINS - 1:
            return False
        for k in range(nnodes[ti]):
            if op[ti, k] == RELATE and run(ti, b, 0, False, k, 1) and VALS[1, last] == ans:
                return False
        return True

    def count_answer(ti, a):
        """hist[ti, a] += 1, hsort kept sorted: the last of the counts equal to the old one goes up."""
        c = hist[ti, a]
        hist[ti, a] = c + 1
        j = nbins[ti] - 1
        while j >= 0 and hsort[ti, j] != c:
            j -= 1
        if j >= 0:  # (an answer outside the template's bins is counted, not ranked, as options.rejected)
            hsort[ti, j] = c + 1

    def rejected(ti, a):
        """``options.rejects`` over the sorted counts."""
        nb = nbins[ti]
        return rejects(hist[ti, a], hsort[ti, nb - 2], hsort[ti, nb // 2])

    sort_counts(hist, hsort, nbins)
    answers_false = only_false(plan, out_neq_counts)
    q = 0
    for b in range(B):
        if (fresh and b == 0) or pos[b] % reset_every == 0:
            use[:] = 0
            hist[:, :] = 0
            hsort[:, :] = 0
        npk_box[0] = scene_keys(keybits[b], present, pk, pkbits, pkscnt)
        words_box[0] = (npk_box[0] + 63) >> 6
        maskbits_box[0] = maskbits[b]
        key_words(npk_box[0], pk, pkbits, pkscnt, key_null, present_words, null_words, scnt1, obj_keys)
        scene_box[0] = b
        hs_box[0] = fold(root, pos[b])
        stable_order(use, order, bucket)
        got_templates = 0
        for ti in order:
            # The template's draws in CLEVR's scan order, each evaluated when the scan reaches it:
            # rounds of draws (4, 4, 8, ...) while fewer than valid_draws are valid, as
            # torch_backend.TemplateRows.fill; a round's count is known whenever the scan passes it.
            stats[0] += 1
            got, q0 = 0, q
            if answers_false[ti] and rejected(ti, 0):
                continue  # no row can be accepted: skipped, as its scan would end
            d, avail, r, n_valid = 0, min(rounds[0], draws), 1, 0
            while d < avail:
                for i in range(nparams[ti]):
                    PRM[i] = -1
                stats[1] += 1
                if run(ti, b, d, True, -1, 0) and is_valid(ti, b):
                    n_valid += 1
                    a = VALS[0, nnodes[ti] - 1]
                    dup = False
                    if ipt > 1:  # the same params twice in one scene and template: once
                        for qq in range(q0, q):
                            same = True
                            for i in range(nparams[ti]):
                                if acc_p[qq, i] != PRM[i]:
                                    same = False
                                    break
                            if same:
                                dup = True
                                break
                    if not dup and not rejected(ti, a):
                        count_answer(ti, a)
                        acc_b[q], acc_t[q], acc_m[q], acc_a[q] = b, ti, d, a
                        for i in range(nparams[ti]):  # (the rest stays -1)
                            acc_p[q, i] = PRM[i]
                        for i in range(nnodes[ti]):  # (the rest stays 0)
                            acc_v[q, i] = VALS[0, i]
                        q += 1
                        got += 1
                        if got >= ipt:
                            break
                d += 1
                if d == avail:  # the end of a round
                    if n_valid >= valid_draws or r >= len(rounds):
                        break
                    avail += max(min(rounds[r], draws - avail), 0)
                    r += 1
            if got:
                use[ti] += 1
                got_templates += 1
                if got_templates >= tpi:
                    break
    return acc_b[:q], acc_t[:q], acc_m[:q], acc_a[:q], acc_p[:q], acc_v[:q]
