"""A file written front to back through one page-aligned buffer, bypassing the page cache where the OS
and file system allow it (Linux ``O_DIRECT``), for bulk outputs of many gigabytes.

Why: buffered writes copy every byte into fresh page-cache pages that a bulk writer never reads back;
on VMs whose fresh pages fault to the host that copy costs several times the device write. Direct
writes need aligned buffers, sizes and offsets: whole blocks are written until :meth:`DirectFile.close`
pads the last one and cuts the file to size. Where ``O_DIRECT`` is refused (macOS, tmpfs) the same
calls write through the page cache. A writer thread writes one buffer while the caller fills the
other (``os.write`` releases the GIL; the caller's compiled code must too, numba's ``nogil``).
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from tensorqa.outputs import new_file

BLOCK = 4096  # alignment of direct writes: a page, a multiple of every common logical block size


def aligned_buffer(size: int) -> np.ndarray:
    """uint8[size] on fresh anonymous pages (page-aligned)."""
    return np.frombuffer(mmap.mmap(-1, max(size, BLOCK)), np.uint8)[:size]


_KEPT: list[np.ndarray] = []  # buffers of closed files, reused by the next (their pages already touched)
_KEEP = 4


def _buffer(size: int) -> np.ndarray:
    """A page-aligned uint8[size]: a kept buffer of that size, else a fresh one (a fresh page costs a
    fault to the kernel, and to the host on the VMs this project runs on: ~1 ms per MB)."""
    for i, b in enumerate(_KEPT):
        if len(b) == size:
            return _KEPT.pop(i)
    return aligned_buffer(size)


def _keep(*bufs: np.ndarray) -> None:
    for b in bufs:
        if len(_KEPT) < _KEEP and b.base is not None:
            _KEPT.append(b)


def _is_device(path: str) -> bool:
    try:
        return stat.S_ISCHR(os.lstat(path).st_mode)
    except OSError:
        return False


class DirectFile:
    """Sequential writer: fill ``buf[fill:]`` (directly, or with :meth:`put`), then :meth:`flush`
    hands the whole blocks to the writer thread and continues in the other buffer, the rest (less
    than a block) copied to its front; :meth:`close` writes the tail. ``buf`` changes at each
    :meth:`flush` and :meth:`room`: read it afresh. ``background=False`` writes in the caller's thread."""

    def __init__(self, path: str | os.PathLike, size: int = 4 << 20, direct: bool = True, background: bool = True):
        self.path, self.written, self.fill = os.fspath(path), 0, 0
        size = max(BLOCK, size - size % BLOCK)
        self.buf, self._spare = _buffer(size), _buffer(size)
        self._pool = ThreadPoolExecutor(1, "tensorqa-write") if background else None
        self._pending: Future | None = None  # the write of ``_spare``
        self.direct = direct and hasattr(os, "O_DIRECT")
        self.fd = -1
        # a new file (O_EXCL once what was at the path is removed): a planted link is never written
        # through; a character device named by the caller is written as it is (/dev/full in tests)
        if _is_device(self.path):
            self.fd, self.direct = os.open(self.path, os.O_WRONLY), False
        elif self.direct:
            try:
                self.fd = new_file(self.path, os.O_DIRECT)
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
                self.direct = False
        if self.fd < 0:
            self.fd = new_file(self.path)

    def room(self, n: int) -> None:
        """At least ``n`` free bytes after ``fill`` (a larger buffer if needed)."""
        if self.fill + n > len(self.buf):
            need = 2 * (self.fill + n)
            bigger = aligned_buffer(need + (-need) % BLOCK)
            bigger[:self.fill] = self.buf[:self.fill]
            self.buf = bigger

    def put(self, data: bytes) -> None:
        self.room(len(data))
        self.buf[self.fill:self.fill + len(data)] = np.frombuffer(data, np.uint8)
        self.fill += len(data)
        self.flush()

    def flush(self) -> None:
        """Send the buffer's whole blocks to the writer; the rest moves to the front of the other
        buffer, which becomes ``buf`` once its own write is done. A failed write raises here or at
        :meth:`close`."""
        whole = self.fill - self.fill % BLOCK
        if whole:
            self._wait()
            rest = self.fill - whole
            full, self.buf = self.buf, self._spare
            if len(self.buf) < rest:
                self.buf = aligned_buffer(len(full))
            self.buf[:rest] = full[whole:self.fill]
            self._spare, self.fill = full, rest
            if self._pool is None:
                self._write(full, whole)
            else:
                self._pending = self._pool.submit(self._write, full, whole)

    def _wait(self) -> None:
        """Until the last write is done (its error raised here)."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def abort(self) -> None:
        """Close without writing the rest (the caller removes the file)."""
        try:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
        finally:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
                _keep(self.buf, self._spare)

    def close(self) -> None:
        """Write the tail (padded to a block for a direct write, then cut back) and close."""
        try:
            self._wait()
            if self.fill:
                n, pad = self.fill, (-self.fill) % BLOCK if self.direct else 0
                self.room(pad)
                self.buf[n:n + pad] = 0
                self._write(self.buf, n + pad)
                if pad:
                    os.ftruncate(self.fd, self.written - pad)
                self.fill = 0
        finally:
            self.abort()

    def _write(self, buf: np.ndarray, n: int) -> None:
        view, at = memoryview(buf)[:n], 0
        while at < n:
            try:
                at += os.write(self.fd, view[at:])
            except OSError as e:  # a file system that opens with O_DIRECT but refuses its writes
                if not (self.direct and e.errno == errno.EINVAL):
                    raise
                os.close(self.fd)
                self.fd, self.direct = os.open(self.path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0)), False
                os.lseek(self.fd, self.written + at, os.SEEK_SET)
        self.written += n
