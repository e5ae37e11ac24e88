"""A per-question depth-first generator written from CLEVR's algorithm (reference §5), on the same
scenes and templates, to compare its output distribution with tensorqa's grid sampling.

    OMP_NUM_THREADS=1 python benchmarks/clevr_dfs_reference.py --scenes 200

Not CLEVR's code: a scalar re-statement of its search (LIFO stack of partial assignments, options
per node type, shuffled children, constraint and invalid pruning, answer-count rejection, the
degeneracy test, use-count ordering and resets), over tensorqa's scalar twins. Prints the
questions/s of this DFS and, side by side, the family and answer histograms of both generators.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from tensorqa.clevr.generate import Options, generate_scenes, rejected
from tensorqa.clevr.records import expand_program, param_words
from tensorqa.clevr.scalar import INVALID, is_degenerate, run_program
from tensorqa.clevr.templates import DEFAULT_SYNONYMS, DEFAULT_TEMPLATES_DIR, KEY_TYPES, load_synonyms, load_templates
from tensorqa.clevr.validity import answer_domain
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_batch import ATTRS, RELATIONS, clevr_vocab
from tensorqa.scenes.static_store import StaticStore, write_static_store

V = clevr_vocab()
ALL_KEYS = list(itertools.product(*[[None] + list(range(len(V.values(a)))) for a in ATTRS]))


def _match(sc, key, objs):
    return [i for i in objs if all(k is None or sc[i][a] == k for a, k in enumerate(key))]


def _scene_keys(sc):
    keys = set()
    for o in sc:
        for mask in itertools.product((0, 1), repeat=4):
            keys.add(tuple(o[a] if m else None for a, m in enumerate(mask)))
    return keys


def dfs(t, sc_json, sc, rel, hist, rng):
    """One template on one scene: the first accepted complete state, or None."""
    kind, dom = answer_domain(t)
    ty, nulls = t.param_type, t.null_params()
    stack = [({}, 0)]
    while stack:
        params, k = stack.pop()
        if any(params.get(p, -1) not in (-1,) for p in nulls if p in params):
            continue
        words_ok = all(p in params for node in t.nodes[:k] for p in node.get("side_inputs", []))
        if k and words_ok:
            partial = type(t)(t.filename, t.index, t.text, t.nodes[:k], t.params, t.constraints)
            prog = expand_program(partial, {p: w for p, w in param_words(partial, params).items()})
            outs = [run_program(prog[: i + 1], sc_json) for i in range(len(prog))] if prog else []
            if outs and outs[-1] == INVALID:
                continue
        if k == len(t.nodes):
            words = param_words(t, params)
            prog = expand_program(t, words)
            ans = run_program(prog, sc_json)
            if ans == INVALID or not _out_neq_ok(t, params, sc_json):
                continue
            code = dom.index(ans)
            if rejected(hist, code):
                continue
            if any(nd["type"] == "relate" for nd in t.nodes) and is_degenerate(prog, sc_json):
                continue
            hist[code] += 1
            return params, ans
        node = t.nodes[k]
        typ, side = node["type"], node.get("side_inputs", [])
        kp = [p for p in side if ty[p] in KEY_TYPES]
        children = []
        if typ.startswith("filter") and len(side) == 4 or typ.startswith("relate_filter"):
            cur = _node_value(t, params, k, node, sc_json)
            keys = _scene_keys(sc)
            base = typ.removeprefix("relate_")
            rels = range(4) if typ.startswith("relate_") else [None]
            opts = []
            for r in rels:
                src = sc_json["relationships"][RELATIONS[r]][cur] if r is not None else cur
                for key in keys:
                    c = len(_match(sc, key, src))
                    if (base == "filter_unique" and c != 1) or (base == "filter" and (c < 1 or (r is None and all(x is None for x in key)))):
                        continue
                    opts.append((r, key, c))
            extra = (len(opts) if base == "filter_exist" else sum(o[2] == 1 for o in opts)) if base in ("filter_count", "filter_exist") else 0
            opts += [(rels[0] if rels[0] is None else rng.randrange(4), rng.choice(ALL_KEYS), -1) for _ in range(extra)]
            for r, key, _ in opts:
                p = dict(params)
                for name, x in zip(kp, key):
                    p[name] = -1 if x is None else x
                if r is not None:
                    p[next(q for q in side if ty[q] == "Relation")] = r
                children.append(p)
        elif side:
            p0 = side[0]
            n_opt = 4 if ty[p0] == "Relation" else len(V.values(ty[p0].lower()))
            children = [dict(params, **{p0: v}) for v in range(n_opt)]
        else:
            children = [params]
        rng.shuffle(children)
        stack += [(c, k + 1) for c in children]
    return None


def _node_value(t, params, k, node, sc_json):
    """The output of template node ``node['inputs'][0]`` under ``params``."""
    i = node["inputs"][0]
    partial = type(t)(t.filename, t.index, t.text, t.nodes[: i + 1], t.params, t.constraints)
    return run_program(expand_program(partial, param_words(partial, params)), sc_json)


def _out_neq_ok(t, params, sc_json):
    for c in t.constraints:
        if c["type"] == "OUT_NEQ":
            a, b = (_node_value(t, params, 0, {"inputs": [i]}, sc_json) for i in c["params"])
            if a == b:
                return False
    return True


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
    for g, s in enumerate(scenes):
        if g % 250 == 0:
            use, hist = np.zeros(len(templates), np.int64), [np.zeros(len(answer_domain(t)[1]), np.int64) for t in templates]
        sj, sc = s.to_json(), [tuple(int(x) for x in row) for row in s.attrs]
        done = 0
        for tid in np.argsort(use, kind="stable"):
            got = dfs(templates[tid], sj, sc, None, hist[tid], rng)
            if got:
                use[tid] += 1
                done += 1
                final = templates[tid].nodes[-1]["type"]
                dfs_q.append((templates[tid].key, FINAL.get(final, final), got[1]))
                if done >= 10:
                    break
    return dfs_q


def _compare(a, templates, scenes, dfs_q, dfs_secs) -> None:
    with tempfile.TemporaryDirectory() as d:
        store = write_static_store(Path(d) / "s.h5", scenes)
        t0 = time.perf_counter()
        with StaticStore(store) as st:
            grid = generate_scenes(st, templates, load_synonyms(DEFAULT_SYNONYMS), Options(batch_scenes=1000))
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
