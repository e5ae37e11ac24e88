"""Loaders for the real annotation formats: Charades CSVs, Action Genome pickles, AGQA stsgs pickles.

Each returns plain rows (:class:`CharadesVideo`) or per-video :class:`~tensorqa.scene.VideoScene`
objects (numpy, unpadded, sorted); ``tensorqa.store.write_store`` packs the scenes into HDF5.
"""

from .action_genome import DEFAULT_FPS, load_action_genome
from .agqa_stsgs import load_agqa_stsgs
from .charades import CharadesVideo, read_charades_csv

__all__ = ["CharadesVideo", "DEFAULT_FPS", "load_action_genome", "load_agqa_stsgs", "read_charades_csv"]
