"""Loading untrusted pickles: a restricted unpickler that resolves no global outside an allow-list.

``pickle.load`` runs whatever a file asks for (``os.system``, ``subprocess.Popen``, ...) through
the globals it names. The annotation pickles tensorqa reads (AGQA's ``AGQA_*_stsgs.pkl``, Action
Genome's ``object_bbox_and_relationship.pkl`` and ``person_bbox.pkl``) hold only dicts, lists,
tuples, strings, numbers, booleans and None, plus numpy arrays (and numpy scalars) for Action
Genome's boxes. So every global is refused except numpy's array and scalar reconstruction
(:data:`ALLOWED_GLOBALS`): a crafted file fails with :class:`pickle.UnpicklingError` before any
of its code runs, and :func:`load_untrusted` reports it as a one-line :class:`TensorQAError`.
"""

from __future__ import annotations

import io
import os
import pickle

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
    """Unpickle the file at ``path`` with :class:`RestrictedUnpickler`; any failure (a refused
    global, a truncated or non-pickle file, a missing file) is a one-line TensorQAError naming it.

    ``encoding="latin1"`` lets Python 2 pickles holding numpy arrays load (a no-op for Python 3)."""
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
