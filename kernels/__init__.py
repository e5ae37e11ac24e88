"""Triton kernels for the hot primitives (docs/architecture.md, "Design"), each the "kernel" backend of the
registry entry it accelerates and named after it:

* :mod:`.filter`      ``relate``, ``relations_present``, ``objects_present``, ``contacted``,
                      ``actions_in``: one window_any kernel over packed keyframe words
* :mod:`.first_last`  ``first_episode``, ``last_episode``, ``choose_episode``: frame scans as
                      lowest / highest set bit, the Choose pairs in the same pass
* :mod:`.order`       ``side_of``: before / during / after an anchor as three word masks
* :mod:`.bits`        packing keyframe masks into int64 words, and the bit device functions

Every kernel has exactly its torch twin's signature and results, and calls the twin where it
cannot run (no Triton, kernels disabled, CPU tensors outside Triton's interpreter, sizes with
nothing to compute). Triton is optional: this package imports without it.

Choosing the backend (``--kernels on|off|auto``)::

    from tensorqa import kernels
    kernels.configure("auto", device)   # registry backend "kernel" on CUDA with Triton, else "torch";
                                        # the kernels that measured slower than torch stay on torch
"""

from __future__ import annotations

import torch

from tensorqa.errors import TensorQAError
from tensorqa.engine.primitives import registry
from tensorqa.kernels import bits, filter, first_last, order, runtime  # noqa: F401 - importing registers the kernels
from tensorqa.kernels.runtime import auto_backend, available, enabled, interpreting, launchable, set_enabled

MODES = ("on", "off", "auto")

# Primitives whose kernel lost to its torch twin on the GPU, which "auto" therefore leaves on torch
# ("on" still runs every kernel); the timings: benchmarks/RESULTS.md, "Kernels that stay on torch".
AUTO_TORCH = {
    "relate": "slower than torch's batched matmul over the frames on the H200",
    "actions_in": "slower than torch on the H200",
}

__all__ = ["MODES", "AUTO_TORCH", "available", "enabled", "set_enabled", "interpreting", "launchable", "auto_backend",
           "backend_for", "configure", "kernel_primitives"]


def kernel_primitives() -> list[str]:
    """Names of the registry primitives that have a kernel implementation."""
    return [n for n in registry.names() if "kernel" in registry.implementations(n)]


def backend_for(mode: str, device: str | torch.device) -> str:
    """The registry backend for ``--kernels mode`` on ``device``: "on" -> "kernel" (Triton must be
    importable; on a CPU device the kernels still call their torch twins unless
    ``TRITON_INTERPRET=1``), "off" -> "torch", "auto" -> :func:`auto_backend`."""
    if mode not in MODES:
        raise TensorQAError(f"--kernels: expected one of {', '.join(MODES)}, not {mode!r}")
    if mode == "on":
        if not available():
            raise TensorQAError("--kernels on: Triton is not installed (pip install 'tensorqa[kernels]')")
        return "kernel"
    if mode == "off":
        return "torch"
    return auto_backend(device)


def configure(mode: str, device: str | torch.device):
    """Apply ``--kernels mode`` for ``device``: allow kernel launches unless "off", and switch the
    primitive registry to :func:`backend_for`'s backend ("auto" keeps :data:`AUTO_TORCH` on
    torch). Returns a handle whose ``undo()`` (or ``with`` exit) restores both."""
    backend = backend_for(mode, device)
    was_enabled = enabled()
    set_enabled(mode != "off")
    restore_backend = registry.use(backend, torch_only=tuple(AUTO_TORCH) if mode == "auto" else ())

    def undo() -> None:
        restore_backend.undo()
        set_enabled(was_enabled)

    return registry._Undo(undo)
