"""What the ``tensorqa`` command does to its own process before a command runs, never at ``import
tensorqa``: :func:`configure_process` (allocator options that must precede pyarrow's loading) and
:func:`arrow_without_pandas` (pyarrow would import pandas on its first array, only to recognize
pandas inputs; tensorqa passes none).
"""

from __future__ import annotations

import sys

from tensorqa.memory import keep_arrows_freed_memory


def configure_process() -> None:
    """The process-wide set-up of the command line: Arrow's allocator keeps freed pages
    (:func:`.memory.keep_arrows_freed_memory`; processes spawned later inherit it through the
    environment). Call it before pyarrow is imported. glibc's set-up
    (:func:`.memory.keep_freed_memory`) is made by the generation functions themselves."""
    keep_arrows_freed_memory()


class _NoPandas:
    """A meta path finder that refuses ``import pandas`` (pyarrow's probe then finds none)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            raise ImportError("pandas: not loaded for pyarrow's first probe (tensorqa.startup)")
        return None


def arrow_without_pandas() -> bool:
    """Load pyarrow and let its first pandas probe find none, so that building arrays does not
    import pandas. pyarrow then takes no input for a pandas object, until an API that needs pandas
    (``to_pandas``, ``from_pandas``) imports it, which still works. No-op where pandas or
    pyarrow is already loaded (pyarrow may have probed: a test session, a notebook); returns
    whether it made the probe."""
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
