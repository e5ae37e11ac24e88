"""CLEVR templates compiled once into flat arrays, for the compiled generator (``compiled``) and the
compiled record writer (``compiled_records``): what the grid (``grid.run_template``), the rules
(``torch_backend.valid_rows``) and the text (``columns``, ``records.expand_program``) read from a
:class:`Template`'s dicts, as op codes, input indices and parameter indices.

A parameter's index is its position in :func:`templates.param_order` (side inputs in node order: the
text's synonym slots and the records' word order). Strings (template text fragments, words,
synonyms, node type names) live in one table of bytes with offsets.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

import numpy as np
import orjson

from tensorqa.clevr.keys import key_table
from tensorqa.clevr.templates import (
    FILTER_KINDS,
    KEY_TYPES,
    RELATE_FILTER_KINDS,
    SINGLE_FILTERS,
    Template,
    answer_domain,
    param_order,
)
from tensorqa.clevr.text import PAIR_PARAMS
from tensorqa.clevr.constants import MAX_COUNT
from tensorqa.scenes.static_batch import ATTRS, RELATIONS, clevr_vocab

# op codes of template nodes
SCENE, FILTER, RELATE, FILTER_ATTR, SAME, UNION, INTERSECT, COUNT, EXIST, UNIQUE, QUERY, EQUAL, LESS, GREATER = range(14)
# a filter node's suffix / class-table base
PLAIN, ONE, COUNTED, EXISTS = range(4)
# value kinds of node outputs
SET, OBJECT, INT, BOOL, ATTR = range(5)
# constraint kinds
NEQ, OUT_NEQ = range(2)
# text ops
LIT, PARAM, OPEN, CLOSE = range(4)
GAP = 8  # added to an op's kind: a literal of whitespace only came before it (its one effect: a space)
RELATION_TYPE = 4  # a parameter's type: 0..3 the attribute (ATTRS order), 4 a relation
_TOKENS = re.compile(r"(\[[^\[\]]*\]|<[A-Z]+\d*>)")
_SUFFIX = {"filter": PLAIN, "filter_unique": ONE, "filter_count": COUNTED, "filter_exist": EXISTS}
_KIND_OF_ANSWER = {"bool": BOOL, "int": INT}


class NotCompilable(Exception):
    """A template set the compiled generator does not take (the torch grid does): the reason."""


class StringTable:
    """Strings as one uint8 buffer with offsets: ``add`` returns a string's id."""

    def __init__(self):
        self._ids: dict[str, int] = {}

    def add(self, s: str) -> int:
        if s not in self._ids:
            self._ids[s] = len(self._ids)
        return self._ids[s]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        data = [s.encode() for s in self._ids]
        off = np.zeros(len(data) + 1, np.int64)
        off[1:] = np.cumsum([len(b) for b in data])
        # 16 bytes of padding: the record writer copies short strings 16 bytes at a time
        return np.frombuffer(b"".join(data) + bytes(16), np.uint8).copy(), off


def json_safe(s: str) -> bool:
    """Whether ``s`` goes into JSON unescaped (no quote, backslash or control character)."""
    return json.dumps(s, ensure_ascii=False)[1:-1] == s


class Plan(NamedTuple):
    """Every template as rows of padded arrays ([T, L] nodes, [T, P] params, [T, C] constraints); the
    numba kernels take it whole and read its fields by name."""

    T: int
    op: np.ndarray  # int64[T, L]
    in0: np.ndarray  # int64[T, L] (-1: none)
    in1: np.ndarray
    suffix: np.ndarray  # int64[T, L] PLAIN / ONE / COUNTED / EXISTS for filter nodes
    related: np.ndarray  # int64[T, L] 1 for relate_filter* nodes
    attr: np.ndarray  # int64[T, L] the attribute of filter_<a>, same_<a>, query_<a>
    kind: np.ndarray  # int64[T, L] the output's value kind
    kp: np.ndarray  # int64[T, L, 4] key params of a filter node in side-input order: param index (-1: none)
    kp_attr: np.ndarray  # int64[T, L, 4] their attributes
    rp: np.ndarray  # int64[T, L] the relation param (relate, relate_filter*), or -1
    sp: np.ndarray  # int64[T, L] the param of filter_<a> (-1: none)
    ctid: np.ndarray  # int64[T, L] a filter node's class table (kind of node, NULL params)
    nnodes: np.ndarray  # int64[T]
    nparams: np.ndarray  # int64[T]
    ptype: np.ndarray  # int64[T, P] 0..3 attribute, 4 relation
    cons: np.ndarray  # int64[T, C, 3] (NEQ / OUT_NEQ, a, b): param indices for NEQ, node indices for OUT_NEQ
    ncons: np.ndarray  # int64[T]
    nbins: np.ndarray  # int64[T] the answer histogram's bins
    ct_base: np.ndarray  # int64[CT] PLAIN / ONE / COUNTED / EXISTS
    ct_related: np.ndarray  # int64[CT]
    ct_allowed: np.ndarray  # bool[CT, K] the keys NULL constraints allow
    ct_nallowed: np.ndarray  # int64[CT]
    ct_null: np.ndarray  # int64[CT] the attributes (bit a) that its NULL constraints keep unspecified
    keys: np.ndarray  # int64[K, 4]
    nvals: np.ndarray  # int64[4] the values of each attribute


def _node_kind(t: Template, typ: str) -> int:
    if typ in ("scene", "relate", "union", "intersect") or typ in SINGLE_FILTERS or typ.startswith("same_"):
        return SET
    if typ in FILTER_KINDS or typ in RELATE_FILTER_KINDS:
        return {PLAIN: SET, ONE: OBJECT, COUNTED: INT, EXISTS: BOOL}[_SUFFIX[typ.removeprefix("relate_")]]
    if typ == "unique":
        return OBJECT
    if typ == "count":
        return INT
    if typ.startswith("query_"):
        return ATTR
    return BOOL  # exist, equal_*, less_than, greater_than


def _compile_node(x: dict, ti: int, k: int, t: Template, pidx: dict, nulls, tables: dict) -> None:
    """Node k of template ti into the arrays ``x`` (``Plan``'s fields by name): its op code, inputs, kind
    and parameter indices; a filter node's class table (kind of node, relation, NULL attributes) is
    numbered in ``tables``."""
    node = t.nodes[k]
    typ, ins, side = node["type"], node.get("inputs", []), node.get("side_inputs", [])
    x["in0"][ti, k] = ins[0] if ins else -1
    x["in1"][ti, k] = ins[1] if len(ins) > 1 else -1
    x["kind"][ti, k] = _node_kind(t, typ)
    op = x["op"]
    if typ in FILTER_KINDS or typ in RELATE_FILTER_KINDS:
        base = typ.removeprefix("relate_")
        op[ti, k], x["suffix"][ti, k], x["related"][ti, k] = FILTER, _SUFFIX[base], int(typ != base)
        key_side = [p for p in side if t.param_type[p] in KEY_TYPES]
        attrs_seen = [KEY_TYPES.index(t.param_type[p]) for p in key_side]
        if len(set(attrs_seen)) != len(attrs_seen):
            raise NotCompilable(f"{t.key}: node {k} has two params of one attribute")
        for j, p in enumerate(key_side):
            x["kp"][ti, k, j], x["kp_attr"][ti, k, j] = pidx[p], attrs_seen[j]
        if x["related"][ti, k]:
            x["rp"][ti, k] = pidx[next(p for p in side if t.param_type[p] == "Relation")]
        null_attrs = tuple(sorted(a for p, a in zip(key_side, attrs_seen) if p in nulls))
        x["ctid"][ti, k] = tables.setdefault((_SUFFIX[base], x["related"][ti, k], null_attrs), len(tables))
    elif typ == "scene":
        op[ti, k] = SCENE
    elif typ == "relate":
        op[ti, k], x["rp"][ti, k] = RELATE, pidx[side[0]]
    elif typ in SINGLE_FILTERS:
        op[ti, k], x["attr"][ti, k], x["sp"][ti, k] = FILTER_ATTR, ATTRS.index(typ.removeprefix("filter_")), pidx[side[0]]
    elif typ.startswith("same_"):
        op[ti, k], x["attr"][ti, k] = SAME, ATTRS.index(typ.removeprefix("same_"))
    elif typ.startswith("query_"):
        op[ti, k], x["attr"][ti, k] = QUERY, ATTRS.index(typ.removeprefix("query_"))
    elif typ.startswith("equal_"):
        op[ti, k] = EQUAL
    else:
        op[ti, k] = {"union": UNION, "intersect": INTERSECT, "count": COUNT, "exist": EXIST,
                     "unique": UNIQUE, "less_than": LESS, "greater_than": GREATER}[typ]


def _constraints(t: Template, pidx: dict) -> list[tuple[int, int, int]]:
    """A template's NEQ (param indices) and OUT_NEQ (node indices) constraints as (kind, a, b)."""
    rows = []
    for c in t.constraints:
        if c["type"] == "NEQ":
            if any(p not in pidx for p in c["params"]):
                raise NotCompilable(f"{t.key}: NEQ on a param no node takes")
            rows.append((NEQ, pidx[c["params"][0]], pidx[c["params"][1]]))
        elif c["type"] == "OUT_NEQ":
            rows.append((OUT_NEQ, *c["params"]))
    return rows


def compile_plan(templates: list[Template]) -> Plan:
    """The templates' nodes, params and constraints as arrays; :class:`NotCompilable` where a
    template needs what the arrays do not hold (then the torch grid runs)."""
    T = len(templates)
    L = max(len(t.nodes) for t in templates)
    orders = [param_order(t) for t in templates]
    P = max(1, max(len(o) for o in orders))
    C = max(1, max(sum(c["type"] != "NULL" for c in t.constraints) for t in templates))
    x = {f: np.full((T, L), -1, np.int64) for f in ("op", "in0", "in1", "suffix", "related", "attr", "kind", "rp",
                                                    "sp", "ctid")}
    x["kp"], x["kp_attr"] = np.full((T, L, 4), -1, np.int64), np.full((T, L, 4), -1, np.int64)
    ptype, cons = np.full((T, P), -1, np.int64), np.full((T, C, 3), -1, np.int64)
    nnodes, nparams, ncons, nbins = (np.zeros(T, np.int64) for _ in range(4))
    keys = np.array(key_table())
    tables: dict = {}
    for ti, t in enumerate(templates):
        pidx = {p: i for i, p in enumerate(orders[ti])}
        for p, i in pidx.items():
            ty = t.param_type[p]
            ptype[ti, i] = RELATION_TYPE if ty == "Relation" else KEY_TYPES.index(ty)
        nparams[ti], nnodes[ti] = len(pidx), len(t.nodes)
        nulls = t.null_params()
        for k in range(len(t.nodes)):
            _compile_node(x, ti, k, t, pidx, nulls, tables)
        rows = _constraints(t, pidx)
        for j, row in enumerate(rows):
            cons[ti, j] = row
        ncons[ti] = len(rows)
        nbins[ti] = len(answer_domain(t)[1])
    CT = max(1, len(tables))
    ct_base, ct_related = np.zeros(CT, np.int64), np.zeros(CT, np.int64)
    ct_allowed, ct_null = np.ones((CT, len(keys)), bool), np.zeros(CT, np.int64)
    for (base, rel, null_attrs), i in tables.items():
        ct_base[i], ct_related[i] = base, rel
        for a in null_attrs:
            ct_allowed[i] &= keys[:, a] < 0
            ct_null[i] |= 1 << a
    return Plan(T, x["op"], x["in0"], x["in1"], x["suffix"], x["related"], x["attr"], x["kind"], x["kp"], x["kp_attr"],
                x["rp"], x["sp"], x["ctid"], nnodes, nparams, ptype, cons, ncons, nbins, ct_base, ct_related,
                ct_allowed, ct_allowed.sum(1).astype(np.int64), ct_null, keys,
                np.array([len(clevr_vocab().values(a)) for a in ATTRS], np.int64))


class TextPlan(NamedTuple):
    """What the record writer needs beyond :class:`Plan`: the template texts as ops, the words of
    parameter codes and their synonyms, program node names, answers, as string ids (taken whole)."""

    strings: np.ndarray  # uint8[bytes]
    str_off: np.ndarray  # int64[S + 1]
    var_start: np.ndarray  # int64[T + 1] each template's variants in var_ops_start
    var_ops_start: np.ndarray  # int64[V + 1] each variant's ops in ops
    ops: np.ndarray  # int64[X, 2] (LIT, string) / (PARAM, param index) / (OPEN, 0) / (CLOSE, 0), kind + GAP
    # after a literal of whitespace only (not an op of its own) and empty literals left out
    word: np.ndarray  # int64[5, 9] string of (param type, code + 1): '' / 'thing' for -1
    syn_start: np.ndarray  # int64[5, 9] a word's synonyms in syn_ids (count 0: the word itself)
    syn_count: np.ndarray
    syn_ids: np.ndarray
    other: np.ndarray  # int64[T] 1 where other_heuristic may apply (the eight pair params, a text with other)
    pair_params: np.ndarray  # int64[T, 8] param index of <Z> <C> <M> <S> <Z2> <C2> <M2> <S2>
    node_type: np.ndarray  # int64[T, L] string of the node's type (template node; relate for relate_filter*)
    filter_type: np.ndarray  # int64[4] strings filter_size ... filter_shape
    suffix_type: np.ndarray  # int64[4] '', unique, count, exist
    relate_type: int
    attr_word: np.ndarray  # int64[4, 8] strings of attribute values (query outputs, answers)
    answer_kind: np.ndarray  # int64[T] BOOL / INT / ATTR
    answer_attr: np.ndarray  # int64[T]
    filename: np.ndarray  # int64[T] JSON string (quoted) of the template file name
    family: np.ndarray  # int64[T]
    core: np.ndarray  # int64[S] a string with its whitespace collapsed (runs to one space, ends cut)
    spacing: np.ndarray  # int64[S] bits: 1 leading whitespace, 2 trailing, 4 something else


def compile_text(templates: list[Template], plan: Plan, synonyms: dict) -> TextPlan:
    """The text side of the templates; :class:`NotCompilable` where a string would need JSON escaping."""
    st = StringTable()
    v = clevr_vocab()
    T, L = plan.op.shape
    var_start, var_ops_start, ops = [0], [0], []
    for t in templates:
        pidx = {p: i for i, p in enumerate(param_order(t))}
        for pattern in t.text:
            pieces: list = []
            for tok in _TOKENS.split(pattern):
                if tok.startswith("[") and tok.endswith("]"):
                    pieces += [(OPEN, 0)] + [(PARAM, pidx[x]) if x in pidx else x for x in _TOKENS.split(tok[1:-1])]
                    pieces.append((CLOSE, 0))
                elif tok:
                    pieces.append((PARAM, pidx[tok]) if tok in pidx else tok)
            gap = 0
            for x in pieces:
                if isinstance(x, str):
                    if not _WS.sub("", x):  # empty: nothing; whitespace only: a gap before the next piece
                        gap = gap or (GAP if x else 0)
                        continue
                    x = (LIT, st.add(x))
                ops.append((x[0] + gap, x[1]))
                gap = 0
            var_ops_start.append(len(ops))
        var_start.append(len(var_ops_start) - 1)
    word, syn_start, syn_count = (np.zeros((5, 9), np.int64) for _ in range(3))
    syn_ids: list[int] = []
    for ty in range(5):
        vals = RELATIONS if ty == RELATION_TYPE else v.values(ATTRS[ty])
        for code in range(-1, len(vals)):
            w = vals[code] if code >= 0 else ("thing" if ty == 3 else "")
            if ty == RELATION_TYPE and code < 0:
                w = ""
            word[ty, code + 1] = st.add(w)
            syn_start[ty, code + 1] = len(syn_ids)
            if w in synonyms:
                syn_ids += [st.add(s) for s in synonyms[w]]
                syn_count[ty, code + 1] = len(synonyms[w])
    other, pair = np.zeros(T, np.int64), np.full((T, 8), -1, np.int64)
    names = ("<Z>", "<C>", "<M>", "<S>", "<Z2>", "<C2>", "<M2>", "<S2>")
    for ti, t in enumerate(templates):
        order = param_order(t)
        if set(order) == PAIR_PARAMS and any(" other " in p or " another " in p for p in t.text):
            other[ti] = 1
            pair[ti] = [order.index(n) for n in names]
    node_type = np.full((T, L), -1, np.int64)
    for ti, t in enumerate(templates):
        for k, node in enumerate(t.nodes):
            node_type[ti, k] = st.add(node["type"])
    attr_word = np.full((4, 8), -1, np.int64)
    for a, name in enumerate(ATTRS):
        for c, w in enumerate(v.values(name)):
            attr_word[a, c] = st.add(w)
    kinds = [answer_domain(t)[0] for t in templates]
    answer_kind = np.array([_KIND_OF_ANSWER.get(k, ATTR) for k in kinds], np.int64)
    answer_attr = np.array([ATTRS.index(k.removeprefix("attr:")) if k.startswith("attr:") else -1 for k in kinds], np.int64)
    for name in list(st._ids):
        if not json_safe(name):
            raise NotCompilable(f"{name!r} needs escaping in JSON")
    filename = np.array([st.add(json.dumps(t.filename, ensure_ascii=False)) for t in templates], np.int64)
    filter_type = np.array([st.add(f"filter_{a}") for a in ATTRS], np.int64)
    suffix_type = np.array([st.add(s) for s in ("", "unique", "count", "exist")], np.int64)
    relate_type = st.add("relate")
    core, spacing = _collapsed(st)
    strings, off = st.arrays()
    return TextPlan(strings, off, np.array(var_start, np.int64), np.array(var_ops_start, np.int64),
                    np.array(ops, np.int64).reshape(-1, 2), word, syn_start, syn_count,
                    np.array(syn_ids + [0], np.int64), other, pair, node_type, filter_type, suffix_type, relate_type,
                    attr_word, answer_kind, answer_attr, filename, np.array([t.index for t in templates], np.int64),
                    core, spacing)


_WS_CHARS = "\t\n\x0b\x0c\r "  # the whitespace of str.split() in ASCII
_WS = re.compile(f"[{_WS_CHARS}]+")


def _collapsed(st: StringTable) -> tuple[np.ndarray, np.ndarray]:
    """Each string's whitespace-collapsed form (a string id, added to the table) and its spacing
    bits, so that the writer collapses a question's whitespace as it joins the pieces
    (CLEVR's clean-up: runs of whitespace to one space, ends cut). :class:`NotCompilable` where a string holds whitespace that
    ``str.split`` cuts and the writer's ASCII test would not."""
    names = list(st._ids)
    for s in names:
        if any(c.isspace() for c in _WS.sub("", s)):
            raise NotCompilable(f"{s!r} holds non-ASCII whitespace")
    core = [st.add(" ".join(w for w in _WS.split(s) if w)) for s in names]
    every = list(st._ids)
    core += range(len(names), len(every))  # a collapsed form is its own
    spacing = [(1 if s[:1] and s[0] in _WS_CHARS else 0) | (2 if s[-1:] and s[-1] in _WS_CHARS else 0)
               | (4 if _WS.sub("", s) else 0) for s in every]
    return np.array(core, np.int64), np.array(spacing, np.int64)


class Rules(NamedTuple):
    """A run's options as the generator kernel reads them (``options.Options`` and the semantics)."""

    root: np.uint64  # the draws' stream root (engine.rng clevr.draw)
    ipt: int  # --instances-per-template
    tpi: int  # --templates-per-image
    reset_every: int  # --reset-counts-every
    draws: int
    valid_draws: int
    rounds: np.ndarray  # int64[R] draws per round (constants.ROUNDS)
    out_neq_counts: bool  # the semantics' out_neq_compares_counts
    neq_inverted: bool
    faithful: bool  # empty_keys_may_match (CLEVR's defect 1)


class SceneBits(NamedTuple):
    """A block's scenes as object bits (``compiled_bits.scene_bits``): object i = bit i."""

    attrs: np.ndarray  # int64[B, N, 4]
    maskbits: np.ndarray  # int64[B] the real objects
    relbits: np.ndarray  # int64[B, N, 4] the objects j that are relation r of i
    attrbits: np.ndarray  # int64[B, 4, 8] the objects with value v of attribute a
    keybits: np.ndarray  # int64[B, K] the objects each filter key matches
    nobj: np.ndarray  # int64[B]

    def rows(self, a: int, z: int) -> "SceneBits":
        """Scenes [a, z) (leading-axis slices: C-contiguous views)."""
        return SceneBits(*(x[a:z] for x in self))


_CACHE: dict = {}


def plans(templates: list[Template], synonyms: dict) -> tuple[Plan, TextPlan]:
    """Both plans, compiled once per template set and synonyms (einops-style cache, keyed by content)."""
    key = b"".join(t.content_key for t in templates) + orjson.dumps(synonyms, option=orjson.OPT_SORT_KEYS)
    if key not in _CACHE:
        plan = compile_plan(templates)
        _CACHE.clear()  # one template set at a time is the common case
        _CACHE[key] = (plan, compile_text(templates, plan, synonyms))
    return _CACHE[key]


