"""AGQA-Decomp: question hierarchies (DAGs of sub-questions) and the compositional-consistency
metrics: :func:`load_hierarchies`, :func:`load_predictions`, :func:`evaluate_predictions`,
:func:`baseline_predictions`, :func:`decompose` (a pool) and :func:`decompose_video` (one video)."""

from tensorqa.decomp.baseline import baseline_predictions, pool_baseline_predictions
from tensorqa.decomp.decompose import VideoDecomposition, decompose, decompose_video, ground_truth_predictions
from tensorqa.decomp.hierarchies import Hierarchies, load_hierarchies
from tensorqa.decomp.metrics import Predictions, evaluate_predictions, format_report, load_predictions, write_report

__all__ = [
    "Hierarchies", "load_hierarchies", "Predictions", "load_predictions", "evaluate_predictions",
    "format_report", "write_report", "baseline_predictions", "pool_baseline_predictions",
    "decompose", "decompose_video", "VideoDecomposition", "ground_truth_predictions",
]
