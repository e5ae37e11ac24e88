"""What every store reader shares, without torch (CLEVR's numba path reads stores without it):
the header check, h5py's damage as one line, and the reader base that closes the file on failure."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import h5py
import numpy as np

from tensorqa.errors import TensorQAError


# What h5py raises on a damaged object header, an attribute of the wrong type or a truncated dataset,
# once the file has opened: every store reader turns it into one line (corrupt_store)
HEADER_DAMAGE = (KeyError, OSError, ValueError, TypeError, RuntimeError)


def corrupt_store(path: Path, e: Exception) -> TensorQAError:
    """One line for a store h5py could open but not read (its messages run over several lines)."""
    first = (str(e).splitlines() or [""])[0][:120]
    return TensorQAError(f"{path}: corrupt store ({type(e).__name__}: {first})")


def check_header(f: h5py.File, p: Path, fmt: str, what: str, version: int, vocab_hash: str) -> None:
    """The format, version and vocabulary attributes every store carries (``what`` names the kind)."""
    a = f.attrs
    if a.get("format") != fmt:
        raise TensorQAError(f"{p}: not a tensorqa {what} (attribute 'format' is {a.get('format')!r})")
    v = a.get("format_version", -1)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v != version:
        raise TensorQAError(f"{p}: format_version {a.get('format_version')} is not supported (this tensorqa reads {version})")
    if a.get("vocab_hash") != vocab_hash:
        raise TensorQAError(f"{p}: vocabulary mismatch (vocab_hash {a.get('vocab_hash')} in the file, {vocab_hash} "
                            "in this tensorqa); repack it")


class H5Reader:
    """What the two store readers share: ``_f`` the open file, validated by :meth:`_validated`."""

    _f: h5py.File
    path: Path

    def _validated(self, check: Callable[[], None]) -> None:
        """Run ``check``; on failure close the file, h5py's damage reported in one line."""
        try:
            check()
        except TensorQAError:
            self._f.close()
            raise
        except HEADER_DAMAGE as e:
            self._f.close()
            raise corrupt_store(self.path, e) from None

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
