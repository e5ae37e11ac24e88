"""The grid's parameter draws follow CLEVR's option weights exactly.

A draw maps each row's hash u in (0, 1) to an option, so that the u that give option e form an
interval of length w_e / sum(w). Fed Q evenly spaced u, every option must come up Q x its share,
to within one. The weights are restated here from CLEVR's generator (docs/reference/clevr.md: the
options of a filter node are the keys that keep the question well-formed; filter, filter_count and
filter_exist add "empty" keys drawn over all keys, relate_filter* nodes none; relate nodes keep about
a tenth of trivial pairs), one scene and one
key at a time, as the independent twin of the grid's class tables."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensorqa.clevr.templates import DEFAULT_TEMPLATES_DIR

from tensorqa.clevr import grid
from tensorqa.clevr.semantics import CLEVR, STRICT
from tensorqa.clevr.templates import FILTER_KINDS, RELATE_FILTER_KINDS, load_templates
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_batch import StaticBatch

TEMPLATES = DEFAULT_TEMPLATES_DIR
Q = 20_000


def reference_weights(t, kind, kp, sets, attrs, sem) -> np.ndarray:
    """float[J, K]: CLEVR's weight of each (relation, key) option; sets bool[J, n]: the node's input
    (per relation), attrs int[n, 4]: the scene's objects."""
    keys = grid.all_keys().numpy()
    nulls = t.null_params()
    J, K = len(sets), len(keys)
    match = np.array([[all(k[a] < 0 or o[a] == k[a] for a in range(4)) for k in keys] for o in attrs])  # [n, K]
    scnt = match.sum(0)
    allowed = np.array([all(k[a] < 0 for name, a in kp if name in nulls) for k in keys])
    base = kind.removeprefix("relate_")
    w = np.zeros((J, K))
    for j in range(J):
        cnt = (match & sets[j][:, None]).sum(0)
        if base == "filter_unique":
            opt = cnt == 1
        elif base == "filter":
            opt = (cnt >= 1) & ((keys >= 0).any(1) if kind == "filter" else True)
        else:
            opt = scnt >= 1
        opt = opt & allowed
        w[j] = opt
        # CLEVR calls add_empty_filter_options for filter, filter_count and filter_exist only (not in the
        # relate_filter* branch): one extra child per singleton option (per option for filter_exist), its
        # key drawn uniformly over all K keys; a key a NULL constraint forbids is a child the search drops
        if kind in ("filter", "filter_count", "filter_exist"):
            n_opt = opt.sum()
            n_extra = n_opt if base == "filter_exist" else ((cnt == 1) & opt).sum()
            pool = allowed if sem.empty_keys_may_match else allowed & (scnt == 0)
            share = n_extra / max(n_opt + n_extra, 1)
            per_key = share / K if sem.empty_keys_may_match else share / max(pool.sum(), 1)
            w[j] = (opt / n_opt * (1 - share) if n_opt else opt) + pool * (per_key if n_extra else 0)
    if kind in RELATE_FILTER_KINDS:
        cnt = np.stack([(match & sets[j][:, None]).sum(0) for j in range(J)])
        triv = (cnt == scnt[None]) & (w > 0)
        n_non, n_tr = ((w > 0) & ~triv).sum(), triv.sum()
        keep = min(round(n_non * 0.1 / 0.9) / max(n_tr, 1), 1) if n_non else 1
        w = np.where(triv, w * keep, w)
    return w


def _cases():
    seen = {}
    for t in load_templates(TEMPLATES):
        for k, node in enumerate(t.nodes):
            typ = node["type"]
            src_type = t.nodes[node["inputs"][0]]["type"] if node.get("inputs") else None
            if typ in RELATE_FILTER_KINDS or (typ in FILTER_KINDS and src_type in ("scene", "same_color", "same_shape")):
                seen.setdefault((typ, src_type if typ in FILTER_KINDS else "object", bool(t.null_params())), (t, k))
    return sorted(seen.items(), key=str)


@pytest.mark.parametrize("sem", [CLEVR, STRICT], ids=["clevr", "strict"])
@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c[0][0]}-{c[0][1]}{'-null' if c[0][2] else ''}")
def test_draws_follow_clevrs_weights(case, sem):
    (typ, src_type, _), (t, k) = case
    batch = StaticBatch.from_scenes(sample_scenes(3, seed=5))
    blk = grid.Block.build(batch, torch.arange(3), Q, seed=0)
    stratified = (torch.arange(Q, dtype=torch.float64) + 0.5) / Q
    blk.uniforms = lambda tid, node: stratified.repeat(3)
    kp = grid.key_params(t, t.nodes[k])
    if typ in RELATE_FILTER_KINDS:
        obj = torch.full((blk.P,), 1, dtype=torch.int64)  # the input: object 1 of each scene
        src = torch.stack([blk.rel[torch.arange(blk.P), 1, :, r] for r in range(4)], 1)
        opt, has = grid._draw_key(blk, t, typ, kp, obj, sem, 0, k, ("object", obj))
    elif src_type == "scene":
        src = blk.mask[:, None]
        opt, has = grid._draw_key(blk, t, typ, kp, blk.mask, sem, 0, k, "scene")
    else:  # the other objects that share object 1's attribute
        a = ("size", "color", "material", "shape").index(src_type.removeprefix("same_"))
        obj = torch.full((blk.P,), 1, dtype=torch.int64)
        v = blk.attrs[:, :, a]
        same = (v == v[:, 1:2]) & blk.mask
        same[:, 1] = False
        src = same[:, None]
        opt, has = grid._draw_key(blk, t, typ, kp, same, sem, 0, k, ("same", a, obj))
    for b in range(3):
        n = int(batch.mask[b].sum())
        sets = src[b * Q, :, :n].numpy()
        w = reference_weights(t, typ, kp, sets, batch.attrs[b, :n].numpy(), sem).ravel()
        rows = slice(b * Q, (b + 1) * Q)
        assert bool(has[rows].all()) == (w.sum() > 0)
        if w.sum() == 0:
            continue
        got = np.bincount(opt[rows].numpy(), minlength=w.size)
        assert np.abs(got - Q * w / w.sum()).max() <= 1.0 + 1e-6, (t.key, typ, b)


def _two_object_scene():
    """Object 0 = (size 0, color 0, material 0, shape 0), object 1 = (size 1, color 0, material 0, shape 1):
    each matches 16 keys, 4 of them (size and shape unspecified) both, so 28 keys are present and 24 of
    them match one object."""
    from tensorqa.scenes.static_batch import StaticScene

    attrs = np.array([[0, 0, 0, 0], [1, 0, 0, 1]], np.int64)
    return StaticBatch.from_scenes([StaticScene("s.png", "new", attrs, np.zeros((2, 2, 4), bool), np.zeros((2, 3), np.float32))])


@pytest.mark.parametrize("family, p_option, p_other, n_option, n_other", [
    # single_or#0's first filter, no NULL: 27 options (the present keys but the all-unspecified one), 24
    # singletons bring 24 extra children; the search picks one of the 51 children: an option 1/51, an
    # extra 24/51 spread over the 324 keys it is drawn from
    ("single_or.json#0", 1 / 51 + 24 / (51 * 324), 24 / (51 * 324), 27, 297),
    # single_or#1: <Z> NULL. 11 options (size unspecified, present, not all-unspecified), 8 singletons;
    # of the 19 children an extra survives only with a size-free key (108 of 324): mass 11/19 + 8/19 x
    # 108/324 = 41/57, an option (1/19 + 8/(19 x 324)) / (41/57), another allowed key 8/(19 x 324) / (41/57)
    ("single_or.json#1", (1 / 19 + 8 / (19 * 324)) * 57 / 41, 8 / (19 * 324) * 57 / 41, 11, 97),
])
def test_filter_extra_keys_weigh_as_clevrs_search(family, p_option, p_other, n_option, n_other):
    t = next(t for t in load_templates(TEMPLATES) if t.key == family)
    batch = _two_object_scene()
    blk = grid.Block.build(batch, torch.arange(1), Q, seed=0)
    blk.uniforms = lambda tid, node: (torch.arange(Q, dtype=torch.float64) + 0.5) / Q
    kp = grid.key_params(t, t.nodes[1])
    opt, has = grid._draw_key(blk, t, "filter", kp, blk.mask, CLEVR, 0, 1, "scene")
    assert bool(has.all())
    got = np.bincount(opt.numpy(), minlength=324)
    keys = grid.all_keys().numpy()
    present = np.array([any(all(k[a] < 0 or o[a] == k[a] for a in range(4)) for o in ([0, 0, 0, 0], [1, 0, 0, 1]))
                        for k in keys])
    null_size = family.endswith("#1")
    allowed = keys[:, 0] < 0 if null_size else np.ones(len(keys), bool)
    option = present & allowed & (keys >= 0).any(1)
    assert option.sum() == n_option and (allowed & ~option).sum() == n_other
    assert abs(n_option * p_option + n_other * p_other - 1) < 1e-12
    want = np.where(option, p_option, np.where(allowed, p_other, 0.0)) * Q
    assert np.abs(got - want).max() <= 1.0 + 1e-6
