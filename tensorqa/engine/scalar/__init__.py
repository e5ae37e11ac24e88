"""The scalar twins: each vectorized primitive's one-video reference, registered under the
primitive's name (backend ``scalar``), one module per family (``localize``, ``filter``,
``first_last``, ``duration``, ``order``, ``query``, ``static``); ``video`` holds one video's
tables. A benchmark's executor walks its programs and calls them (AGQA's: ``agqa/executor.py``)."""

from tensorqa.engine.primitives import registry
from tensorqa.engine.scalar import duration, filter, first_last, localize, order, query, static  # noqa: F401  (register the twins)
from tensorqa.engine.scalar.video import Undefined

twin = registry.scalar

__all__ = ["Undefined", "twin"]
