"""Loading untrusted pickles: a restricted unpickler that resolves no global outside an allow-list.

``pickle.load`` runs whatever globals a file names. The annotation pickles tensorqa reads hold plain
data plus numpy arrays and scalars (Action Genome's boxes), so every global but numpy's reconstruction
(:data:`ALLOWED_GLOBALS`) is refused: a crafted file fails before any of its code runs, and
:func:`load_untrusted` reports it as a one-line :class:`TensorQAError`.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import signal
import stat
import warnings
from pathlib import Path

try:
    import resource
except ImportError:  # not a Unix
    resource = None

from tensorqa import limits
from tensorqa.errors import TensorQAError

# (module, name) pairs a file may reference: numpy's array / dtype / scalar reconstruction, under
# numpy 1's and numpy 2's module names. They build arrays from bytes and call nothing else.
ALLOWED_GLOBALS = frozenset({
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
})


class RestrictedUnpickler(pickle.Unpickler):
    """A :class:`pickle.Unpickler` whose ``find_class`` resolves only :data:`ALLOWED_GLOBALS`."""

    def find_class(self, module: str, name: str):
        if (module, name) in ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refused global {module}.{name} (annotation pickles hold only plain "
                                     "data and numpy arrays; nothing else is loaded)")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refused persistent id (not plain data)")


def loads_untrusted(data: bytes, encoding: str = "latin1"):
    """:func:`pickle.loads` through :class:`RestrictedUnpickler`."""
    return RestrictedUnpickler(io.BytesIO(data), encoding=encoding).load()


def load_untrusted(path: str | os.PathLike, what: str, encoding: str = "latin1"):
    """Unpickle ``path`` with :class:`RestrictedUnpickler`; any failure is a one-line TensorQAError
    (``encoding="latin1"`` lets Python 2 pickles holding numpy arrays load)."""
    try:
        with open(path, "rb") as handle:
            return RestrictedUnpickler(handle, encoding=encoding).load()
    except OSError as e:
        raise TensorQAError(f"{path}: cannot open {what} ({e.strerror or e})") from None
    except pickle.UnpicklingError as e:
        if "refused" in str(e):
            raise TensorQAError(f"{path}: unsafe {what} pickle: {e}") from None
        raise TensorQAError(f"{path}: not a readable {what} pickle (UnpicklingError: {e})") from None
    except RecursionError:
        raise TensorQAError(f"{path}: {what} pickle nests too deeply to read") from None
    except Exception as e:  # EOFError, ValueError, TypeError, ... from a bad file
        first = str(e).splitlines()[0] if str(e) else ""
        raise TensorQAError(f"{path}: not a readable {what} pickle ({type(e).__name__}: {first})") from None


# -- work and memory -----------------------------------------------------------------------------------
_IN_CHILD = False  # set in a bounded child: a loader called from another runs in place
_INTERRUPTED = 130  # the child's exit status after SIGINT


def load_bounded(paths, what: str, load, *args, **kwargs):
    """``load(*args, **kwargs)`` (unpickling ``paths``) in a forked child whose CPU time and address
    space are bounded by the files' size (:data:`tensorqa.limits.PICKLE_CPU_FLOOR`, ...).

    Why: a tuple key shared 2^k times over hangs the C unpickler itself, where no check of ours runs;
    a process limit is the one bound. Past it: a one-line TensorQAError naming the first file.
    Without ``fork`` or ``resource`` (not Linux / macOS), ``load`` runs in place."""
    import pickle as trusted  # the child's own result, written by this code

    paths = [Path(p) for p in paths]
    for p in paths:  # a FIFO or a device would block the child in open()
        try:
            mode = p.stat().st_mode
        except OSError:
            continue  # the loader reports a missing file itself
        if not stat.S_ISREG(mode):
            raise TensorQAError(f"{p}: not a regular file ({what} pickle)")
    if _IN_CHILD or not hasattr(os, "fork") or resource is None:
        return load(*args, **kwargs)
    size = sum(p.stat().st_size for p in paths if p.is_file())
    cpu = limits.PICKLE_CPU_FLOOR + int(size / 2**20 * limits.PICKLE_CPU_PER_MB)
    memory = limits.PICKLE_MEMORY_FLOOR + size * limits.PICKLE_MEMORY_PER_BYTE
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns of fork in a threaded process: the child
        warnings.simplefilter("ignore", DeprecationWarning)  # runs only numpy and this package's loaders
        pid = os.fork()
    if pid == 0:  # the child: never returns
        _child(write_fd, read_fd, cpu, memory, load, args, kwargs)
    os.close(write_fd)
    result, status = None, None
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            try:
                result = trusted.load(pipe)
            except (EOFError, trusted.UnpicklingError, MemoryError):
                result = None  # the child died part-way: its status says why
        _, status = os.waitpid(pid, 0)
    finally:
        if status is None:  # interrupted: leave no child behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    where = paths[0] if len(paths) == 1 else paths[0].parent
    if result is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        kind, value = result
        if kind == "ok":
            return value
        if kind == "memory":
            raise TensorQAError(f"{where}: the {what} pickle needs more memory than its size allows (over "
                                f"{memory / 2**30:.1f} GiB for {size:,} bytes; objects shared many times over?); refused")
        raise value  # the loader's own error (a TensorQAError, or a bug with its traceback text)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == _INTERRUPTED:
        raise KeyboardInterrupt
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
        raise TensorQAError(f"{where}: the {what} pickle takes more work to load than its size allows (over {cpu:,} s "
                            f"of CPU for {size:,} bytes; objects shared many times over?); refused")
    code = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"status {os.WEXITSTATUS(status)}"
    raise TensorQAError(f"{where}: loading the {what} pickle stopped ({code}; out of memory?)")


def _child(write_fd: int, read_fd: int, cpu: int, memory: int, load, args, kwargs) -> None:
    """Run ``load`` under the limits and pickle ("ok", result) or ("error" | "memory", ...) into the
    pipe; exit without running the parent's atexit handlers or flushing its buffers."""
    global _IN_CHILD
    import pickle as trusted
    import traceback

    code = 0
    try:
        _IN_CHILD = True
        os.close(read_fd)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU dumps core by default
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        mapped = _address_space()
        if mapped:  # address space: on top of what the process maps now
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_AS, (mapped + memory, resource.RLIM_INFINITY))
        try:
            result = ("ok", load(*args, **kwargs))
        except KeyboardInterrupt:  # the parent, in the same process group, has it too
            code = _INTERRUPTED
            return
        except MemoryError:
            result = ("memory", None)
        except TensorQAError as e:
            result = ("error", e)
        except BaseException as e:  # a bug: its traceback text travels (the object may not pickle)
            result = ("error", RuntimeError(f"in the pickle loader's child process:\n{traceback.format_exc()}"))
            del e
        with os.fdopen(write_fd, "wb") as pipe:
            trusted.dump(result, pipe, protocol=trusted.HIGHEST_PROTOCOL)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _address_space() -> int:
    """Bytes of address space this process maps (``VmSize``); 0 where /proc is missing."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
