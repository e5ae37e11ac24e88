"""AGQA-Decomp: question hierarchies (DAGs of sub-questions) and the compositional-consistency metrics.

    load_hierarchies(dir) -> Hierarchies          flat node / edge / isolated tables
    load_predictions(file_or_obj) -> Predictions  official list format or a {key: prediction} map
    evaluate_predictions(dir, predictions) -> dict  accuracy, CA, RWR, RWR-n, Delta, IC, IC-accuracy r
    baseline_predictions(...)                      most-likely / random reference predictions
    decompose(pool, out, store) -> dict            a pool's questions as DAGs of sub-questions
    decompose_video(video_id, questions, scene)    one video's DAGs, in memory
"""

from tensorqa.decomp.baseline import baseline_predictions, pool_baseline_predictions
from tensorqa.decomp.decompose import VideoDecomposition, decompose, decompose_video, ground_truth_predictions
from tensorqa.decomp.hierarchies import Hierarchies, load_hierarchies
from tensorqa.decomp.metrics import Predictions, evaluate_predictions, format_report, load_predictions, write_report

__all__ = [
    "Hierarchies", "load_hierarchies", "Predictions", "load_predictions", "evaluate_predictions",
    "format_report", "write_report", "baseline_predictions", "pool_baseline_predictions",
    "decompose", "decompose_video", "VideoDecomposition", "ground_truth_predictions",
]
