"""tensorqa: compile compositional question-answer benchmarks from scene graphs at tensor speed."""

from . import memory  # noqa: F401  (first: sets Arrow's allocator options before pyarrow loads)
from .errors import TensorQAError
from .export_agqa import export_agqa
from .program import parse_program
from .reference import run_program
from .scene import SceneBatch, VideoScene
from .store import SceneStore, open_store, write_store
from .vocab import Vocab, vocab

__version__ = "0.1.0"
# the public API the README's tour names (tests/test_bad_inputs.py imports every name it uses)
__all__ = ["TensorQAError", "Vocab", "vocab", "SceneBatch", "VideoScene", "SceneStore", "open_store", "write_store",
           "export_agqa", "parse_program", "run_program"]
