"""tensorqa: compile compositional question-answer benchmarks from scene graphs at tensor speed."""

from tensorqa import memory  # noqa: F401  (first: sets Arrow's allocator options before pyarrow loads)
from tensorqa.errors import TensorQAError
from tensorqa.scenes.export_agqa import export_agqa
from tensorqa.engine.program import parse_program
from tensorqa.engine.scalar import run_program
from tensorqa.scenes.batch import SceneBatch, VideoScene
from tensorqa.scenes.store import SceneStore, open_store, write_store
from tensorqa.scenes.vocab import Vocab, vocab

__version__ = "0.1.0"
# the public API the README's tour names (tests/test_bad_inputs.py imports every name it uses)
__all__ = ["TensorQAError", "Vocab", "vocab", "SceneBatch", "VideoScene", "SceneStore", "open_store", "write_store",
           "export_agqa", "parse_program", "run_program"]
