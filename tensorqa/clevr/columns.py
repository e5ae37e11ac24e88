"""Accepted grid rows -> CLEVR question records as columns, a template at a time (no Python loop over
questions for the words, the text or the programs): what the torch backend writes. Its oracle is
the per-question path of ``tests/clevr/oracle.py`` (``test_columns``: the same records, field for field).
"""

from __future__ import annotations

import re

import numpy as np
import orjson

from tensorqa.clevr import records, text
from tensorqa.clevr.templates import Template, answer_domain, param_order
from tensorqa.scenes.static_batch import PARAM_TYPES, RELATIONS, StaticBatch, clevr_vocab

COLUMNS = ("split", "image_filename", "image_index", "image", "question", "answer", "program",
           "template_filename", "question_family_index")
_SLOT = re.compile(r"@@(<[^@]*>)@@")
_TOKENS = re.compile(r"(\[[^\[\]]*\]|<[A-Z]+\d*>)")


def _words(t: Template, name: str, codes: np.ndarray) -> np.ndarray:
    """object[Q]: the canonical word of each code (-1: '' or, for a shape, 'thing')."""
    ty = t.param_type[name]
    if ty == "Relation":
        return np.array(RELATIONS, dtype=object)[codes]
    attr = PARAM_TYPES[ty]
    table = np.array([("thing" if attr == "shape" else "")] + list(clevr_vocab().values(attr)), dtype=object)
    return table[codes + 1]


def _cat(parts: list, n: int) -> np.ndarray:
    """object[n]: strings and object[n] arrays concatenated element-wise."""
    out = np.full(n, "", dtype=object)
    for p in parts:
        out = out + p
    return out


def _collapse(col: np.ndarray) -> np.ndarray:
    return np.array([" ".join(s.split()) for s in col], dtype=object)


def _texts(t: Template, tid: int, words: dict, scene: np.ndarray, draw: np.ndarray, synonyms: dict, seed: int,
           sem) -> np.ndarray:
    """object[Q]: the text of every question of one template (scene positions, draws int64[Q]): a variant,
    each parameter's word or a synonym, each ``[...]`` part kept or not (``text.picks``), whitespace
    collapsed, then :func:`_other`."""
    Q = len(scene)
    out = np.empty(Q, dtype=object)
    shown = {}
    for i, (name, w) in enumerate(words.items()):  # each parameter's synonym (slot 1 + i)
        s = w.copy()
        for v in set(w.tolist()) & set(synonyms):
            rows = np.flatnonzero(w == v)
            s[rows] = np.array(synonyms[v], dtype=object)[text.picks(seed, scene[rows], tid, draw[rows], 1 + i, len(synonyms[v]))]
        shown[name] = s
    variant = text.picks(seed, scene, tid, draw, 0, len(t.text))
    for v, pattern in enumerate(t.text):
        rows = np.flatnonzero(variant == v)
        if not len(rows):
            continue
        parts, j = [], 0
        for tok in _TOKENS.split(pattern):
            if tok.startswith("[") and tok.endswith("]"):
                inner = [shown[x][rows] if x in shown else x for x in _TOKENS.split(tok[1:-1])]
                keep = text.picks(seed, scene[rows], tid, draw[rows], text.BRACKET_SLOT + j, 2) == 1
                parts.append(np.where(keep, _cat(inner, len(rows)), ""))
                j += 1
            else:
                parts.append(shown[tok][rows] if tok in shown else tok)
        out[rows] = _collapse(_cat(parts, len(rows)))
    return _other(t, words, out, sem)


def _other(t: Template, words: dict, col: np.ndarray, sem) -> np.ndarray:
    """CLEVR's other_heuristic: drop "other" where the two described objects differ in a specified
    attribute (only for exactly the params <Z><C><M><S><Z2><C2><M2><S2>)."""
    if set(words) != text.PAIR_PARAMS or not any(" other " in p or " another " in p for p in t.text):
        return col
    drop = np.zeros(len(col), bool)
    for x in ("<Z>", "<C>", "<M>", "<S>"):
        v1, v2 = words[x], words[x[:-1] + "2>"]
        if not sem.other_thing_is_value:
            v1, v2 = (np.where(v == "thing", "", v) for v in (v1, v2))
        drop |= (v1 != "") & (v2 != "") & (v1 != v2)
    col = col.copy()
    for r in np.flatnonzero(drop):
        s = col[r]
        if " other " in s or " another " in s:
            col[r] = s.replace(" other ", " ").replace(" another ", " a ")
    return col


def _programs(t: Template, tid: int, words: dict, memo: dict) -> np.ndarray:
    """object[Q]: each question's program as JSON text, ``records.program_skeleton`` filled, a skeleton at a time."""
    names = list(words)
    spec = np.stack([(words[p] != "") & (words[p] != "thing") for p in names], 1)
    code = (spec * (1 << np.arange(len(names)))).sum(1)
    out = np.empty(len(code), dtype=object)
    for c in np.unique(code):
        rows = np.flatnonzero(code == c)
        skel = records.program_skeleton(t, {p: words[p][rows[0]] for p in names}, memo, tid)
        pieces = _SLOT.split(skel)
        out[rows] = _cat([words[x][rows] if k % 2 else x for k, x in enumerate(pieces)], len(rows))
    return out


def _values(kind: str, v: np.ndarray) -> list:
    """One node's outputs for every question, as CLEVR's engine writes them (``_output``): object
    sets bool[Q, N] as sorted index lists, bools, counts, attribute words."""
    if kind == "set":
        rows, cols = np.nonzero(v)
        return [c.tolist() for c in np.split(cols, np.searchsorted(rows, np.arange(1, len(v))))]
    if kind == "bool":
        return v.astype(bool).tolist()
    if kind.startswith("attr:"):
        return np.array(clevr_vocab().values(kind.removeprefix("attr:")), dtype=object)[v].tolist()
    return v.astype(np.int64).tolist()


def _outputs(t: Template, tid: int, batch: StaticBatch, pos: np.ndarray, bs: np.ndarray, words: dict, params: dict,
             seed: int, sem) -> list[list]:
    """Per question, every program node's output in the expanded program's order (``_output``, defect
    3): the template replayed on the accepted rows (``grid.run_template`` with their parameters), a
    filter chain's intermediate sets rebuilt one attribute at a time."""
    import torch

    from tensorqa.clevr.grid import key_params, rel_param, run_template
    from tensorqa.clevr.scene_block import Block
    from tensorqa.clevr.templates import FILTER_KINDS, RELATE_FILTER_KINDS
    from tensorqa.engine.primitives import registry

    dev = batch.attrs.device
    idx = torch.from_numpy(bs).to(dev)
    blk = Block.build(batch.select(idx), torch.from_numpy(pos[bs]), 1, seed)
    par = {p: torch.from_numpy(np.ascontiguousarray(v)).to(dev) for p, v in params.items()}
    run = run_template(t, tid, blk, sem, params=par)
    nodes = []  # (kind, values, the param a filter step is said by or None) in expansion order
    for k, node in enumerate(t.nodes):
        typ, out = node["type"], run.outs[k]
        if typ in FILTER_KINDS or typ in RELATE_FILTER_KINDS:
            cur = run.outs[node["inputs"][0]][1]
            if typ in RELATE_FILTER_KINDS:
                cur = registry.lookup("clevr_relate")(cur, blk.rel, par[rel_param(t, node)])
                nodes.append(("set", cur, None))
            for p, a in key_params(t, node):
                cur = torch.where((par[p] >= 0)[:, None], cur & (blk.attrs[..., a] == par[p][:, None]), cur)
                nodes.append(("set", cur, p))
            if typ.removeprefix("relate_") == "filter":
                continue  # a plain filter adds no node of its own
        nodes.append((out[0], out[1], None))
    columns_ = [(_values(kind, vals.cpu().numpy()), None if p is None else (words[p] != "") & (words[p] != "thing"))
                for kind, vals, p in nodes]
    return [[v[i] for v, said in columns_ if said is None or said[i]] for i in range(len(bs))]


def block_columns(templates: list[Template], synonyms: dict, seed: int, sem, batch: StaticBatch, pos: np.ndarray,
                  accepted: list, rows: list, memo: dict, with_output: bool = False) -> dict:
    """The block's accepted (scene row, template, draw) as columns (``COLUMNS``; answers as CLEVR's
    raw values), in the order of ``accepted``. Programs as JSON text, or with ``with_output`` as
    lists of nodes with their ``_output``."""
    acc = np.array(accepted, dtype=np.int64).reshape(-1, 3)
    b, tids, m = acc[:, 0], acc[:, 1], acc[:, 2]
    Q = len(acc)
    cols = {c: np.empty(Q, dtype=object) for c in ("question", "answer", "program", "template_filename")}
    cols["question_family_index"] = np.zeros(Q, np.int64)
    for tid in np.unique(tids):
        sel = np.flatnonzero(tids == tid)
        t, tr = templates[tid], rows[tid]
        bs, ms = b[sel], m[sel]
        words = {p: _words(t, p, tr.params[p][bs, ms]) for p in param_order(t)}
        cols["question"][sel] = _texts(t, int(tid), words, pos[bs], ms, synonyms, seed, sem)
        progs = _programs(t, int(tid), words, memo)
        if with_output:
            params = {p: tr.params[p][bs, ms] for p in param_order(t)}
            outs = _outputs(t, int(tid), batch, pos, bs, words, params, seed, sem)
            lists = []
            for text_, o in zip(progs, outs):
                nodes = orjson.loads(text_)
                for n, v in zip(nodes, o):
                    n["_output"] = v
                lists.append(nodes)
            progs = np.empty(len(lists), dtype=object)
            progs[:] = lists
        cols["program"][sel] = progs
        kind, dom = answer_domain(t)
        values = np.array([records.answer_value(kind, k) for k in range(len(dom))], dtype=object)
        cols["answer"][sel] = values[tr.ans[bs, ms]]
        cols["template_filename"][sel] = t.filename
        cols["question_family_index"][sel] = t.index
    names = np.array(batch.image_filenames, dtype=object)
    cols["split"] = np.array(batch.splits, dtype=object)[b]
    cols["image_filename"] = names[b]
    cols["image_index"] = batch.image_indices.cpu().numpy()[b]
    cols["image"] = np.array([f.rsplit(".", 1)[0] for f in batch.image_filenames], dtype=object)[b]
    return {c: cols[c] for c in COLUMNS}


def concat(parts: list[dict]) -> dict:
    """Columns of several blocks (or shards) end to end."""
    if not parts:
        return {c: np.empty(0, dtype=np.int64 if c in ("image_index", "question_family_index") else object)
                for c in COLUMNS}
    return {c: np.concatenate([p[c] for p in parts]) for c in COLUMNS}


def as_dicts(cols: dict) -> list[dict]:
    """The columns as per-question records (dicts of :data:`COLUMNS`), e.g. for the questions JSON."""
    n = len(cols["question"])
    lists = {c: cols[c].tolist() for c in COLUMNS}
    return [{c: lists[c][i] for c in COLUMNS} for i in range(n)]
