"""tensorqa: compile compositional question-answer benchmarks from scene graphs at tensor speed.

Importing the package is light and changes nothing in the process: the public names below load
their modules (torch, h5py, ...) on first use (PEP 562), and the allocator set-up the command line
uses is :func:`tensorqa.startup.configure_process`, for library users to call if they want it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# public name -> the module that defines it
_HOMES = {
    "TensorQAError": "tensorqa.errors",
    "Vocab": "tensorqa.scenes.vocab",
    "vocab": "tensorqa.scenes.vocab",
    "SceneBatch": "tensorqa.scenes.batch",
    "VideoScene": "tensorqa.scenes.batch",
    "SceneStore": "tensorqa.scenes.store",
    "open_store": "tensorqa.scenes.store",
    "write_store": "tensorqa.scenes.store",
    "export_agqa": "tensorqa.scenes.export_agqa",
    "parse_program": "tensorqa.agqa.program",
    "run_program": "tensorqa.agqa.executor",
}
# the public API the README's tour names (tests/test_bad_inputs.py imports every name it uses)
__all__ = list(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tensorqa' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and IDEs see
    from tensorqa.agqa.program import parse_program
    from tensorqa.agqa.executor import run_program
    from tensorqa.errors import TensorQAError
    from tensorqa.scenes.batch import SceneBatch, VideoScene
    from tensorqa.scenes.export_agqa import export_agqa
    from tensorqa.scenes.store import SceneStore, open_store, write_store
    from tensorqa.scenes.vocab import Vocab, vocab
