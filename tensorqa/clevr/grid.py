"""One CLEVR template over its parameter grid, for a block of scenes at once.

Rows are P = B scenes x M draws; the template is walked node by node once per block. At a node with
side inputs every option (324 filter keys, x 4 relations for ``relate_filter*``; 4 relations; the
values of one attribute) is counted against the node's input, CLEVR's option rules sort the options
into classes of equal weight, and each row draws one in proportion to the weights at engine.rng's
hash of (seed, scene, template, node, draw), so a draw never depends on the block or shard. The
programs run through the registry's ``clevr_*`` primitives.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tensorqa.clevr.keys import all_keys
from tensorqa.clevr.scene_block import POPCOUNT16, Block, count_true
from tensorqa.clevr.templates import FILTER_KINDS, KEY_TYPES, RELATE_FILTER_KINDS, SINGLE_FILTERS, Template
from tensorqa.engine.primitives import registry, static  # noqa: F401  (static registers the clevr_* primitives)
from tensorqa.errors import TensorQAError
from tensorqa.scenes.static_batch import ATTRS, clevr_vocab

TYPE_ATTR = {"Size": 0, "Color": 1, "Material": 2, "Shape": 3}
LOCAL = 6  # option classes per relation: (in the options, in the extra pool, in both) x (trivial or not)


def draw(weights: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """weights float[P, n] >= 0, u float64[P] in (0, 1) -> (option int64[P], has bool[P]): the
    option whose cumulative-weight interval holds u x total (inverse CDF: one hash per row)."""
    cdf = weights.double().cumsum(-1)
    total = cdf[:, -1]
    x = (u * total).unsqueeze(-1)
    opt = torch.searchsorted(cdf, x, right=True).squeeze(-1).clamp(max=weights.shape[-1] - 1)
    return opt, total > 0


@dataclass
class Run:
    """``outs[k]`` (kind, tensor) of template node k; ``pre[k]`` the set before a unique / count / exist
    suffix; ``params`` name -> int64[P] (-1 unspecified); ``ok`` bool[P]: no '__INVALID__', every node
    had an option."""

    outs: list
    pre: dict
    params: dict
    ok: torch.Tensor


def key_params(t: Template, node: dict) -> list[tuple[str, int]]:
    ty = t.param_type
    return [(p, TYPE_ATTR[ty[p]]) for p in node.get("side_inputs", []) if ty[p] in KEY_TYPES]


def rel_param(t: Template, node: dict) -> str:
    return next(p for p in node.get("side_inputs", []) if t.param_type[p] == "Relation")


SUFFIX_KIND = {"unique": "object", "count": "int", "exist": "bool"}


def _suffix(typ: str, filtered: torch.Tensor):
    """(kind, output) of a node ending in unique / count / exist, else the set itself."""
    tail = typ.rsplit("_", 1)[-1]
    return (SUFFIX_KIND[tail], registry.lookup(f"clevr_{tail}")(filtered)) if tail in SUFFIX_KIND else ("set", filtered)


def extra_keys(kind: str) -> bool:
    """Whether CLEVR adds random extra keys to a node's options (add_empty_filter_options): ``filter``,
    ``filter_count`` and ``filter_exist``; never ``filter_unique`` nor the ``relate_filter*`` nodes."""
    return kind in ("filter", "filter_count", "filter_exist")


def _option_classes(t: Template, kind: str, cnt: torch.Tensor, scnt: torch.Tensor, kp, sem):
    """CLEVR's option rules for a filter / relate_filter node as classes of options of equal weight,
    from cnt = |input ∩ key| float[U, J, K] and scnt = |scene ∩ key| float[U, K]. Returns (cls int8[U, J, K]:
    negative = no option, else 2 x (membership - 1) + trivial, membership 1 option, 2 extra key only,
    3 both; n int64[U, J x LOCAL] options per (relation, class); weight float64[U, J x LOCAL] of one).
    The weights make a draw pick as CLEVR's depth-first search does: the extra "empty" keys
    (add_empty_filter_options) get their share of the mass over the K keys (one a NULL forbids is a
    dropped child); trivial relate pairs keep about round(n x 0.1 / 0.9) of their number."""
    keys = all_keys().to(cnt.device)
    nulls = t.null_params()
    U, J, K = cnt.shape
    allowed = torch.ones(K, dtype=torch.bool, device=cnt.device)
    for name, a in kp:
        if name in nulls:
            allowed &= keys[:, a] < 0
    base = kind.removeprefix("relate_")
    present = scnt[:, None, :] >= 1  # the key matches a scene object
    one = torch.ones(U, J, dtype=torch.float64, device=cnt.device)
    if base == "filter_unique":
        opt = cnt == 1
    elif base == "filter":
        opt = cnt >= 1
        if kind == "filter":
            opt = opt & (keys >= 0).any(-1)  # filter drops the all-unspecified key
    else:
        opt = present.expand(U, J, K)
    opt = opt & allowed
    alpha, beta, extra = one, torch.zeros_like(one), torch.zeros_like(opt)
    counted = extra_keys(kind)
    if counted:
        # each option brings one random extra key (filter_exist), or each singleton option does (filter,
        # filter_count); CLEVR draws it over all K keys (each attribute's values and None), and one that a
        # NULL constraint forbids is a child the search drops: the allowed ones weigh 1 / K of the share
        n_opt = count_true(opt).double()
        n_extra = n_opt if base == "filter_exist" else count_true((cnt == 1) & opt).double()
        pool = allowed if sem.empty_keys_may_match else allowed & ~present
        extra = pool & (n_extra > 0)[..., None]  # extra keys only come with options that bring them
        share = n_extra / (n_opt + n_extra).clamp(min=1)
        alpha = (1 - share) / n_opt.clamp(min=1)
        beta = share / (K if sem.empty_keys_may_match else count_true(extra).double().clamp(min=1))
    related = kind in RELATE_FILTER_KINDS
    cls = opt.to(torch.int8) * 2 + extra.to(torch.int8) * 4 - 2  # 2 x (membership - 1); negative: no option
    if related:
        cls += cnt == scnt[:, None, :]  # trivial: the relation removes nothing
    n = torch.zeros(U, J, LOCAL, dtype=torch.int64, device=cnt.device)
    for m_ in range(LOCAL):
        if (m_ // 2 + 1 > 1 and not counted) or (m_ % 2 == 1 and not related):
            continue  # a class this kind of node never has
        n[..., m_] = count_true(cls == m_)
    keep = torch.ones(U, dtype=torch.float64, device=cnt.device)
    if related:
        n_tr = n[..., 1::2].sum((1, 2)).double()
        n_non = n[..., 0::2].sum((1, 2)).double()
        keep = torch.where(n_non > 0, (torch.round(n_non * 0.1 / 0.9) / n_tr.clamp(min=1)).clamp(max=1), keep)
    m = torch.arange(LOCAL, device=cnt.device)
    in_opt, in_extra, is_triv = (m // 2) != 1, m // 2 >= 1, m % 2 == 1  # membership m // 2 + 1
    weight = alpha[..., None] * in_opt + beta[..., None] * in_extra
    weight = weight * torch.where(is_triv, keep[:, None], torch.ones_like(keep)[:, None])[:, None, :]
    return cls, n.reshape(U, J * LOCAL), weight.reshape(U, J * LOCAL)


def _class_index(cls: torch.Tensor, n: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(order int16[U, J, K]: each relation's options sorted by class, stable; start int64[U, J x LOCAL]:
    where each (relation, class) begins in its row of ``order``), so that a draw finds the option of
    rank r in class c at ``order[u, j, start[u, c] + r]``."""
    U, J, K = cls.shape
    order = torch.sort(cls, dim=-1, stable=True).indices.to(torch.int16)
    n3 = n.view(U, J, LOCAL)
    before = n3.cumsum(-1) - n3  # options of the earlier classes of the same relation
    start = (K - n3.sum(-1, keepdim=True)) + before  # non-options (negative classes) sort first
    return order, start.reshape(U, J * LOCAL)


def _classes_for(blk: Block, t: Template, typ: str, kp, sem, inp: torch.Tensor, source):
    """(cls, n, weight) of :func:`_option_classes` for the distinct inputs, inv int64[P] (each row's input
    among them), has bool[P] (False where the input is no object). ``source`` (:func:`_source`): "scene",
    ("object", obj), ("same", attr, obj) use tables over all the block's scenes or objects, built once
    per block and kind of node (``SceneTables.classes``); None (any other set) is grouped here."""
    tab = blk.tables
    P, N = blk.mask.shape
    rs = blk.row_scene
    dev = inp.device
    nulls = t.null_params()
    has = torch.ones(P, dtype=torch.bool, device=dev)
    if source is not None:
        form = source if source == "scene" else source[:-1]
        key = (form, typ, tuple(a for name, a in kp if name in nulls))
        if key not in tab.classes:
            S = tab.match.shape[0]
            real = tab.mask.flatten()
            if form == "scene":
                cnt, scnt = tab.counts[:, None, :], tab.counts
            elif form[0] == "object":  # every object of the block: its 4 relation sets
                rel = tab.rel.permute(0, 1, 3, 2).reshape(S, N * 4, N).float()  # [S, (o, r), j]
                cnt = torch.bmm(rel, tab.match).view(S * N, 4, -1)[real]
                scnt = tab.counts.repeat_interleave(N, 0)[real]
            else:  # every object of the block: the other objects that share its attribute
                v = tab.attrs[..., form[1]]
                same = (v[:, :, None] == v[:, None, :]) & tab.mask[:, None, :]
                same &= ~torch.eye(N, dtype=torch.bool, device=dev)
                cnt = torch.bmm(same.float(), tab.match).view(S * N, 1, -1)[real]
                scnt = tab.counts.repeat_interleave(N, 0)[real]
            tab.classes[key] = _option_classes(t, typ, cnt, scnt, kp, sem)
            if form == "scene":  # few rows, drawn from by many: index each class's options once
                tab.classes[key] += _class_index(*tab.classes[key][:2])
        scene = blk.scene_idx[rs]
        if form == "scene":
            inv = scene
        else:  # the object's row among the block's objects
            obj = source[-1]
            o = obj.clamp(min=0)
            has = (obj >= 0) & tab.mask[scene, o]
            inv = (tab.object_row[scene * N + o]).clamp(min=0)
        return tab.classes[key], inv, has
    if N <= 40:
        bits = (inp.long() << torch.arange(N, device=dev)).sum(-1)
        ident = blk.scene_idx[rs] * (1 << N) + bits
    else:
        ident = torch.arange(P, device=dev)
    _, inv = torch.unique(ident, return_inverse=True)
    U = int(inv.max()) + 1 if P else 0
    rep = torch.empty(U, dtype=torch.int64, device=dev).scatter_(0, inv, torch.arange(P, device=dev))
    su = blk.scene_idx[rs[rep]]
    if N <= 16:  # |set ∩ key| as the popcount of the set's bits and the key's object bits
        cnt = POPCOUNT16.to(dev)[tab.key_bits[su] & bits[rep, None]].to(torch.float32)[:, None, :]  # [U, 1, K]
    else:
        cnt = torch.bmm(inp[rep, None].float(), tab.match[su])  # [U, 1, K]
    return _option_classes(t, typ, cnt, tab.counts[su], kp, sem), inv, has


def _draw_key(blk: Block, t: Template, typ: str, kp, inp: torch.Tensor, sem, tid: int, k: int, source=None):
    """Draw a filter key (x relation for relate_filter*) per row in proportion to :func:`_option_classes`'
    weights: the hash picks a class by its total weight, then, from the rest of the hash, one option of
    the class (its options weigh the same: the inverse CDF without a float table per row).
    inp: the node's input (a set bool[P, N], or an object int64[P] for relate_filter*)."""
    (cls, n_all, w_all, *index), inv, has = _classes_for(blk, t, typ, kp, sem, inp, source)
    J, K = cls.shape[1], cls.shape[2]
    n = n_all[inv]
    mass = n * w_all[inv]  # [P, J x LOCAL]
    cdf = mass.cumsum(-1)
    total = cdf[:, -1]
    x = blk.uniforms(tid, k) * total
    c = torch.searchsorted(cdf, x[:, None], right=True).squeeze(-1).clamp(max=J * LOCAL - 1)
    m_c = mass.gather(1, c[:, None]).squeeze(1)
    rest = (x - (cdf.gather(1, c[:, None]).squeeze(1) - m_c)) / m_c.clamp(min=1e-300)
    n_c = n.gather(1, c[:, None]).squeeze(1)
    rank = (rest * n_c).long().clamp(min=0).minimum((n_c - 1).clamp(min=0))
    j, local = c // LOCAL, (c % LOCAL).to(torch.int8)
    if index:  # the class's options in order, from the table's index
        order, start = index
        at = (start[inv].gather(1, c[:, None]).squeeze(1) + rank).clamp(max=K - 1)
        pos = order[inv, j, at].long()
    else:
        members = cls[inv, j] == local[:, None]  # [P, K]: the options of the drawn class
        seen = members.cumsum(-1, dtype=torch.int32)  # non-decreasing: the option of rank r is the first above r
        pos = torch.searchsorted(seen, rank[:, None].to(torch.int32), right=True).squeeze(-1).clamp(max=K - 1)
    return j * K + pos, has & (total > 0)


def _source(t: Template, typ: str, i: int, outs: list, replace: dict):
    """What the input of a filter node (template node ``i``'s output) is: "scene", ("object", obj) for
    relate_filter*, ("same", attr, obj) for same_<attr>(obj), or None (any other set)."""
    if i in replace:
        return None
    if typ in RELATE_FILTER_KINDS:
        return ("object", outs[i][1])
    node = t.nodes[i]
    if node["type"] == "scene":
        return "scene"
    if node["type"].startswith("same_") and node["inputs"][0] not in replace:
        return ("same", ATTRS.index(node["type"].removeprefix("same_")), outs[node["inputs"][0]][1])
    return None


def run_template(t: Template, tid: int, blk: Block, sem, params: dict | None = None, replace: dict | None = None) -> Run:
    """Walk ``t`` over the block. ``params`` None: draw them; else use them (a re-run).
    ``replace``: template node -> set bool[P, N] standing in for its output (the degeneracy test)."""
    sampling = params is None
    params = {} if sampling else params
    replace = replace or {}
    ok = torch.ones(blk.P, dtype=torch.bool, device=blk.mask.device)
    outs: list = []
    pre: dict = {}
    L = registry.lookup
    for k, node in enumerate(t.nodes):
        typ, ins = node["type"], node.get("inputs", [])
        arg = [outs[i][1] for i in ins]
        if k in replace:
            outs.append(("set", replace[k]))
            continue
        if typ == "scene":
            out = ("set", L("clevr_scene")(blk.mask))
        elif typ in FILTER_KINDS or typ in RELATE_FILTER_KINDS:
            kp = key_params(t, node)
            rp = rel_param(t, node) if typ in RELATE_FILTER_KINDS else None
            if sampling:
                opt, has = _draw_key(blk, t, typ, kp, arg[0], sem, tid, k, _source(t, typ, ins[0], outs, replace))
                ok &= has
                K = blk.keys.shape[0]
                key = blk.keys[opt % K]
                for name, a in kp:
                    params[name] = key[:, a]
                if rp is not None:
                    params[rp] = opt // K
            s_in = arg[0] if rp is None else L("clevr_relate")(arg[0], blk.rel, params[rp])
            filtered = s_in & blk.key_match([(params[name], a) for name, a in kp])
            pre[k] = filtered
            out = _suffix(typ, filtered)
        elif typ == "relate":
            rp = rel_param(t, node)
            if sampling:
                opt, _ = draw(torch.ones(blk.P, 4, device=ok.device), blk.uniforms(tid, k))
                params[rp] = opt
            out = ("set", L("clevr_relate")(arg[0], blk.rel, params[rp]))
        elif typ in SINGLE_FILTERS:
            p = node["side_inputs"][0]
            attr = typ.removeprefix("filter_")
            n = len(clevr_vocab().values(attr))
            if sampling:
                params[p], _ = draw(torch.ones(blk.P, n, device=ok.device), blk.uniforms(tid, k))
            out = ("set", L(f"clevr_{typ}")(arg[0], blk.attrs, params[p]))
        elif typ.startswith("same_"):
            out = ("set", L(f"clevr_{typ}")(arg[0], blk.attrs, blk.mask))
        elif typ in ("union", "intersect"):
            out = ("set", L(f"clevr_{typ}")(arg[0], arg[1]))
        elif typ in SUFFIX_KIND:
            pre[k] = arg[0]  # read only where two counts are compared (OUT_NEQ)
            out = _suffix(typ, arg[0])
        elif typ.startswith("query_"):
            out = ("attr:" + typ.removeprefix("query_"), L(f"clevr_{typ}")(arg[0], blk.attrs))
        elif typ.startswith("equal_") or typ in ("less_than", "greater_than"):
            out = ("bool", L(f"clevr_{typ}")(arg[0], arg[1]))
        else:
            raise TensorQAError(f"{t.key}: node {k}: unsupported node type {typ!r}")
        if out[0] == "object":
            ok &= out[1] >= 0
        outs.append(out)
    return Run(outs, pre, params, ok)
