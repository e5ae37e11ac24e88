"""Output paths, checked before any work, and an exclusive lock on an output folder.

Every command writes its outputs to ``*.partial`` and renames them into place; a rename replaces
whatever is at the path, a device file included (``--out /dev/full`` as root made it a regular
file). So an output that exists must be what the command writes: a regular file where a file goes
(:func:`check_output_file`), a folder where a folder goes (:func:`check_output_folder`); both are
checked before the command reads its inputs, so a refused path costs nothing.

:func:`output_lock` takes an exclusive ``flock`` on a lock file inside an output folder for the
time a run writes there: a second run into the same folder (and shard) is refused at once rather
than racing the first over its ``.partial`` files or silently replacing its records.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Iterator

from tensorqa.errors import TensorQAError


def _named(path: Path, flag: str | None) -> str:
    return f"{flag} {path}" if flag else str(path)


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a fifo"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _existing_parent(path: Path, flag: str | None) -> None:
    """The nearest existing ancestor of ``path`` must be a folder (a path under a file cannot be made)."""
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise TensorQAError(f"{_named(path, flag)}: {parent} is a file, not a folder")
            return


def check_output_file(path: str | os.PathLike, flag: str | None = "--out", what: str = "the output is a file") -> Path:
    """Refuse an output file path that the command must not replace: an existing folder, device,
    fifo or socket, or a path whose folder does not exist. Returns the path."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise TensorQAError(f"{_named(path, flag)}: {e.strerror}") from None
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise TensorQAError(f"{_named(path, flag)}: is a folder; {what}")
        if not stat.S_ISREG(mode):
            raise TensorQAError(f"{_named(path, flag)}: exists and is {_kind(mode)}; refusing to replace it "
                                "(give the path of a regular file)")
    parent = path.absolute().parent
    if not parent.is_dir():
        _existing_parent(path, flag)
        raise TensorQAError(f"{_named(path, flag)}: its folder does not exist ({parent})")
    return path


def check_output_folder(path: str | os.PathLike, flag: str | None = "--out", what: str = "the output is a folder") -> Path:
    """Refuse an output folder path that exists and is not a folder (a file, a device, ...), or
    lies under a file. Returns the path."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise TensorQAError(f"{_named(path, flag)}: {e.strerror}") from None
    if mode is not None and not stat.S_ISDIR(mode):
        kind = "a file" if stat.S_ISREG(mode) else _kind(mode)
        raise TensorQAError(f"{_named(path, flag)}: is {kind}; {what}")
    if mode is None:
        _existing_parent(path, flag)
    return path


@contextlib.contextmanager
def output_lock(folder: str | os.PathLike, name: str = ".tensorqa.lock", flag: str | None = "--out") -> Iterator[Path]:
    """Hold an exclusive, non-blocking lock on ``folder/name`` (the folder is created) while the
    block runs; another holder (another run, in any process) makes this a TensorQAError naming
    the folder. The lock file is removed on release."""
    import fcntl

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise TensorQAError(f"{_named(folder, flag)}: another tensorqa run is writing to this folder "
                                f"(it holds {path.name}); wait for it to end or write elsewhere") from None
        except BaseException:
            os.close(fd)
            raise
        try:  # the file we locked must still be the one at the path (a releasing holder unlinks it)
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)
