"""Vectorized program primitives over ``SceneBatch`` tensors (docs/architecture.md, "Design").

One module per family; every primitive registers itself in :mod:`.registry` under its name (and
the AGQA function names it implements), so a grid plan can swap or ablate it by name:

* :mod:`.localize`    localization windows (compact per-video window axis, or flat rows) and compare
                      windows
* :mod:`.scans`       frame scans (next / previous keyframe where x holds, prefix counts) read at
                      window edges
* :mod:`.filter`      what is present in each window: relate, relations / objects / actions present,
                      contacted (the three §c.1 interaction rules)
* :mod:`.exists`      exists, has_item
* :mod:`.count`       count
* :mod:`.first_last`  objFirst / objLast episodes, the Choose rule, actFirst / actLast / actWhat
* :mod:`.duration`    longest / shortest instance, length compare
* :mod:`.order`       actTime order, relTime / objTime side of an action
* :mod:`.query`       only_item, choose, equals, and, xor

All of them are device-agnostic torch code without Python loops over videos, frames, slots or
questions; shapes and dtypes are in each docstring; semantics switches are passed explicitly.
"""

from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.count import count
from tensorqa.engine.primitives.duration import instance_lengths, length_compare, superlative
from tensorqa.engine.primitives.exists import exists, has_item
from tensorqa.engine.primitives.filter import actions_in, contacted, objects_present, present_objects, present_relations, relate, \
    relations_present, window_any
from tensorqa.engine.primitives.first_last import act_first, act_last, act_what, choose_episode, first_episode, last_episode
from tensorqa.engine.primitives.localize import CompareWindows, Windows, compare_windows, localize, present_actions
from tensorqa.engine.primitives.order import act_order, side_of
from tensorqa.engine.primitives.query import and_, choose, equals, only_item, xor
from tensorqa.engine.primitives.registry import ablate, lookup, override, use

__all__ = [
    "registry", "lookup", "use", "override", "ablate",
    "Windows", "CompareWindows", "localize", "compare_windows", "present_actions",
    "window_any", "relate", "relations_present", "objects_present", "contacted", "actions_in",
    "present_objects", "present_relations",
    "exists", "has_item", "count",
    "first_episode", "last_episode", "choose_episode", "act_first", "act_last", "act_what",
    "superlative", "length_compare", "instance_lengths",
    "act_order", "side_of",
    "only_item", "choose", "equals", "and_", "xor",
]

# The Triton kernels (tensorqa.kernels) register themselves as the "kernel" backend of the
# primitives they accelerate. They import without Triton; the guard keeps the torch primitives
# usable should that package be left out of an install.
try:
    from tensorqa import kernels as _kernels  # noqa: E402,F401
except ImportError:  # pragma: no cover
    pass
