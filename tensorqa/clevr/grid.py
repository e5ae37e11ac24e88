"""One CLEVR template over its parameter grid, for a block of scenes at once.

Rows are P = B scenes x M draws. A template is walked node by node once per block: at each node with
side inputs, every option of its grid (324 filter keys (size, color, material, shape, each possibly
unspecified), x 4 relations for ``relate_filter*``; 4 relations for ``relate``; the values of one
attribute for ``filter_<attr>``) is evaluated for every row at once (one batched matmul of the
input sets against the key-match table), CLEVR's option rules become a weight mask over the grid,
and each row draws one valid option (inverse CDF of the weights at a counter-based hash of (seed,
scene, template, draw, node)), so a draw never depends on the block size or shard). The rows' programs then
run through the registry's ``clevr_*`` primitives; constraints and the degeneracy test are masks
(``validity``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import torch

from tensorqa.clevr.templates import FILTER_KINDS, KEY_TYPES, RELATE_FILTER_KINDS, SINGLE_FILTERS, Template
from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.static import filter_key
from tensorqa.errors import TensorQAError
from tensorqa.scenes.static_batch import ATTRS, StaticBatch, clevr_vocab

TYPE_ATTR = {"Size": 0, "Color": 1, "Material": 2, "Shape": 3}
_M32 = 0xFFFFFFFF


def _mix(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer finalizer on int64 tensors (wrapping products keep the low bits exact)."""
    x = x & _M32
    x = x ^ (x >> 16)
    x = (x * 0x85EBCA6B) & _M32
    x = x ^ (x >> 13)
    x = (x * 0xC2B2AE35) & _M32
    return x ^ (x >> 16)


def all_keys() -> torch.Tensor:
    """int64[K, 4]: every filter key, -1 = unspecified, size slowest (K = 3 * 9 * 3 * 4 = 324)."""
    v = clevr_vocab()
    axes = [range(-1, len(v.values(a))) for a in ATTRS]
    return torch.tensor(list(itertools.product(*axes)), dtype=torch.int64)


@dataclass
class Block:
    """Scene tensors repeated over M draws: attrs int64[P, N, 4], rel bool[P, N, N, 4], mask bool[P, N];
    ``match`` float32[B, N, K] (object n satisfies key k); ``row_key`` int64[P] (the draw's hash)."""

    B: int
    M: int
    attrs: torch.Tensor
    rel: torch.Tensor
    mask: torch.Tensor
    match: torch.Tensor
    keys: torch.Tensor
    scene_pos: torch.Tensor  # int64[B] global scene positions
    seed: int
    _scene_counts: torch.Tensor | None = field(default=None, repr=False)

    @staticmethod
    def build(batch: StaticBatch, scene_pos: torch.Tensor, M: int, seed: int) -> "Block":
        keys = all_keys().to(batch.attrs.device)
        ok = (keys[None, None] < 0) | (batch.attrs[:, :, None, :] == keys[None, None])  # [B, N, K, 4]
        match = (ok.all(-1) & batch.mask[:, :, None]).float()
        rep = lambda t: t.repeat_interleave(M, 0)  # noqa: E731
        return Block(len(batch), M, rep(batch.attrs), rep(batch.rel), rep(batch.mask), match, keys, scene_pos, seed)

    @property
    def P(self) -> int:
        return self.B * self.M

    def counts(self, sets: torch.Tensor) -> torch.Tensor:
        """bool[P, J, N] -> float[P, J, K]: |set ∩ key| for every key."""
        J, N = sets.shape[1], sets.shape[2]
        return torch.bmm(sets.reshape(self.B, self.M * J, N).float(), self.match).reshape(self.P, J, -1)

    def scene_counts(self) -> torch.Tensor:
        """float[B, K]: how many objects of each scene match each key."""
        if self._scene_counts is None:
            self._scene_counts = self.match.sum(1)
        return self._scene_counts

    @property
    def row_scene(self) -> torch.Tensor:
        """int64[P]: the block scene of each row."""
        return torch.arange(self.P, device=self.mask.device) // self.M

    def uniforms(self, template_id: int, node: int) -> torch.Tensor:
        """float64[P] in (0, 1): the hash of (seed, scene, template, draw, node)."""
        dev = self.attrs.device
        draw = torch.arange(self.M, device=dev).repeat(self.B)
        scene = self.scene_pos.to(dev).repeat_interleave(self.M)
        h = _mix(_mix(_mix(_mix(torch.full_like(scene, self.seed)) ^ scene) ^ (template_id * 1009 + node)) ^ draw)
        return (h.double() + 0.5) / 2.0**32


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
    """A template run over a block: ``outs[k]`` = (kind, tensor) of template node k; ``pre[k]`` the
    set before a unique / count / exist suffix; ``params`` name -> int64[P] (-1 = unspecified);
    ``ok`` bool[P]: the program ran without '__INVALID__' and every node had an option."""

    outs: list
    pre: dict
    params: dict
    ok: torch.Tensor


def _key_params(t: Template, node: dict) -> list[tuple[str, int]]:
    ty = t.param_type
    return [(p, TYPE_ATTR[ty[p]]) for p in node.get("side_inputs", []) if ty[p] in KEY_TYPES]


def _rel_param(t: Template, node: dict) -> str:
    return next(p for p in node.get("side_inputs", []) if t.param_type[p] == "Relation")


def _suffix(kind: str, filtered: torch.Tensor):
    if kind.endswith("unique"):
        return "object", registry.lookup("clevr_unique")(filtered)
    if kind.endswith("count"):
        return "int", registry.lookup("clevr_count")(filtered)
    if kind.endswith("exist"):
        return "bool", registry.lookup("clevr_exist")(filtered)
    return "set", filtered


def _key_weights(blk: Block, t: Template, kind: str, cnt: torch.Tensor, scnt: torch.Tensor, kp, sem) -> torch.Tensor:
    """CLEVR's option rules for a filter / relate_filter node: float[U, J, K] weights from
    cnt = |input ∩ key| float[U, J, K] and scnt = |scene ∩ key| float[U, K]."""
    keys, nulls = blk.keys, t.null_params()
    allowed = torch.ones(keys.shape[0], dtype=torch.bool, device=keys.device)
    for name, a in kp:
        if name in nulls:
            allowed &= keys[:, a] < 0
    base = kind.removeprefix("relate_")
    present = scnt[:, None, :] >= 1  # the key matches a scene object
    if base == "filter_unique":
        w = cnt == 1
    elif base == "filter":
        w = cnt >= 1
        if kind == "filter":
            w = w & (keys >= 0).any(-1)[None, None]  # filter drops the all-unspecified key
    else:  # count / exist: keys present in the scene, plus CLEVR's extra "empty" keys
        w = present.expand_as(cnt).clone()
    w = (w & allowed).float()
    if base in ("filter_count", "filter_exist"):
        # each option brings one random extra key (filter_exist), or each singleton option does
        # (filter_count): give the extra keys that share of the mass, uniformly over their pool
        n_opt = w.sum(-1, keepdim=True)
        n_extra = n_opt if base == "filter_exist" else ((cnt == 1) & (w > 0)).sum(-1, keepdim=True).float()
        pool = allowed.expand_as(cnt) if sem.empty_keys_may_match else (allowed & ~present).expand_as(cnt)
        pool = pool.float()
        share = n_extra / (n_opt + n_extra).clamp(min=1)
        w = torch.where(n_opt > 0, w / n_opt.clamp(min=1) * (1 - share), w) + pool / pool.sum(-1, keepdim=True).clamp(min=1) * share
    return w


def _draw_key(blk: Block, t: Template, typ: str, kp, src: torch.Tensor, inp: torch.Tensor, sem, tid: int, k: int):
    """Draw a filter key (x relation for relate_filter*) for every row: the weights are computed
    once per distinct (scene, input) and the rows draw by inverse CDF from one flat cumulative
    table. src bool[P, J, N]: the input set (J = 4 relations for relate_filter*); inp: the node's
    input (set or object), which identifies rows that share weights."""
    P, N = blk.mask.shape
    rs = blk.row_scene
    if inp.dim() == 1:  # an object: rows share (scene, object)
        ident = rs * (N + 1) + inp + 1
    elif N <= 40:
        ident = rs * (1 << N) + (inp.long() << torch.arange(N, device=inp.device)).sum(-1)
    else:
        ident = torch.arange(P, device=inp.device)
    uniq, inv = torch.unique(ident, return_inverse=True)
    U = uniq.shape[0]
    rep = torch.empty(U, dtype=torch.int64, device=inp.device).scatter_(0, inv, torch.arange(P, device=inp.device))
    su = rs[rep]
    cnt = torch.bmm(src[rep].float(), blk.match[su])  # [U, J, K]
    scnt = blk.scene_counts()[su]
    w = _key_weights(blk, t, typ, cnt, scnt, kp, sem)
    if typ in RELATE_FILTER_KINDS:
        # trivial pairs (the relation removes nothing): keep about round(N * 0.1 / 0.9) of them
        triv = (cnt == scnt[:, None, :]) & (w > 0)
        n_non = ((w > 0) & ~triv).sum((1, 2)).float()
        n_tr = triv.sum((1, 2)).float()
        keep = (torch.round(n_non * 0.1 / 0.9) / n_tr.clamp(min=1)).clamp(max=1)
        keep = torch.where(n_non > 0, keep, torch.ones_like(keep))
        w = torch.where(triv, w * keep[:, None, None], w)
    w = w.reshape(U, -1)
    JK = w.shape[1]
    total = w.double().sum(-1)
    cdf = w.double().flatten().cumsum(0)
    base = cdf.view(U, JK)[:, -1] - total
    x = base[inv] + blk.uniforms(tid, k) * total[inv]
    idx = torch.searchsorted(cdf, x, right=True)
    opt = (idx - inv * JK).clamp(0, JK - 1)
    return opt, total[inv] > 0


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
            kp = _key_params(t, node)
            if typ in RELATE_FILTER_KINDS:
                rp = _rel_param(t, node)
                src = torch.stack([L("clevr_relate")(arg[0], blk.rel, torch.full_like(arg[0], r)) for r in range(4)], 1)
            else:
                src = arg[0][:, None]
            if sampling:
                opt, has = _draw_key(blk, t, typ, kp, src, arg[0], sem, tid, k)
                ok &= has
                K = blk.keys.shape[0]
                key = blk.keys[opt % K]
                for name, a in kp:
                    params[name] = key[:, a]
                if typ in RELATE_FILTER_KINDS:
                    params[rp] = opt // K
            key = torch.full((blk.P, 4), -1, dtype=torch.int64, device=ok.device)
            for name, a in kp:
                key[:, a] = params[name]
            if typ in RELATE_FILTER_KINDS:
                s_in = L("clevr_relate")(arg[0], blk.rel, params[rp])
            else:
                s_in = arg[0]
            filtered = filter_key(s_in, blk.attrs, key)
            pre[k] = filtered
            out = _suffix(typ, filtered)
        elif typ == "relate":
            rp = _rel_param(t, node)
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
        elif typ in ("count", "exist"):
            pre[k] = arg[0]
            out = _suffix(typ, arg[0])
        elif typ == "unique":
            out = ("object", L("clevr_unique")(arg[0]))
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
