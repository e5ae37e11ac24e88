"""What the ``tensorqa`` command does to its own process before a command runs, never at ``import
tensorqa``: :func:`configure_process` (allocator options that must precede pyarrow's loading) and
:func:`arrow_without_pandas` (pyarrow would import pandas on its first array, only to recognize
pandas inputs; tensorqa passes none).
"""

from __future__ import annotations

import sys

from tensorqa.memory import keep_arrows_freed_memory


def configure_process() -> None:
    """The command line's process set-up, before pyarrow is imported: Arrow's allocator keeps freed
    pages (:func:`.memory.keep_arrows_freed_memory`, inherited by spawned processes)."""
    keep_arrows_freed_memory()


class _NoPandas:
    """A meta path finder that refuses ``import pandas`` (pyarrow's probe then finds none)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            raise ImportError("pandas: not loaded for pyarrow's first probe (tensorqa.startup)")
        return None


def arrow_without_pandas() -> bool:
    """Load pyarrow with its first pandas probe finding none (``to_pandas`` still imports it when
    called); a no-op where pandas or pyarrow is loaded. Returns whether it made the probe."""
    if "pandas" in sys.modules or "pyarrow" in sys.modules:
        return False
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        import pyarrow as pa

        pa.array([0])  # the probe: pyarrow asks for pandas once, then remembers it has none
    finally:
        sys.meta_path.remove(finder)
    return True
