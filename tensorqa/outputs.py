"""The one output layer: output paths checked before any work, names joined under ``--out``, files
written whole, inputs never replaced, an exclusive lock on an output folder.

Every file is written new (:func:`new_file`: ``O_EXCL``, whatever was at the name removed, never
opened) as ``*.partial`` and renamed over its name (:func:`publish`), so a link planted inside
``--out`` is replaced, not written through. A rename replaces whatever is at the path, a device
included, so an existing output must be a regular file where a file goes and a folder where a
folder goes (checked before the inputs are read). Names from data reach paths only through
:func:`output_path`; :func:`protect_inputs` keeps every rename and removal off the run's inputs.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from pathlib import Path
from typing import IO, Iterator

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


def _mode(path: Path, flag: str | None) -> int | None:
    """``path``'s st_mode, None where nothing is there."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        raise TensorQAError(f"{_named(path, flag)}: {e.strerror}") from None


def check_output_file(path: str | os.PathLike, flag: str | None = "--out", what: str = "the output is a file") -> Path:
    """Refuse an output file path that exists and is a folder, device, fifo or socket, or whose
    folder does not exist. Returns the path."""
    path = Path(path)
    mode = _mode(path, flag)
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
    """Refuse an output folder path that exists and is not a folder, or lies under a file. Returns the path."""
    path = Path(path)
    mode = _mode(path, flag)
    if mode is not None and not stat.S_ISDIR(mode):
        kind = "a file" if stat.S_ISREG(mode) else _kind(mode)
        raise TensorQAError(f"{_named(path, flag)}: is {kind}; {what}")
    if mode is None:
        _existing_parent(path, flag)
    return path


@contextlib.contextmanager
def output_lock(folder: str | os.PathLike, name: str = ".tensorqa.lock", flag: str | None = "--out") -> Iterator[Path]:
    """Hold an exclusive, non-blocking lock on ``folder/name`` (folder created) while the block runs:
    a second run into the same folder is refused at once rather than racing the first."""
    import fcntl

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)  # not a planted link
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


# ---- names and paths under an output folder --------------------------------------------------------

def file_name(name: str, where: str | os.PathLike, what: str = "name") -> str:
    """``name`` if it can be one file name inside an output folder (not empty, ``.`` or ``..``, no
    separator, no NUL): names from data reach paths only through here, so none leaves ``--out``."""
    bad = (not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name
           or (os.altsep is not None and os.altsep in name))
    if bad:
        raise TensorQAError(f"{where}: {what} {name!r} cannot be a file name (it must not be empty, '.' or '..', "
                            "or hold '/', '\\' or NUL); refusing to write it as a path")
    return name


def output_path(out: str | os.PathLike, *names: str, what: str = "name") -> Path:
    """``out/names[0]/...``, each name a :func:`file_name`, landing inside ``out`` once links are resolved."""
    out = Path(out)
    path = out.joinpath(*(file_name(n, out, what) for n in names))
    inside(out, path)
    return path


def inside(out: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Refuse ``path`` unless its folder, links resolved, is ``out`` or lies under it."""
    root, folder = os.path.realpath(out), os.path.realpath(Path(path).parent)
    if os.path.commonpath([root, folder]) != root:
        raise TensorQAError(f"{path}: lies outside the output folder {out} (through {folder}); refusing to write it")
    return Path(path)


def output_folder(path: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """Create folder ``path`` (parents too). Below ``root`` (the user's ``--out``, itself maybe a link)
    no part may be a link or a non-folder: a planted link would send the writes elsewhere."""
    path = Path(path)
    if root is None:
        root = path.parent
    root = Path(root)
    parts = path.relative_to(root).parts if path != root else ()
    if parts and not root.is_dir():
        check_output_folder(root, None)
        root.mkdir(parents=True, exist_ok=True)
    at = root
    for part in parts:
        at = at / part
        try:
            mode = os.lstat(at).st_mode
        except FileNotFoundError:
            try:
                os.mkdir(at)
            except FileExistsError:  # made meanwhile: checked again below
                pass
            mode = os.lstat(at).st_mode
        if stat.S_ISLNK(mode):
            raise TensorQAError(f"{at}: is a symbolic link inside the output folder; refusing to write through it "
                                "(remove the link)")
        if not stat.S_ISDIR(mode):
            raise TensorQAError(f"{at}: exists and is not a folder; refusing to replace it")
    if not parts:
        check_output_folder(path, None)
        path.mkdir(parents=True, exist_ok=True)
    return path


# ---- files written whole or not at all ----------------------------------------------------------------

def partial_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".partial")


def remove_entry(path: str | os.PathLike) -> None:
    """Remove the file or link (never its target) at ``path``; a folder, device, fifo or socket is refused."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise TensorQAError(f"{path}: is a folder where tensorqa writes a file; refusing to remove it")
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise TensorQAError(f"{path}: exists and is {_kind(mode)}; refusing to replace it")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def new_file(path: str | os.PathLike, flags: int = 0) -> int:
    """A descriptor of a new, empty file at ``path`` opened for writing: what was there is removed,
    never opened, and ``O_EXCL`` makes sure no write goes through a link."""
    remove_entry(path)
    return os.open(path, _NEW | flags, 0o666)


def new_partial(path: str | os.PathLike) -> Path:
    """``path``'s partial file, new and empty, for a writer that opens it by name (pyarrow, HDF5)."""
    partial = partial_path(path)
    os.close(new_file(partial))
    return partial


def publish(partial: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Rename a complete ``partial`` over ``path`` (a link there is replaced); an input is refused."""
    check_not_input(path)
    os.replace(partial, path)
    return Path(path)


def write_error(path: str | os.PathLike, e: OSError, what: str = "write", outcome: str = "") -> TensorQAError:
    """One line for a refused write, naming the final file (never its ``.partial``) and ``; outcome``
    if given: pyarrow's and HDF5's messages name no file or run over lines, so the errno's text is used."""
    if str(e.filename or "").endswith(".partial"):
        path = str(e.filename).removesuffix(".partial")
    text = str(e)  # pyarrow: "Error writing bytes to file. Detail: [errno 28] No space left on device"
    known = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EACCES, errno.EROFS, errno.EIO)
    code = next((c for c in known if e.errno == c or os.strerror(c) in text or f"errno = {c}" in text), None)
    reason = os.strerror(code) if code else e.strerror or (text.strip().splitlines() or [type(e).__name__])[0]
    return TensorQAError(f"{path}: cannot {what} ({reason})" + (f"; {outcome}" if outcome else ""))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Write ``path`` whole or not at all: yields a new partial file's path, published when the block
    ends, removed on any error or interrupt (an OSError becomes one line naming ``path``)."""
    path = Path(path)
    partial = new_partial(path)
    try:
        yield partial
        publish(partial, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        if isinstance(e, OSError):
            raise write_error(path, e) from None
        raise


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "wb", **options) -> Iterator[IO]:
    """:func:`atomic_path` with the partial file open (``open``'s ``mode`` and options)."""
    with atomic_path(path) as partial:
        fd = os.open(partial, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, mode, **options) as f:
            yield f


def write_atomic(path: str | os.PathLike, data: bytes | str, encoding: str = "utf-8") -> Path:
    """Write ``data`` as the whole of ``path`` (:func:`atomic_file`)."""
    with atomic_file(path, "wb") as f:
        f.write(data.encode(encoding) if isinstance(data, str) else data)
    return Path(path)


def remove_tree(path: str | os.PathLike) -> None:
    """Remove a previous run's output folder (a link is removed, not followed), unless it holds an input."""
    path = Path(path)
    for p in _INPUTS:
        if os.path.commonpath([os.path.realpath(path), p]) == os.path.realpath(path):
            raise TensorQAError(f"{path}: holds {p}, an input of this run; refusing to remove it")
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


# ---- outputs never replace inputs ----------------------------------------------------------------------

_INPUTS: list[str] = []  # resolved paths of this run's inputs (protect_inputs)


def _same(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samestat(os.stat(a), os.stat(b))
    except OSError:
        return False


def protect_inputs(inputs, outputs, flag: str = "--out") -> None:
    """Refuse an output that is an input (same resolved path or same file), then remember the inputs
    so that no file is published over one and no folder holding one is removed.
    ``inputs``: paths; ``outputs``: paths or (flag, path) pairs; None entries are skipped."""
    _INPUTS.clear()
    ins = [Path(p) for p in inputs if p is not None]
    for entry in outputs:
        name, out = entry if isinstance(entry, tuple) else (flag, entry)
        for i in ins if out is not None else ():
            if _same(out, i):
                raise TensorQAError(f"{name} {out}: is the input {i}; write the output elsewhere "
                                    "(it would replace the input)")
    _INPUTS.extend(os.path.realpath(i) for i in ins if i.exists())


def forget_inputs() -> None:
    """End of a run: no path is protected any more."""
    _INPUTS.clear()


def check_not_input(path: str | os.PathLike) -> None:
    """Refuse to replace ``path`` if it is an input of this run (:func:`protect_inputs`)."""
    for i in _INPUTS:
        if _same(path, i):
            raise TensorQAError(f"{path}: is an input of this run; refusing to replace it")
