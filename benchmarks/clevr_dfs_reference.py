"""A per-question depth-first generator written from CLEVR's algorithm (reference §5), on the same
scenes and templates, to compare its output distribution with tensorqa's grid sampling.

    OMP_NUM_THREADS=1 python benchmarks/clevr_dfs_reference.py --scenes 200

Not CLEVR's code: a scalar re-statement of its search (LIFO stack of partial assignments, options
per node type as generate_questions.py makes them, shuffled children, constraint and invalid
pruning, answer-count rejection, the degeneracy test, use-count ordering and resets). Scenes and
nodes are evaluated on bit sets (object i = bit i), one template node per state taken off the stack;
the degeneracy test runs tensorqa's scalar twins. About 0.1-0.2 s of CPU a scene (compare_integer#0,
which defect 4 makes fail on every scene after its first question, is skipped once its only answer
is refused: its exhaustive search would only consume random numbers). Prints the questions/s of
this DFS and, side by side, the family and answer histograms of both generators;
``clevr_distribution.py`` runs the chi-square tests.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the per-question path: tests/clevr/oracle.py
from clevr.oracle import is_degenerate, param_words  # noqa: E402

from tensorqa.clevr import columns
from tensorqa.clevr.options import Options, rejected
from tensorqa.clevr.torch_backend import generate_columns
from tensorqa.clevr.records import answer_value, expand_program
from tensorqa.clevr.templates import (DEFAULT_SYNONYMS, DEFAULT_TEMPLATES_DIR, FILTER_KINDS, KEY_TYPES, RELATE_FILTER_KINDS,
                                      SINGLE_FILTERS, load_synonyms, load_templates)
from tensorqa.clevr.templates import answer_domain
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_batch import ATTRS, RELATIONS, clevr_vocab
from tensorqa.scenes.static_store import StaticStore, write_static_store

V = clevr_vocab()
ALL_KEYS = list(itertools.product(*[[None] + list(range(len(V.values(a)))) for a in ATTRS]))


def _scene_keys(sc):
    keys = set()
    for o in sc:
        for mask in itertools.product((0, 1), repeat=4):
            keys.add(tuple(o[a] if m else None for a, m in enumerate(mask)))
    return keys


class SceneBits:
    """One scene as bit sets (object i = bit i): what the search reads, built once per scene."""

    def __init__(self, sc_json, sc):
        n = len(sc)
        self.attrs = sc
        self.all = (1 << n) - 1
        # sorted: a set's order of tuples holding None changes between processes before Python 3.12
        self.keys = sorted(_scene_keys(sc), key=lambda k: tuple(-1 if x is None else x for x in k))
        self.key_bits = {key: sum(1 << i for i, o in enumerate(sc) if all(k is None or o[a] == k for a, k in enumerate(key)))
                         for key in ALL_KEYS}
        self.rel = [[sum(1 << j for j in sc_json["relationships"][RELATIONS[r]][o]) for r in range(4)] for o in range(n)]
        self.attr_bits = [[sum(1 << i for i, o in enumerate(sc) if o[a] == v) for v in range(len(V.values(ATTRS[a])))]
                          for a in range(4)]
        self.options: dict = {}


class TemplateNodes:
    """A template's nodes as tuples the search evaluates: (type, inputs, key params, relation param,
    single param, attribute)."""

    def __init__(self, t):
        ty = t.param_type
        self.nodes = []
        for node in t.nodes:
            typ, side = node["type"], node.get("side_inputs", [])
            kp = [p for p in side if ty[p] in KEY_TYPES]
            # a filter node's key params come in attribute order (size, color, material, shape)
            assert typ in SINGLE_FILTERS or all(ty[p] == KEY_TYPES[i] for i, p in enumerate(kp)), (t.key, side)
            rp = next((p for p in side if ty[p] == "Relation"), None)
            attr = next((ATTRS.index(a) for a in ATTRS if typ.endswith("_" + a)), None)
            self.nodes.append((typ, node.get("inputs", []), kp, rp, side[0] if side else None, attr))
        self.has_relate = any(nd["type"] == "relate" for nd in t.nodes)
        self.out_neq = [tuple(c["params"]) for c in t.constraints if c["type"] == "OUT_NEQ"]
        # equal_integer of two counts an OUT_NEQ keeps apart answers False only (defect 4: compare_integer#0)
        last = t.nodes[-1]
        self.only_false = last["type"] == "equal_integer" and tuple(sorted(last["inputs"])) in {tuple(sorted(c)) for c in self.out_neq}


def _eval_node(tn, k, outs, params, S):
    """Template node k's output (bit set, object index, int, bool or attribute code) from the outputs of
    the nodes before it, or None where CLEVR's engine gives '__INVALID__' (unique of a non-singleton)."""
    typ, ins, kp, rp, sp, attr = tn.nodes[k]
    x = outs[ins[0]] if ins else None
    if typ == "scene":
        return S.all
    if typ in FILTER_KINDS or typ in RELATE_FILTER_KINDS:
        s = S.rel[x][params[rp]] if rp is not None else x
        key = tuple(None if params[p] < 0 else params[p] for p in kp)
        f = s & S.key_bits[key]
        if typ.endswith("unique"):
            return f.bit_length() - 1 if f and not f & (f - 1) else None
        if typ.endswith("count"):
            return f.bit_count()
        if typ.endswith("exist"):
            return f != 0
        return f
    if typ == "relate":
        return S.rel[x][params[sp]]
    if typ in SINGLE_FILTERS:
        return x & S.attr_bits[attr][params[sp]]
    if typ.startswith("same_"):
        return S.attr_bits[attr][S.attrs[x][attr]] & ~(1 << x)
    if typ == "union":
        return x | outs[ins[1]]
    if typ == "intersect":
        return x & outs[ins[1]]
    if typ == "count":
        return x.bit_count()
    if typ == "exist":
        return x != 0
    if typ == "unique":
        return x.bit_length() - 1 if x and not x & (x - 1) else None
    if typ.startswith("query_"):
        return S.attrs[x][attr]
    if typ.startswith("equal_"):
        return x == outs[ins[1]]
    if typ == "less_than":
        return x < outs[ins[1]]
    if typ == "greater_than":
        return x > outs[ins[1]]
    raise ValueError(typ)


def dfs(t, sc_json, S, tn, hist, rng):
    """One template on one scene: the first accepted complete state (params, answer), or None. States
    carry the outputs of their template nodes so far (one node evaluated per state taken off the stack)
    and the output of the last program node (CLEVR computes a filter node's options from it, defect 8)."""
    kind, dom = answer_domain(t)
    ty, nulls = t.param_type, t.null_params()
    if tn.only_false and rejected(hist, 0):
        return None  # its exhaustive search finds nothing: skipped (it would only consume random numbers)
    stack = [({}, 0, [], None)]
    n_nodes = len(t.nodes)
    refused: dict = {}
    while stack:
        params, k, outs, last = stack.pop()
        if any(params.get(p, -1) not in (-1,) for p in nulls if p in params):
            continue
        if k:
            v = _eval_node(tn, k - 1, outs, params, S)
            if v is None:
                continue
            outs = outs + [v]
            typ0, _, kp0, _, _, _ = tn.nodes[k - 1]
            if not (typ0 == "filter" and all(params[p] < 0 for p in kp0)):  # a filter with no key adds no node
                last = v
        if k == n_nodes:
            if any(outs[i] == outs[j] for i, j in tn.out_neq):
                continue
            code = int(outs[-1])
            if code not in refused:  # the histogram only changes on acceptance, which ends the search
                refused[code] = rejected(hist, code)
            if refused[code]:
                continue
            if tn.has_relate and is_degenerate(expand_program(t, param_words(t, params)), sc_json):
                continue
            hist[code] += 1
            return params, answer_value(kind, code)
        typ, ins, kp, rp, sp, _ = tn.nodes[k]
        if typ in FILTER_KINDS and len(kp) == 4 or typ in RELATE_FILTER_KINDS:
            opts = _filter_options(typ, last, S, rng)
            children = []
            for r, key in opts:
                p = dict(params)
                for name, x in zip(kp, key):
                    p[name] = -1 if x is None else x
                if r is not None:
                    p[rp] = r
                children.append(p)
        elif sp is not None:
            n_opt = 4 if ty[sp] == "Relation" else len(V.values(ty[sp].lower()))
            children = [dict(params, **{sp: v}) for v in range(n_opt)]
        else:
            children = [params]
        rng.shuffle(children)
        stack += [(c, k + 1, outs, last) for c in children]
    return None


def _filter_options(typ, cur, S, rng):
    """CLEVR's options (relation or None, key) of a filter node, given the last program node's output
    ``cur`` (a set's bits, or an object for relate_filter*), in CLEVR's order before its shuffle.

    find_filter_options: every key matching a scene object, whatever its intersection with ``cur``;
    ``filter`` drops the all-unspecified key, ``filter_unique`` keeps singletons; add_empty_filter_options
    then adds keys drawn uniformly (each attribute's values and None) to ``filter`` and ``filter_count``,
    one per singleton option, and to ``filter_exist``, one per option. find_relate_filter_options: (relation,
    key) pairs whose intersection with relationships[r][cur] has one object (``_unique``), any number
    (``_count`` / ``_exist``) or at least one; a pair is trivial when the relation removes nothing from the
    key's objects, and round(N x 0.1 / 0.9) randomly chosen trivial pairs join the N others; no extra keys."""
    memo = (typ, cur)  # what is not random depends on the node's kind and input only
    if memo not in S.options:
        if typ in RELATE_FILTER_KINDS:
            base = typ.removeprefix("relate_")
            opts, trivial = [], []
            for r in range(4):
                src = S.rel[cur][r]
                for key in S.keys:
                    kb = S.key_bits[key]
                    c = (src & kb).bit_count()
                    if (base == "filter_unique" and c != 1) or (base == "filter" and c == 0):
                        continue
                    (trivial if src & kb == kb else opts).append((r, key))
            S.options[memo] = (opts, trivial, int(round(len(opts) * 0.1 / 0.9)))
        else:
            counts = [(key, (cur & S.key_bits[key]).bit_count()) for key in S.keys]
            if typ == "filter":
                counts = [(key, c) for key, c in counts if any(x is not None for x in key)]
            elif typ == "filter_unique":
                counts = [(key, c) for key, c in counts if c == 1]
            extra = 0 if typ == "filter_unique" else len(counts) if typ == "filter_exist" else sum(c == 1 for _, c in counts)
            S.options[memo] = ([(None, key) for key, _ in counts], extra)
    if typ in RELATE_FILTER_KINDS:
        opts, trivial, n_trivial = S.options[memo]
        trivial = list(trivial)
        rng.shuffle(trivial)
        return opts + trivial[:n_trivial]
    opts, extra = S.options[memo]
    return opts + [(None, rng.choice(ALL_KEYS)) for _ in range(extra)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", type=int, default=200)
    ap.add_argument("--dfs-cache", metavar="FILE",
                    help="reuse the DFS questions saved here for the same --scenes (or save them): rerun the grid side alone")
    a = ap.parse_args()
    templates = load_templates(DEFAULT_TEMPLATES_DIR)
    scenes = sample_scenes(a.scenes, seed=5)
    rng = random.Random(0)
    t0 = time.perf_counter()
    cache = Path(a.dfs_cache) if a.dfs_cache else None
    if cache and cache.exists() and json.loads(cache.read_text())["scenes"] == a.scenes:
        saved = json.loads(cache.read_text())
        dfs_q, dfs_secs = [tuple(q) for q in saved["questions"]], saved["seconds"]
    else:
        dfs_q, dfs_secs = _run_dfs(templates, scenes, rng), None
    if dfs_secs is None:
        dfs_secs = time.perf_counter() - t0
        if cache:
            cache.write_text(json.dumps({"scenes": a.scenes, "seconds": dfs_secs, "questions": dfs_q}))
    _compare(a, templates, scenes, dfs_q, dfs_secs)


# the final function as the question's program names it (filter_count ends in count, ...)
FINAL = {"filter_count": "count", "relate_filter_count": "count", "filter_exist": "exist", "relate_filter_exist": "exist"}


def _run_dfs(templates, scenes, rng) -> list:
    dfs_q = []
    use = hist = None
    nodes = [TemplateNodes(t) for t in templates]
    for g, s in enumerate(scenes):
        if g % 250 == 0:
            use, hist = np.zeros(len(templates), np.int64), [np.zeros(len(answer_domain(t)[1]), np.int64) for t in templates]
        sj, sc = s.to_json(), [tuple(int(x) for x in row) for row in s.attrs]
        S = SceneBits(sj, sc)
        done = 0
        for tid in np.argsort(use, kind="stable"):
            got = dfs(templates[tid], sj, S, nodes[tid], hist[tid], rng)
            if got:
                use[tid] += 1
                done += 1
                final = templates[tid].nodes[-1]["type"]
                dfs_q.append((templates[tid].key, FINAL.get(final, final), got[1], g))
                if done >= 10:
                    break
    return dfs_q


def _compare(a, templates, scenes, dfs_q, dfs_secs) -> None:
    with tempfile.TemporaryDirectory() as d:
        store = write_static_store(Path(d) / "s.h5", scenes)
        t0 = time.perf_counter()
        with StaticStore(store) as st:
            grid = columns.as_dicts(generate_columns(st, templates, load_synonyms(DEFAULT_SYNONYMS),
                                                     Options(batch_scenes=1000), with_output=True))
        grid_secs = time.perf_counter() - t0
    grid_q = [(f"{q['template_filename']}#{q['question_family_index']}", q["program"][-1]["type"], q["answer"]) for q in grid]
    fam = {"dfs": Counter(q[0] for q in dfs_q), "grid": Counter(q[0] for q in grid_q)}
    ans = {k: Counter(f"{q[1]}={q[2]}" for q in v) for k, v in (("dfs", dfs_q), ("grid", grid_q))}
    print(json.dumps({"scenes": a.scenes, "dfs": {"questions": len(dfs_q), "seconds": round(dfs_secs, 1),
                                                 "questions_per_s": round(len(dfs_q) / dfs_secs, 1)},
                      "grid": {"questions": len(grid_q), "seconds": round(grid_secs, 1),
                               "questions_per_s": round(len(grid_q) / grid_secs, 1)},
                      "families": {k: [fam["dfs"][k], fam["grid"][k]] for k in sorted(set(fam["dfs"]) | set(fam["grid"]))},
                      "answers": {k: [ans["dfs"][k], ans["grid"][k]] for k in sorted(set(ans["dfs"]) | set(ans["grid"]))}}))


if __name__ == "__main__":
    main()
