"""A CLEVR run's options (the CLI's flags, checked once) and CLEVR's answer-count rejection: what
both backends read (``torch_backend`` through ``rejected``; ``compiled`` compiles ``rejects``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensorqa.clevr.semantics import CLEVR, ClevrSemantics
from tensorqa.errors import TensorQAError

# the most each count option may be: far past any use, and refused before anything is allocated
# (memory grows with the draws and the questions kept per scene and template)
OPTION_LIMITS = {"instances_per_template": 1_000, "templates_per_image": 10_000, "reset_counts_every": 10**9,
                 "draws": 4_096, "valid_draws": 4_096, "batch_scenes": 1_000_000}


@dataclass
class Options:
    instances_per_template: int = 1
    templates_per_image: int = 10
    reset_counts_every: int = 250
    draws: int = 16  # the most grid draws per scene and template (in ROUNDS, see torch_backend.TemplateRows.fill)
    valid_draws: int = 2  # a scene gets another round of draws while it has fewer valid ones
    batch_scenes: int = 1000
    seed: int = 0
    semantics: ClevrSemantics = CLEVR
    device: str = "cpu"  # where the grid runs; the output does not depend on it
    # compiled: the numba twin of the grid, the rules and the record writer (CPU); torch: the grid
    # (any device; the oracle); auto: compiled on the CPU, torch elsewhere. Same output.
    engine: str = "auto"
    threads: int | None = None  # torch's CPU threads where the torch backend runs (--threads; None: the default)

    def __post_init__(self):
        if self.engine not in ("auto", "compiled", "torch"):
            raise TensorQAError(f"--engine: {self.engine!r} is not auto, compiled or torch")
        if self.engine == "compiled" and str(self.device) != "cpu":
            raise TensorQAError(f"--engine compiled runs on the CPU, not on {self.device!r} (use --engine torch)")
        for name, most in OPTION_LIMITS.items():
            if not 1 <= getattr(self, name) <= most:
                flag = "batch-videos" if name == "batch_scenes" else name.replace("_", "-")
                raise TensorQAError(f"--{flag}: must be in 1..{most:,}, not {getattr(self, name):,}")


def rejects(c, runner_up, median):
    """CLEVR's answer-count rejection of an answer counted ``c`` times so far, given the template's
    counts sorted: c > 1.1 x the runner-up count, or c > 5 x max(median, 5). Plain arithmetic, so
    that the numba backend compiles this very function."""
    return c > 1.1 * runner_up or c > 5 * max(median, 5)


def rejected(hist: np.ndarray, a: int) -> bool:
    """:func:`rejects` for answer ``a`` of the histogram ``hist``."""
    s = sorted(hist)
    return bool(rejects(hist[a], s[-2], s[len(s) // 2]))
