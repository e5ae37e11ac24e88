"""Loaders for the real annotation formats: Charades CSVs, Action Genome pickles, AGQA stsgs pickles.

Each returns plain rows (:class:`CharadesVideo`) or per-video :class:`~tensorqa.scenes.batch.VideoScene`
objects (numpy, unpadded, sorted); ``tensorqa.scenes.store.write_store`` packs the scenes into HDF5.
"""

from tensorqa.scenes.loaders.action_genome import DEFAULT_FPS, load_action_genome
from tensorqa.scenes.loaders.agqa_stsgs import load_agqa_stsgs
from tensorqa.scenes.loaders.charades import CharadesVideo, read_charades_csv

__all__ = ["CharadesVideo", "DEFAULT_FPS", "load_action_genome", "load_agqa_stsgs", "read_charades_csv"]
