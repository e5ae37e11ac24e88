"""CLEVR's sizes and the engine's limits, each stated once (docs/reference/clevr.md)."""

from __future__ import annotations

import math

from tensorqa.scenes.static_batch import ATTRS, clevr_vocab

# filter keys: each attribute (size, color, material, shape) given or unspecified, size slowest:
# key = ((size' * 9 + color') * 3 + material') * 4 + shape' (x' = value + 1, 0 unspecified)
KEY_RADIX = tuple(len(clevr_vocab().values(a)) + 1 for a in ATTRS)  # (3, 9, 3, 4)
NUM_KEYS = math.prod(KEY_RADIX)
# CLEVR's Integer histogram has keys 0 .. 10 (defect 10: a larger count raises there)
MAX_COUNT = 10
MAX_BINS = MAX_COUNT + 1  # an answer histogram's bins for a count
# the numba engine holds an object set in one int64 word (CLEVR's scenes: 3 to 10 objects)
MAX_OBJECTS = 62
# grid draws per round (torch_backend.TemplateRows.fill and the numba engine), up to --draws
ROUNDS = (4, 4, 8, 16, 32)
