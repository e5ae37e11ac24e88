"""One table from primitive name (and program function alias: ``Localize`` -> ``localize``) to
its implementations: backend ``torch``, ``kernel`` (``kernels/``) and ``scalar`` (the twin, the
oracle; :func:`scalar`). Plans hold names and look them up on every run, so one entry swaps a
primitive: ``use("kernel")`` (torch where no kernel), ``override(name, fn)``, ``ablate(a, b)`` (a
temporal word read as another, or one primitive's lookups returning another's). Each returns a
context manager that undoes it.
"""

from __future__ import annotations

import contextlib
from typing import Callable

from tensorqa.errors import TensorQAError
from tensorqa.engine.windows import WINDOW_KINDS

BACKENDS = ("torch", "kernel", "scalar")
VECTOR_BACKENDS = ("torch", "kernel")  # what use() may switch the vectorized runs to

_impls: dict[str, dict[str, Callable]] = {}  # primitive name -> backend -> function
_aliases: dict[str, str] = {}  # AGQA function name -> primitive name
_state: dict = {"backend": "torch", "torch_only": frozenset()}
_overrides: dict[str, Callable] = {}
_ablations: dict[str, str] = {}


class _Undo(contextlib.AbstractContextManager):
    """Returned by the table-changing calls: undoes the change on ``__exit__`` (or ``undo()``)."""

    def __init__(self, undo: Callable[[], None]):
        self.undo = undo

    def __exit__(self, *exc) -> None:
        self.undo()


def register(name: str, backend: str = "torch", aliases: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Decorator: ``fn`` is the ``backend`` implementation of primitive ``name`` (and of the
    program functions ``aliases``)."""
    if backend not in BACKENDS:
        raise TensorQAError(f"registry: unknown backend {backend!r} (expected {' or '.join(BACKENDS)})")

    def deco(fn: Callable) -> Callable:
        _impls.setdefault(name, {})[backend] = fn
        for a in aliases:
            _aliases[a] = name
        return fn

    return deco


def names() -> list[str]:
    """Registered primitive names, sorted."""
    return sorted(_impls)


def canonical(name: str) -> str:
    """The primitive name behind ``name`` (a primitive or an AGQA function name)."""
    name = _aliases.get(name, name)
    if name not in _impls:
        raise TensorQAError(f"registry: unknown primitive {name!r}")
    return name


_recordings: list[set[str]] = []  # the open recording() sets: every name looked up goes in each


@contextlib.contextmanager
def recording():
    """Collect the primitive names looked up inside the block (what a plan actually calls)."""
    seen: set[str] = set()
    _recordings.append(seen)
    try:
        yield seen
    finally:
        _recordings.remove(seen)


def lookup(name: str) -> Callable:
    """The implementation that runs for ``name`` now: override, else (after ablation) the current
    backend's implementation, else the torch one."""
    name = canonical(name)
    for seen in _recordings:
        seen.add(name)
    if name in _overrides:
        return _overrides[name]
    name = _ablations.get(name, name)
    impls = _impls[name]
    return impls["torch"] if name in _state["torch_only"] else impls.get(_state["backend"]) or impls["torch"]


def implementations(name: str) -> dict[str, Callable]:
    """backend -> implementation registered for ``name``."""
    return dict(_impls[canonical(name)])


def scalar(name: str) -> Callable:
    """The scalar twin of primitive ``name`` (raises if it has none)."""
    impls = _impls[canonical(name)]
    if "scalar" not in impls:
        raise TensorQAError(f"registry: primitive {canonical(name)!r} has no scalar twin")
    return impls["scalar"]


def backend() -> str:
    return _state["backend"]


def use(backend_name: str, torch_only: tuple[str, ...] = ()) -> _Undo:
    """Run primitives with ``backend_name`` ("torch" or "kernel") from now on, except the
    primitives named in ``torch_only``, which keep their torch implementation (context manager too)."""
    if backend_name not in VECTOR_BACKENDS:
        raise TensorQAError(f"registry: cannot run the vectorized primitives with backend {backend_name!r} "
                            f"(expected {' or '.join(VECTOR_BACKENDS)}; scalar twins run in the scalar executors)")
    previous = dict(_state)
    _state.update(backend=backend_name, torch_only=frozenset(canonical(n) for n in torch_only))
    return _Undo(lambda: _state.update(previous))


def _set(table: dict, key: str, value) -> _Undo:
    """``table[key] = value``, undone by the returned :class:`_Undo`."""
    had, previous = key in table, table.get(key)
    table[key] = value
    return _Undo(lambda: table.__setitem__(key, previous) if had else table.pop(key, None))


def override(name: str, fn: Callable) -> _Undo:
    """Replace the implementation of primitive ``name`` by ``fn`` (context manager too)."""
    return _set(_overrides, canonical(name), fn)


def ablate(name: str, replacement: str) -> _Undo:
    """Make ``name`` mean ``replacement``: a temporal word (``ablate("before", "while")``) or a
    primitive name (lookups of ``name`` return ``replacement``'s implementation)."""
    if name in WINDOW_KINDS or replacement in WINDOW_KINDS:
        if name not in WINDOW_KINDS or replacement not in WINDOW_KINDS:
            raise TensorQAError(f"registry: cannot ablate {name!r} into {replacement!r}: both must be temporal words "
                                f"({', '.join(WINDOW_KINDS)}) or both primitives")
        if name == "video":
            raise TensorQAError("registry: the whole video has no action to localize around; it cannot be ablated")
        if replacement == "between" and name != "between":
            raise TensorQAError(f"registry: cannot ablate {name!r} into 'between': it needs a second action")
    else:
        name, replacement = canonical(name), canonical(replacement)
    return _set(_ablations, name, replacement)


def ablation(word: str) -> str:
    """What ``word`` (temporal word or primitive name) means under the current ablations."""
    return _ablations.get(word, word)
