"""CLEVR's generator rules as masks over a template's grid rows: constraints (NULL is applied
while drawing; NEQ, OUT_NEQ here), the degeneracy test, and the answers' encoding."""

from __future__ import annotations

import torch

from tensorqa.clevr.grid import Run, run_template
from tensorqa.clevr.scene_block import Block
from tensorqa.clevr.constants import MAX_COUNT
from tensorqa.clevr.templates import Template


def _differ(a: tuple, b: tuple) -> torch.Tensor:
    if a[1].dim() == 2:
        return (a[1] != b[1]).any(-1)
    return a[1] != b[1]


def constraints_mask(t: Template, run: Run, sem) -> torch.Tensor:
    """bool[P]: the rows that satisfy every NEQ / OUT_NEQ constraint."""
    ok = torch.ones_like(run.ok)
    for c in t.constraints:
        if c["type"] == "OUT_NEQ":
            i, j = c["params"]
            a, b = run.outs[i], run.outs[j]
            if a[0] == b[0] == "int" and not sem.out_neq_compares_counts and i in run.pre and j in run.pre:
                a, b = ("set", run.pre[i]), ("set", run.pre[j])
            ok &= _differ(a, b)
        elif c["type"] == "NEQ":
            p1, p2 = c["params"]
            v1, v2 = run.params[p1], run.params[p2]
            both = (v1 >= 0) & (v2 >= 0)
            ok &= ~both | ((v1 == v2) if sem.neq_inverted else (v1 != v2))
    return ok


def answer_codes(run: Run) -> torch.Tensor:
    """int64[P]: the final output as a bin of :func:`answer_domain` (bool 0/1, count, class id)."""
    return run.outs[-1][1].long()


def degenerate_mask(t: Template, tid: int, blk: Block, run: Run, sem) -> torch.Tensor:
    """bool[P]: rows where replacing some raw ``relate`` node with ``scene`` keeps the answer
    (CLEVR's is_degenerate); such questions are rejected."""
    deg = torch.zeros_like(run.ok)
    ans = answer_codes(run)
    for k, node in enumerate(t.nodes):
        if node["type"] != "relate":
            continue
        again = run_template(t, tid, blk, sem, params=run.params, replace={k: blk.mask.clone()})
        deg |= again.ok & (answer_codes(again) == ans)
    return deg


def valid_rows(t: Template, tid: int, blk: Block, run: Run, sem) -> torch.Tensor:
    """bool[P]: complete, constraint-satisfying, non-degenerate rows with an answer in the domain."""
    ok = run.ok & constraints_mask(t, run, sem)
    ans = answer_codes(run)
    ok &= (ans >= 0) & (ans <= MAX_COUNT)
    return ok & ~degenerate_mask(t, tid, blk, run, sem)
