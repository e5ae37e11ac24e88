"""A block of static scenes -> the compiled generator's inputs (object bits per key, relation and
attribute), and the bookkeeping it carries from block to block."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tensorqa.clevr.keys import all_keys
from tensorqa.clevr.plan import Plan
from tensorqa.scenes.static_batch import ATTRS, StaticBatch, clevr_vocab

MAX_OBJECTS = 62  # object sets are int64 words
ROUNDS = np.array((4, 4, 8, 16, 32), np.int64)  # generate.ROUNDS


def nvals() -> np.ndarray:
    v = clevr_vocab()
    return np.array([len(v.values(a)) for a in ATTRS], np.int64)


def scene_bits(batch: StaticBatch) -> tuple:
    """(attrs int64[B, N, 4], maskbits int64[B], relbits int64[B, N, 4] (objects j that are r of i),
    attrbits int64[B, 4, 8] (objects with value v of attribute a), keybits int64[B, K], nobj int64[B])."""
    attrs = np.ascontiguousarray(batch.attrs.cpu().numpy().astype(np.int64))
    mask = batch.mask.cpu().numpy()
    rel = batch.rel.cpu().numpy()
    B, N = mask.shape
    w = np.left_shift(np.int64(1), np.arange(N, dtype=np.int64))
    maskbits = (mask * w).sum(1)
    relbits = np.ascontiguousarray((rel.transpose(0, 1, 3, 2) * w).sum(-1))
    nv = nvals()
    attrbits = np.zeros((B, 4, 8), np.int64)
    ext = np.zeros((B, 4, 9), np.int64)  # column 0: unspecified (every object)
    for a in range(4):
        hit = (attrs[..., a, None] == np.arange(nv[a])) & mask[..., None]  # [B, N, n]
        attrbits[:, a, :nv[a]] = (hit * w[:, None]).sum(1)
        ext[:, a, 0] = maskbits
        ext[:, a, 1:nv[a] + 1] = attrbits[:, a, :nv[a]]
    keys = all_keys().numpy()
    keybits = ext[:, 0, keys[:, 0] + 1] & ext[:, 1, keys[:, 1] + 1] & ext[:, 2, keys[:, 2] + 1] & ext[:, 3, keys[:, 3] + 1]
    return attrs, maskbits, relbits, attrbits, np.ascontiguousarray(keybits), mask.sum(1).astype(np.int64)


def plan_tuple(plan: Plan) -> tuple:
    """The plan's node arrays in the order ``compiled.run_nodes`` unpacks them."""
    return (plan.op, plan.in0, plan.in1, plan.suffix, plan.related, plan.attr, plan.kind, plan.kp, plan.kp_attr,
            plan.rp, plan.sp, plan.ctid, plan.nnodes, nvals(), plan.keys, plan.ct_base, plan.ct_related,
            plan.ct_allowed, plan.ct_nallowed)


@dataclass
class Book:
    """CLEVR's use counts and answer histograms per template, carried across blocks."""

    T: int
    use: np.ndarray = field(init=False)
    hist: np.ndarray = field(init=False)
    fresh: bool = True  # the run's first block resets them

    def __post_init__(self):
        self.use = np.zeros(self.T, np.int64)
        self.hist = np.zeros((self.T, 11), np.int64)


def accept_block(plan: Plan, batch: StaticBatch, pos: np.ndarray, book: Book, opt) -> tuple:
    """The block's accepted questions (scene row, template, draw, answer code, params int64[Q, P]),
    exactly as ``generate.choose_block`` accepts them."""
    from tensorqa.clevr.compiled import generate_block

    sem = opt.semantics
    flags = np.array([sem.out_neq_compares_counts, sem.neq_inverted, sem.empty_keys_may_match], np.bool_)
    attrs, maskbits, relbits, attrbits, keybits, nobj = scene_bits(batch)
    out = generate_block(plan_tuple(plan), plan.cons, plan.ncons, plan.nparams, plan.nbins, flags, attrs, maskbits,
                         relbits, attrbits, keybits, nobj, np.ascontiguousarray(pos, dtype=np.int64), opt.seed,
                         opt.instances_per_template, opt.templates_per_image, opt.reset_counts_every, opt.draws,
                         opt.valid_draws, ROUNDS, book.use, book.hist, book.fresh)
    book.fresh = False
    return out
