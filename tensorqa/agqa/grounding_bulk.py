"""The bulk path of :mod:`.grounding`: columns, with no Python loop over rows (rows laid out per
group of identical key layouts, id lists built once per distinct request, the JSON texts one
gather over a string pool). ``grounding.grounding_column`` is its public face; the rows and scene
tables it reads come from :mod:`.grounding_rows`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tensorqa.errors import TensorQAError
from tensorqa.agqa.semantics import Semantics
from tensorqa.scenes.vocab import vocab
from tensorqa.agqa.grounding_text import (
    ACTION_SLOTS, CHOOSE, EXISTS_OBJ, OBJ_REL, REL_ANY, SIDE_OBJ, SIDE_REL, STRETCH, VARIANT_SHIFT,
    VIDEO_OPENING_SPAN, ZERO_WIDTH_SHIFT, frame_parts, string_scalar)
from tensorqa.agqa.text import gather_text
from tensorqa.agqa.grounding_rows import (
    JSON_EMPTY, JSON_END, JSON_INSTANCE, Rows, SRC_FRAMES, SRC_INTERACT_EXISTS, SRC_INTERACT_TIME, SRC_OBJ_REL,
    SRC_PAIR_REL, SRC_REL_ANY, SceneTables, MAX_FRAME_VARIANTS, keyframes_in, stretches, tables)

_READS = {  # the request fields (o, o2, r) each source reads; the others are zeroed so equal lists meet
    SRC_OBJ_REL: (True, False, True), SRC_PAIR_REL: (True, True, True), SRC_REL_ANY: (False, False, True),
    SRC_INTERACT_EXISTS: (True, False, False), SRC_INTERACT_TIME: (True, False, False),
    SRC_FRAMES: (False, False, False),
}


def _lists(st: SceneTables, req: np.ndarray) -> pa.Array:
    """JSON list bodies (``"o4/000105", "o4/000134"``) of distinct requests int64[U, 7] (source,
    video, o, o2 + 1, r, lo, hi) -> string [U]."""
    src, b, o, o2, r, lo, hi = req.T
    F, O = st.F, vocab().num_objects
    fills = {
        SRC_OBJ_REL: lambda i: st.rel[b[i], :, o[i], r[i]],
        SRC_PAIR_REL: lambda i: st.rel[b[i], :, o[i], r[i]] | (st.rel[b[i], :, (o2[i] - 1).clip(min=0), r[i]]
                                                               & (o2[i] > 0)[:, None]),
        SRC_REL_ANY: lambda i: st.occurs[b[i], :, r[i]],
        SRC_INTERACT_EXISTS: lambda i: st.interact["objExists"][b[i], :, o[i]],
        SRC_INTERACT_TIME: lambda i: st.interact["objTime"][b[i], :, o[i]],
        SRC_FRAMES: lambda i: np.ones((i.size, F), bool),
    }
    m = np.zeros((len(req), F), bool)
    for s, fill in fills.items():
        i = np.flatnonzero(src == s)
        if i.size:
            m[i] = fill(i)
    m &= keyframes_in(lo, hi, F)
    row, f = np.nonzero(m)
    prefix = np.select([np.isin(src, (SRC_OBJ_REL, SRC_INTERACT_EXISTS, SRC_INTERACT_TIME)),
                        np.isin(src, (SRC_PAIR_REL, SRC_REL_ANY))], [o, O + r], -1)[row]
    prefixes = tables()["prefix"]
    quote = string_scalar('"')
    items = pc.binary_join_element_wise(quote, prefixes.take(pa.array(np.where(prefix < 0, len(prefixes) - 1, prefix))),
                                        st.names.take(pa.array(b[row] * F + f)), quote, string_scalar(""))
    offsets = np.concatenate([[0], np.cumsum(m.sum(1))]).astype(np.int32)
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), items), string_scalar(", "))


def id_lists(rows: Rows, st: SceneTables, sem: Semantics) -> tuple[dict[str, np.ndarray], pa.Array]:
    """({list name: int64[M] atom of each row's list}, the block's distinct list bodies); atoms index
    ``json_static`` then the bodies. Lists: object, object2, relation, window, video, ``inner:<slot>``
    and ``instance:<slot>``; an unused one is atom 0 (""). Each distinct (source, video, o, o2, r, run)
    is built once, deduplicated on one packed int64 key."""
    t = tables()
    M, b, o1, o2, r, cat = rows.M, rows.b, rows.o1, rows.o2, rows.r, rows.category
    zero = np.zeros(M, np.int64)
    radix = np.array([len(_READS) + 1, st.rel.shape[0], vocab().num_objects, vocab().num_objects + 1,
                      vocab().num_relations, st.F + 1, st.F + 1], np.int64)
    if np.prod(radix.astype(float)) >= 2.0 ** 62:
        raise TensorQAError(f"sg_grounding: block too large ({st.rel.shape[0]} videos of {st.F} keyframes); "
                            "lower block_videos")
    fields, owners = [], []  # per request kind: used rows' fields int64[n, 7], (name, rows)

    def request(name, use, src, o=zero, o_2=zero - 1, rr=zero, lo=rows.elo, hi=rows.ehi) -> None:
        i = np.flatnonzero(use)
        src = np.broadcast_to(src, (M,))[i]
        reads = np.array([_READS.get(s, (False, False, False)) for s in range(len(_READS) + 1)])[src]
        f = np.stack([src, b[i], o[i] * reads[:, 0], (o_2[i] + 1) * reads[:, 1], rr[i] * reads[:, 2],
                      np.broadcast_to(lo, (M,))[i], np.broadcast_to(hi, (M,))[i]], 1)
        fields.append(f)
        owners.append((name, i))

    with_objects = np.isin(cat, (OBJ_REL, STRETCH, CHOOSE)) & (o1 >= 0)
    pair = np.isin(cat, (OBJ_REL, CHOOSE))
    request("object", with_objects | np.isin(cat, (EXISTS_OBJ, SIDE_OBJ)),
            np.select([cat == EXISTS_OBJ, cat == SIDE_OBJ], [SRC_INTERACT_EXISTS, SRC_INTERACT_TIME], SRC_OBJ_REL),
            o1, rr=r)
    request("object2", with_objects & (o2 >= 0), SRC_OBJ_REL, o2, rr=r)
    request("relation", np.isin(cat, (REL_ANY, STRETCH, SIDE_REL)) | pair, np.where(pair, SRC_PAIR_REL, SRC_REL_ANY),
            o1.clip(min=0), o2, r)
    request("window", rows.has_window & (rows.kind > 0), SRC_FRAMES, lo=rows.lo, hi=rows.hi)
    request("video", (rows.has_window & (rows.kind == 0)) | t["opening"][rows.template, rows.frame], SRC_FRAMES,
            lo=zero, hi=st.nf[b])
    # object references inside indirect-object actions: the keyframes that define the reference
    for slot in ACTION_SLOTS:
        kind, ref_rel = rows.aref[slot], rows.aref_rel[slot]
        lo, hi = zero.copy(), st.nf[b].copy()
        for k, fwd in ((1, True), (2, False)):
            i = np.flatnonzero(kind == k)
            if i.size:
                lo[i], hi[i] = stretches(st.occurs[b[i], :, ref_rel[i]], lo[i], hi[i], fwd, sem,
                                         rows.checker(i, "stretch of an object reference"))
        referent = t["action_object"][rows.act[slot].clip(min=0)]
        request("inner:" + slot, kind > 0, SRC_OBJ_REL, referent, rr=ref_rel.clip(min=0), lo=lo, hi=hi)
    every = np.concatenate(fields)
    key = np.zeros(len(every), np.int64)
    for k in range(every.shape[1]):
        key = key * radix[k] + every[:, k]
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    bodies = _lists(st, every[first])
    atoms = len(t["json_static"]) + inverse.reshape(-1)
    out, k = {}, 0
    for name, i in owners:
        out[name] = np.zeros(M, np.int64)
        out[name][i] = atoms[k:k + len(i)]
        k += len(i)
    A = t["A"]
    for slot in ACTION_SLOTS:
        a = np.where(rows.act[slot] < 0, A, rows.act[slot])
        out["instance:" + slot] = JSON_INSTANCE + np.where(st.present[b, a], a, A)
    return out, bodies


class _Group:
    """Rows with the same (template, frame, window shape, indirect-action shape), laid out
    together: ``pos`` int64[n] advances through the questions, ``atoms`` collects their lexicon
    ids piece by piece (the re-rendered question) and ``keys`` the (start, end, list atom) of
    each key in output order."""

    def __init__(self, rows: Rows, idx: np.ndarray, lists: dict[str, np.ndarray]):
        self.rows, self.idx, self.lists = rows, idx, lists
        self.frame = int(rows.frame[idx[0]])
        self.pos = np.zeros(len(idx), np.int64)
        self.atoms: list[np.ndarray] = []
        self.keys: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def key(self, start: np.ndarray, end: np.ndarray, name: str) -> None:
        self.keys.append((start, end, self.lists[name][self.idx]))

    def literal(self, text: str) -> None:
        self.atoms.append(np.full(len(self.idx), tables()["literal"][text], np.int64))
        self.pos = self.pos + len(text)

    def phrase(self, ids: np.ndarray, name: str | None) -> None:
        """A slot phrase (lexicon ids) at ``pos``, keyed with list ``name`` unless None."""
        end = self.pos + tables()["length"][ids]
        if name is not None:
            self.key(self.pos, end, name)
        self.atoms.append(ids)
        self.pos = end

    def object(self, slot: str) -> None:
        """An object slot: the object's phrase or its reference's (records.render's wording variant)."""
        t, rows, idx = tables(), self.rows, self.idx
        o, ref, ref_rel = ((rows.o1, rows.oref1, rows.oref_rel1) if slot == "object"
                           else (rows.o2, rows.oref2, rows.oref_rel2))
        o, ref, ref_rel = o[idx], ref[idx], ref_rel[idx]
        variant = (self.frame + VARIANT_SHIFT[slot]) % t["V"]
        k = ((ref - 1).clip(min=0) * t["V"] + variant) * t["R"] + ref_rel.clip(min=0)
        direct = np.where(o < 0, 0, t["base"]["object_phrase"] + o)
        self.phrase(np.where(ref > 0, t["base"]["ref_phrase"] + k, direct), slot)

    def action(self, slot: str, inner: int, name: str) -> None:
        """An action slot: direct, or an indirect-object action naming its object ``inner`` times."""
        t, rows, idx = tables(), self.rows, self.idx
        a = rows.act[slot][idx]
        if not inner:
            self.phrase(np.where(a < 0, 0, t["base"]["action_phrase"] + a), name)
            return
        variant = (self.frame + VARIANT_SHIFT[slot]) % t["V"]
        k = ((rows.aref[slot][idx] - 1) * t["V"] + variant) * t["R"] + rows.aref_rel[slot][idx]
        length = t["length"][t["base"]["ref_phrase"] + k]
        for j in range(inner):
            start = self.pos + t["action_ref_before"][a, j] + j * length
            self.key(start, start + length, "inner:" + slot)
        self.phrase(t["base"]["action_ref"] + a * t["n_ref"] + k, name)


def _layout(rows: Rows, lists: dict[str, np.ndarray]) -> list[_Group]:
    """Every row's keys and question atoms, group by group."""
    t = tables()
    inner = {s: np.where(rows.aref[s] > 0, t["action_ref_inner"][rows.act[s].clip(min=0)], 0) for s in ACTION_SLOTS}
    shape = np.where(rows.has_window, np.minimum(rows.kind, 1) + (rows.kind == 4), 0)  # no / one / two actions
    key = (rows.template * MAX_FRAME_VARIANTS + rows.frame) * 3 + shape
    for s in ACTION_SLOTS:
        key = key * 3 + inner[s]
    order = np.argsort(key, kind="stable")
    groups = []
    for idx in np.split(order, np.flatnonzero(np.diff(key[order])) + 1):
        g = _Group(rows, idx, lists)
        i0 = idx[0]
        template = t["templates"][rows.template[i0]]
        if t["opening"][rows.template[i0], g.frame]:
            g.key(np.zeros(len(idx), np.int64), np.full(len(idx), VIDEO_OPENING_SPAN), "video")
        for is_slot, part in frame_parts(template, g.frame):
            if not is_slot:
                g.literal(part)
            elif part in ("object", "object2"):
                g.object(part)
            elif part == "relation":
                g.phrase(np.where(rows.r[idx] < 0, 0, t["base"]["relation_word"] + rows.r[idx]), "relation")
            elif part in ("action", "action2"):
                g.action(part, int(inner[part][i0]), "instance:" + part)
            elif part == "window" and shape[i0] == 0:
                z = np.maximum(g.pos + ZERO_WIDTH_SHIFT, 0)
                g.key(z, z, "video")
            elif part == "window":
                start = g.pos
                g.phrase(t["window_pre"][rows.kind[idx]], None)  # " before ", " between ", ...
                g.action("window_action", int(inner["window_action"][i0]), "instance:window_action")
                if shape[i0] == 2:
                    g.literal(t["between_mid"])
                    g.action("window_action2", int(inner["window_action2"][i0]), "instance:window_action2")
                g.key(start + 1, g.pos, "window")  # the phrase without its leading space
            else:
                raise TensorQAError(f"sg_grounding: frame of {template} has an unknown placeholder {{{part}}}")
        groups.append(g)
    return groups


def _ragged(M: int, blocks: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Row-major ragged ids from (rows int64[n], ids int64[n, k]) blocks: (ids, lengths int64[M])."""
    lengths = np.zeros(M, np.int64)
    for idx, ids in blocks:
        lengths[idx] = ids.shape[1]
    start = np.concatenate([[0], np.cumsum(lengths)])
    out = np.zeros(start[-1], np.int64)
    for idx, ids in blocks:
        out[start[idx][:, None] + np.arange(ids.shape[1])] = ids
    return out, lengths


def assemble(rows: Rows, lists: dict[str, np.ndarray], bodies: pa.Array,
              questions: pa.Array) -> tuple[pa.Array | pa.ChunkedArray, np.ndarray]:
    """(JSON texts [M], bool[M]: the question re-rendered from the record's slots with
    records.render's wording variants equals its text)."""
    t = tables()
    M = rows.M
    groups = _layout(rows, lists)
    # the questions, re-rendered: one gather over the lexicon
    ids, lengths = _ragged(M, [(g.idx, np.stack(g.atoms, 1)) for g in groups if g.atoms])
    rebuilt = gather_text(t["lexicon"], ids, lengths)
    same = pc.fill_null(pc.equal(rebuilt, questions), False).to_numpy(zero_copy_only=False)
    # the JSON texts: '{"s-e": [' body '], "s-e": [' body ... ']}' (or '{}'), one gather over the
    # static atoms, the block's list bodies and its distinct key openers
    starts = np.concatenate([s for g in groups for s, _, _ in g.keys] or [np.zeros(0, np.int64)])
    ends = np.concatenate([e for g in groups for _, e, _ in g.keys] or [np.zeros(0, np.int64)])
    firsts = np.concatenate([np.full(len(g.idx), k == 0) for g in groups for k in range(len(g.keys))]
                            or [np.zeros(0, bool)])
    width = int(ends.max(initial=0)) + 1
    openers, opener = np.unique((starts * width + ends) * 2 + firsts, return_inverse=True)
    opener_text = [('{"' if c % 2 else '], "') + f"{c // 2 // width}-{c // 2 % width}" + '": [' for c in openers.tolist()]
    opener_base = len(t["json_static"]) + len(bodies)
    blocks, k0 = [], 0
    for g in groups:
        n, k = len(g.idx), len(g.keys)
        if not k:
            blocks.append((g.idx, np.full((n, 1), JSON_EMPTY, np.int64)))
            continue
        atoms = np.empty((n, 2 * k + 1), np.int64)
        for j, (_, _, body) in enumerate(g.keys):
            atoms[:, 2 * j] = opener_base + opener[k0 + j * n:k0 + (j + 1) * n]
            atoms[:, 2 * j + 1] = body
        atoms[:, -1] = JSON_END
        k0 += k * n
        blocks.append((g.idx, atoms))
    pool = pa.concat_arrays([t["json_static"], bodies, pa.array(opener_text, pa.string())])
    ids, lengths = _ragged(M, blocks)
    return gather_text(pool, ids, lengths), same
