"""The switches of ``balance`` (:class:`BalanceConfig`), checked when built, and its presets."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Mapping

from tensorqa.agqa.balancing.scan import BATCH_ROWS
from tensorqa.agqa.balancing.smoothing import SmoothingRule
from tensorqa.agqa.balancing.structural import STRUCTURE_SHARES
from tensorqa.agqa.templates.catalogue import STRUCTURALS
from tensorqa.errors import TensorQAError

OPEN_MODES = ("smooth", "uniform", "none")


@dataclass(frozen=True)
class BalanceConfig:
    """Every switch of the balancing pass; the defaults are AGQA's (the ``agqa`` preset)."""

    seed: int = 0
    temporal_labels: bool = True          # step 1: label order for removals (False: random only)
    binary: bool = True                   # step 2
    open_family: str = "smooth"           # step 3, per family: smooth (AGQA) / uniform / none
    open_local: str = "smooth"            # step 4, per (family, local): smooth / uniform (agqa2) / none
    smoothing: SmoothingRule = SmoothingRule()
    structural: bool = True               # step 5
    structure_shares: Mapping[str, float] = field(default_factory=lambda: dict(STRUCTURE_SHARES))
    max_steps: int | None = None          # drop questions with more steps first (agqa2: 8)
    shard_rows: int = 2_000_000           # output: at most this many rows per split per shard
    batch_rows: int = BATCH_ROWS          # rows per read batch (memory only; results do not depend on it)

    def __post_init__(self):
        for name in ("open_family", "open_local"):
            if getattr(self, name) not in OPEN_MODES:
                raise TensorQAError(f"{name} {getattr(self, name)!r}: expected one of {list(OPEN_MODES)}")
        shares = dict(self.structure_shares)
        unknown = sorted(set(shares) - set(STRUCTURALS))
        if unknown:
            raise TensorQAError(f"structure shares: unknown structure(s) {unknown}; expected {list(STRUCTURALS)}")
        if shares.get("query", 0) <= 0:
            raise TensorQAError("structure shares: query needs a positive share (it fixes the total)")
        if any(not math.isfinite(v) or v < 0 for v in shares.values()) or sum(shares.values()) > 1 + 1e-9:
            raise TensorQAError(f"structure shares {shares}: must be >= 0 and sum to at most 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise TensorQAError(f"max_steps must be at least 1, got {self.max_steps}")
        if self.smoothing.ratio_decay >= 1 or self.smoothing.ratio_decay <= 0:
            raise TensorQAError(f"ratio_decay must be in (0, 1), got {self.smoothing.ratio_decay}")
        rule = self.smoothing
        if not rule.ratio_bound >= 1:  # also refuses NaN
            raise TensorQAError(f"ratio_bound must be at least 1 (a ratio of answer counts), got {rule.ratio_bound}")
        if not math.isfinite(rule.ratio_bound):  # smoothing lowers the bound towards 1: from inf it never gets there
            raise TensorQAError(f"ratio_bound must be a finite number, got {rule.ratio_bound}")
        for name in ("tail_fraction", "min_keep_fraction", "top_fraction", "top_share"):
            if not 0 <= getattr(rule, name) <= 1:
                raise TensorQAError(f"{name} must be in [0, 1], got {getattr(rule, name)}")
        for name in ("shard_rows", "batch_rows"):
            if getattr(self, name) < 1:
                raise TensorQAError(f"{name} must be at least 1, got {getattr(self, name)}")

    def as_dict(self) -> dict:
        d = asdict(self)
        d["structure_shares"] = dict(self.structure_shares)
        d.pop("batch_rows")
        return d


PRESETS: dict[str, BalanceConfig] = {
    "agqa": BalanceConfig(),
    "agqa2": BalanceConfig(open_local="uniform", max_steps=8),
}


def balance_config(preset: str = "agqa", **overrides) -> BalanceConfig:
    """A preset's config with some fields replaced (``smoothing`` fields may be given by name)."""
    if preset not in PRESETS:
        raise TensorQAError(f"unknown balance preset {preset!r}; expected one of {list(PRESETS)}")
    base = PRESETS[preset]
    rule_fields = set(SmoothingRule.__dataclass_fields__)
    rule = {k: overrides.pop(k) for k in list(overrides) if k in rule_fields}
    if rule:
        overrides["smoothing"] = replace(base.smoothing, **rule)
    unknown = sorted(set(overrides) - set(BalanceConfig.__dataclass_fields__))
    if unknown:
        raise TensorQAError(f"unknown balance option(s) {unknown}")
    return replace(base, **overrides)
