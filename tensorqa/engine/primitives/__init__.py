"""Vectorized program primitives over ``SceneBatch`` tensors, one module per family (localize,
scans, filter, first_last, duration, order, query, static), each registered in
:mod:`.registry` under its name. Device-agnostic torch without Python loops over videos, frames,
slots or questions; shapes and dtypes in each docstring; semantics switches passed explicitly.
"""

from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.duration import instance_lengths, length_compare, superlative
from tensorqa.engine.primitives.filter import actions_in, contacted, objects_present, present_objects, \
    present_relations, relate, relations_present, window_any
from tensorqa.engine.primitives.first_last import act_first, act_last, act_what, choose_episode, first_episode, \
    last_episode
from tensorqa.engine.primitives.localize import CompareWindows, Windows, compare_windows, localize, present_actions
from tensorqa.engine.primitives.order import act_order, side_of
from tensorqa.engine.primitives.query import and_, choose, count, equals, exists, has_item, only_item, xor
from tensorqa.engine.primitives.registry import ablate, lookup, override, use

__all__ = [
    "registry", "lookup", "use", "override", "ablate", "Windows", "CompareWindows", "localize", "compare_windows",
    "present_actions", "window_any", "relate", "relations_present", "objects_present", "contacted", "actions_in",
    "present_objects", "present_relations", "exists", "has_item", "count", "first_episode", "last_episode",
    "choose_episode", "act_first", "act_last", "act_what", "superlative", "length_compare", "instance_lengths",
    "act_order", "side_of", "only_item", "choose", "equals", "and_", "xor",
]

# The Triton kernels (tensorqa.kernels) register themselves as the "kernel" backend of the primitives they
# accelerate; the guard keeps the torch primitives usable should that package be left out of an install.
try:
    from tensorqa import kernels as _kernels  # noqa: E402,F401
except ImportError:  # pragma: no cover
    pass
