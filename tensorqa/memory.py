"""Keep freed memory in the process: generation allocates and frees the same large buffers every
block, and memory handed back to the kernel is zeroed again on its next first touch.

Arrow's allocator (mimalloc) reads ``MIMALLOC_PURGE_DELAY`` once, when pyarrow loads:
:func:`keep_arrows_freed_memory` sets it to -1 unless the environment says otherwise or pyarrow is
loaded; glibc's (torch, numpy): :func:`keep_freed_memory`, called by ``generate``. Importing
:mod:`tensorqa` does neither (the CLI calls :func:`tensorqa.startup.configure_process`).
"""

from __future__ import annotations

import ctypes
import os
import sys


def keep_arrows_freed_memory() -> bool:
    """Set ``MIMALLOC_PURGE_DELAY=-1`` (inherited by spawned processes) unless the environment has a
    value; returns whether it can still take effect (not once pyarrow is loaded)."""
    if "pyarrow" in sys.modules:
        return False
    os.environ.setdefault("MIMALLOC_PURGE_DELAY", "-1")
    return True


def keep_freed_memory() -> None:
    """Ask glibc to keep freed memory: grid evaluation frees and reallocates the same large tensors
    every block, which its defaults hand back and fault in again. No-op without glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: trim only above 1 GiB of free heap
        libc.mallopt(-2, 1 << 28)  # M_TOP_PAD: grow the heap in 256 MiB steps
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: heap, not mmap, up to 32 MiB
    except (OSError, AttributeError):
        pass
