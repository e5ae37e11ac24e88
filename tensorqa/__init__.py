"""tensorqa: compile compositional question-answer benchmarks from scene graphs at tensor speed."""

from .errors import TensorQAError
from .vocab import Vocab, vocab

__version__ = "0.1.0"
__all__ = ["TensorQAError", "Vocab", "vocab"]
