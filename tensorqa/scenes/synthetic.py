"""The embedded default dataset: Charades-grounded scene graphs built from a seed, no download.

Two deterministic stages: :mod:`tensorqa.scenes.synthetic_scripts` draws Charades-like scripts from
the profile of the real annotations, :mod:`tensorqa.scenes.synthetic_scenes` turns a script
(synthetic or a real Charades video) into a raw Action Genome style scene graph, with keyframes
from :mod:`tensorqa.scenes.synthetic_keyframes`. This module joins them: :func:`synthesize` (the
default dataset) and :func:`synthesize_from_charades` (real videos and intervals).
(measurements: benchmarks/RESULTS.md, 'synthetic scenes')
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

import numpy as np

from tensorqa.scenes.profile import CHARADES_OBJECT_CLASS
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.vocab import vocab
# the stages' public names are importable from here, as before the split
from tensorqa.scenes.synthetic_keyframes import FPS, FRAMES_PER_ACTION, KEYFRAME_GRID, keyframes, sample_keyframes  # noqa: F401
from tensorqa.scenes.synthetic_scenes import (CONTACT, DROPOUT, OBJECT_PAD, P_ATTENTION, P_COVERED, P_KEEP,  # noqa: F401
                                              P_LOOK_ACTIVE, P_LOOK_BACKGROUND, P_SECOND_CONTACT, P_SECOND_SPATIAL,
                                              P_UNSURE, SCENE_WINDOW, SPATIAL, default_scene_object_model,
                                              SceneObjectModel, synthesize_scene_pieces, synthesize_scene)
from tensorqa.scenes.synthetic_scripts import (CALIBRATION_ROUNDS, CALIBRATION_SEED, CALIBRATION_VIDEOS,  # noqa: F401
                                               COOCCURRENCE_STRENGTH, DEFAULT_TRAIN, DEFAULT_VIDEOS, LIFT_PSEUDOCOUNT,
                                               LIFT_RANGE, MAX_SYNTHETIC_VIDEOS, Script, check_seed, num_train,
                                               sample_scripts, synthetic_video_id)


def synthesize(n_videos: int = DEFAULT_VIDEOS, seed: int = 0, profile: dict | None = None) -> Iterator[VideoScene]:
    """The default dataset: ``n_videos`` synthetic Charades-like videos as raw scene graphs."""
    object_model = default_scene_object_model() if profile is None else SceneObjectModel(profile)
    for script in sample_scripts(n_videos, seed, profile):
        yield synthesize_scene_pieces(script, seed, None, object_model)


def _charades_objects(words: Iterable[str]) -> np.ndarray:
    """AG object indices of a video's listed objects (Charades words or AG names; others dropped)."""
    v = vocab()
    out = set()
    for w in words:
        w = str(w).strip().lower()
        name = CHARADES_OBJECT_CLASS.get(w, w)
        if name in v.objects:
            out.add(v.objects.index(name))
    return np.array(sorted(out), dtype=np.int64)


def _action_class(c: Any) -> int:
    return vocab().action_index(c) if isinstance(c, str) else int(c)


def synthesize_from_charades(videos: Iterable[Any], seed: int = 0) -> Iterator[VideoScene]:
    """Raw scene graphs over real Charades videos and their real intervals.

    ``videos``: objects with ``video_id``, ``split``, ``length_secs``, ``objects`` (Charades object
    words) and ``actions`` ((class index, start, end) triples), e.g. ``read_charades_csv``'s records.
    The listed objects become the video's scene objects.
    """
    seed = check_seed(seed)
    for v in videos:
        script = Script(v.video_id, v.split, float(v.length_secs),
                        tuple((_action_class(c), float(s), float(e)) for c, s, e in v.actions))
        yield synthesize_scene_pieces(script, seed, _charades_objects(v.objects), None)
