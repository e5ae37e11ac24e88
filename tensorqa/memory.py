"""Keep freed memory in the process: generation allocates and frees the same large buffers for
every block of videos, and memory handed back to the kernel is zeroed again on its next first
touch. On the 2-core VM that first touch is the costliest thing a run does when it lands on
transparent huge pages (2 MiB zeroed per fault, at times ~10 ms each).

Two allocators hold the buffers:

* Arrow's: text columns and Parquet pages. :func:`keep_freed_memory` makes it jemalloc where the
  pyarrow build has it (the Linux wheels do), configured never to purge freed pages
  (``JE_ARROW_MALLOC_CONF``); otherwise mimalloc, the wheels' default, with
  ``MIMALLOC_PURGE_DELAY=-1``. Both allocators read their options once, when pyarrow loads its
  library, so importing :mod:`tensorqa` sets them unless the environment already does or pyarrow
  was imported first. mimalloc, even when it keeps its pages, faults its arenas in as huge pages:
  320 default videos, one process, took 33-39 s (16 s of it in the kernel) with mimalloc and
  16-17 s (1.3-1.7 s in the kernel) with jemalloc, for 0.2 GB less peak memory
  (benchmarks/RESULTS.md, session 7). A user's ``ARROW_DEFAULT_MEMORY_POOL`` wins.
* glibc's (torch tensors, numpy arrays): :func:`keep_freed_memory` sets its trim and mmap
  thresholds.
"""

from __future__ import annotations

import ctypes
import os
import sys

if "pyarrow" not in sys.modules:
    os.environ.setdefault("MIMALLOC_PURGE_DELAY", "-1")
    os.environ.setdefault("JE_ARROW_MALLOC_CONF", "dirty_decay_ms:-1,muzzy_decay_ms:-1")


def keep_freed_memory() -> None:
    """Make freed memory stay in the process for the next block: Arrow allocates from jemalloc
    where available (unless ``ARROW_DEFAULT_MEMORY_POOL`` names a pool), and glibc keeps its freed
    heap instead of returning it to the kernel after every block (grid evaluation allocates and
    frees the same large tensors for every block). Process-wide; idempotent."""
    import pyarrow as pa

    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ and pa.default_memory_pool().backend_name != "jemalloc":
        try:
            pa.set_memory_pool(pa.jemalloc_memory_pool())
        except NotImplementedError:  # a pyarrow build without jemalloc: mimalloc, no purging
            pass
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: trim only above 1 GiB of free heap
        libc.mallopt(-2, 1 << 28)  # M_TOP_PAD: grow the heap in 256 MiB steps
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: heap, not mmap, up to 32 MiB
    except (OSError, AttributeError):
        pass
