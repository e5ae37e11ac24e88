"""When kernels run, and how their Triton functions are compiled.

A kernel launches when kernels are enabled (:func:`set_enabled`; ``--kernels off`` disables
them), Triton is importable (:func:`available`) and its tensors are on CUDA, or on the CPU under
Triton's interpreter (``TRITON_INTERPRET=1``: how the tests run every kernel without a GPU).
Otherwise each kernel wrapper calls its torch twin. Triton is optional: nothing imports it until
a kernel is about to launch.

``triton.jit`` decides between compiler and interpreter at the moment it wraps a function, from
``TRITON_INTERPRET``. Kernel modules are imported with ``tensorqa`` itself, usually before a test
sets that variable, so their kernels and device functions are plain functions marked with
:func:`jit` and wrapped at the first launch (:func:`bind`), and again whenever the mode has
changed since: every marked name in every kernel module is rebound to its wrapped form for the
current mode, and ``tl`` to ``triton.language``.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Callable

import torch

# Elements per program tile (block sizes are chosen to fill it). Triton's interpreter runs one
# program after another in numpy, so there fewer, larger tiles are much faster.
TILE_ELEMENTS = 4096
INTERPRETER_TILE_ELEMENTS = 1 << 16

_state = {"enabled": True, "mode": None}  # mode: interpreting at the last bind (None: not bound)
_plain: dict[str, list[Callable]] = {}  # module name -> the plain functions it marked with @jit
_wrapped: dict[tuple[int, bool], object] = {}  # (id of plain fn, interpreting) -> triton.jit(fn)
_origin: dict[int, Callable] = {}  # id of a wrapped fn -> its plain fn


@functools.cache
def available() -> bool:
    """Triton can be imported (imports it: call only where kernels may run)."""
    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except Exception:  # noqa: BLE001 - ImportError, or a broken install (missing compiler pieces)
        return False
    return True


def enabled() -> bool:
    """Kernels may launch (``set_enabled(False)``, i.e. ``--kernels off``, forbids it)."""
    return _state["enabled"]


def set_enabled(flag: bool) -> None:
    """Allow (True, the default) or forbid kernel launches; forbidden, every kernel wrapper calls
    its torch twin and :func:`auto_backend` answers "torch"."""
    _state["enabled"] = bool(flag)


def interpreting() -> bool:
    """Triton's interpreter is on (``TRITON_INTERPRET=1``): kernels run on CPU tensors too. Read
    from the environment as Triton reads it, at each call, without importing Triton."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on", "yes")


def tile_elements() -> int:
    """Elements a kernel's program tile may hold on the current backend."""
    return INTERPRETER_TILE_ELEMENTS if interpreting() else TILE_ELEMENTS


def row_elements(cap: int) -> int:
    """Elements along a tile's innermost (contiguous) axis: ``cap`` for the GPU (wide enough for
    coalesced loads, narrow enough to leave rows for the others), the whole tile when
    interpreting."""
    return INTERPRETER_TILE_ELEMENTS if interpreting() else cap


def next_pow2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1): Triton block sizes are powers of two."""
    return 1 << max(0, (n - 1).bit_length())


def block(n: int, cap: int) -> int:
    """Block size for an axis of n elements that a loop of programs covers: the power of two
    holding all n, but at most the largest power of two <= cap (and at least 1)."""
    return max(1, min(next_pow2(n), 1 << max(0, cap.bit_length() - 1)))


def launchable(*tensors: torch.Tensor) -> bool:
    """A kernel may run on ``tensors``: all on one CUDA device, or on the CPU under the
    interpreter; kernels enabled; Triton importable."""
    devices = {t.device for t in tensors}
    if len(devices) != 1:
        return False  # the torch twin reports the device mismatch
    kind = next(iter(devices)).type
    if not (kind == "cuda" or (kind == "cpu" and interpreting())):
        return False
    return enabled() and available()


def jit(fn: Callable) -> Callable:
    """Mark ``fn`` (a Triton kernel or device function) for wrapping with ``triton.jit`` at first
    launch. Returns ``fn`` unchanged, so modules import without Triton."""
    _plain.setdefault(fn.__module__, []).append(fn)
    _state["mode"] = None  # a function marked after a bind gets bound at the next launch
    return fn


def bind() -> None:
    """Rebind every marked name of every kernel module to ``triton.jit`` of its plain function for
    the current mode (compiler or interpreter), and ``tl`` to ``triton.language``; a no-op when
    nothing changed. Names a module imported from another kernel module (shared device
    functions) are rebound too. Kernel bodies use only Triton builtins (no jitted library
    functions such as ``tl.sum``, which stay bound to the mode Triton was imported in), so the
    mode can change within a process."""
    mode = interpreting()
    if _state["mode"] == mode:
        return
    import triton
    import triton.language as tl
    marked = {id(fn): fn for fns in _plain.values() for fn in fns}
    for module in list(_plain):
        namespace = sys.modules[module].__dict__
        namespace["tl"] = tl
        for name, value in list(namespace.items()):
            fn = marked.get(id(value)) or _origin.get(id(value))
            if fn is None:
                continue
            key = (id(fn), mode)
            if key not in _wrapped:
                _wrapped[key] = triton.jit(fn)
                _origin[id(_wrapped[key])] = fn
            namespace[name] = _wrapped[key]
    _state["mode"] = mode


def auto_backend(device: str | torch.device) -> str:
    """The registry backend ``--kernels auto`` picks for ``device``: "kernel" on CUDA when Triton
    is importable and kernels are enabled, else "torch"."""
    kind = torch.device(device).type
    return "kernel" if kind == "cuda" and enabled() and available() else "torch"
