"""One table from primitive name (and AGQA function name) to its implementation.

Like CLEVR's question engine (one handler per program function) and einops' backends (one small
interface, many implementations), every vectorized primitive registers here under its name, and
AGQA's function names are aliases of the primitive that implements them (``Localize`` ->
``localize``, ``OnlyItem`` -> ``only_item``, ...). Compiled grid plans hold *names*, and look
the implementation up each time they run, so swapping or ablating a primitive is one entry:

* Each primitive's *scalar twin* (one scene, plain Python: the oracle the differential tests
  compare with) registers under the same name as backend ``scalar``; :func:`scalar` returns it.
  The scalar executors walk programs through these twins, never through the vectorized table.
* ``use("kernel")`` runs every primitive that has a kernel implementation (``kernels/``) with it,
  falling back to the torch implementation for the others; ``use("torch")`` goes back.
* ``override("relate", fn)`` replaces one implementation.
* ``ablate("before", "while")`` makes a name mean another: for temporal words, every before window
  becomes a while window (``localize`` reads :func:`ablation`); for primitive names, lookups of the
  first name return the second's implementation (``ablate("first_episode", "last_episode")``).

Each of the three changes the table until undone, and returns a context manager that undoes it on
exit, so ``with ablate("before", "while"): ...`` is a temporary swap.
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


class _Undo:
    """Returned by the table-changing calls: undoes the change on ``__exit__`` (or ``undo()``)."""

    def __init__(self, undo: Callable[[], None]):
        self._undo = undo

    def undo(self) -> None:
        self._undo()

    def __enter__(self) -> "_Undo":
        return self

    def __exit__(self, *exc) -> None:
        self._undo()


def register(name: str, backend: str = "torch", aliases: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Decorator: register ``fn`` as the ``backend`` implementation of primitive ``name``.

    ``aliases`` are AGQA function names that this primitive implements.
    """
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


def aliases() -> dict[str, str]:
    """AGQA function name -> primitive name."""
    return dict(_aliases)


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
    if name in _state["torch_only"]:
        return impls["torch"]
    return impls.get(_state["backend"]) or impls["torch"]


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
    _state["backend"] = backend_name
    _state["torch_only"] = frozenset(canonical(n) for n in torch_only)

    def undo() -> None:
        _state.update(previous)

    return _Undo(undo)


def override(name: str, fn: Callable) -> _Undo:
    """Replace the implementation of primitive ``name`` by ``fn`` (context manager too)."""
    name = canonical(name)
    had, previous = name in _overrides, _overrides.get(name)
    _overrides[name] = fn

    def undo() -> None:
        if had:
            _overrides[name] = previous
        else:
            _overrides.pop(name, None)

    return _Undo(undo)


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
    had, previous = name in _ablations, _ablations.get(name)
    _ablations[name] = replacement

    def undo() -> None:
        if had:
            _ablations[name] = previous
        else:
            _ablations.pop(name, None)

    return _Undo(undo)


def ablation(word: str) -> str:
    """What ``word`` (temporal word or primitive name) means under the current ablations."""
    return _ablations.get(word, word)


def ablations() -> dict[str, str]:
    """The active ablations, name -> replacement (part of a plan's cache key)."""
    return dict(_ablations)
