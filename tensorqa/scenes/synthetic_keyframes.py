"""Where Action Genome places its keyframes over a video's action intervals (the synthetic scenes'
frames, for synthetic and real Charades scripts alike).

AG samples 5 frames uniformly across each action, but the samples of overlapping actions, and of
actions annotated with one shared interval, coincide or fall a frame or two apart; AG has fewer
keyframes per video than 5 per action, and fewer than dropping exact duplicates leaves. So nearby
samples are merged the way a sampler on a coarse grid merges them: frames are cut into cells of
``KEYFRAME_GRID`` frames (0.42 s at 24 fps) and the earliest sample of a cell is the keyframe. The
cell width is the one that brings Charades-like scripts to AG's 24 keyframes per video
(measurements: benchmarks/RESULTS.md, 'synthetic scenes'). An action keeps as its own the merged
keyframes that still lie inside it; one left with none gets its middle sample back.
"""

from __future__ import annotations

import numpy as np

FPS = 24  # Charades frame rate used to turn keyframe times into frame numbers
FRAMES_PER_ACTION = 5  # AG annotates 5 frames sampled uniformly across each action
KEYFRAME_GRID = 10  # frames (1/2.4 s): proposals in one cell of this width are one keyframe


def sample_keyframes(starts: np.ndarray, ends: np.ndarray, length_secs: float) -> tuple[np.ndarray, np.ndarray]:
    """The keyframes AG annotates for these intervals and the instances each was sampled for.

    Returns ``frame_ids`` int32[F] (Charades frame numbers, sorted, distinct) and ``sampled``
    bool[F, N]: keyframe f stands for one of instance n's 5 samples and lies inside its interval
    (the float32 ``start <= secs <= end`` test of ``SceneBatch.inst_frames``). The rule:

    1. Each instance proposes 5 frames at start + (k + 0.5) (end - start) / 5, k = 0..4, rounded at
       24 fps and kept inside the frames its interval contains. A video without actions proposes 5
       spread over the whole video the same way (``sampled`` then has no column).
    2. The video's frames are cut into cells of ``KEYFRAME_GRID`` frames (cell = frame // 10); the
       earliest proposal in a cell is the keyframe, the cell's other proposals merge into it.
    3. A proposal stands for the keyframe of its cell when that keyframe is inside its interval
       (it can lie just before the start). An instance left without any keyframe sampled for it
       although its interval holds a frame gets its middle proposal back as a keyframe of its own.
    """
    s = np.asarray(starts, dtype=np.float64).reshape(-1)
    e = np.asarray(ends, dtype=np.float64).reshape(-1)
    n_inst = len(s)
    if n_inst == 0:
        s, e = np.zeros(1), np.array([float(length_secs)])
    k = (np.arange(FRAMES_PER_ACTION) + 0.5) / FRAMES_PER_ACTION
    prop = np.rint((s[:, None] + k[None, :] * (e - s)[:, None]) * FPS).astype(np.int64)  # [N, 5]
    # rounding can put a proposal of a very short interval just outside it; pull it back in when
    # the interval holds a frame at all (an interval between two frames has no keyframe in AG)
    lo, hi = np.ceil(s * FPS).astype(np.int64), np.floor(e * FPS).astype(np.int64)
    holds = lo <= hi
    prop = np.where(holds[:, None], np.clip(prop, lo[:, None], hi[:, None]), prop)

    cand = np.unique(prop)
    cell = cand // KEYFRAME_GRID
    first = np.ones(len(cand), dtype=bool)
    first[1:] = cell[1:] != cell[:-1]
    frames = cand[first]  # the earliest proposal of each cell
    rep = frames[np.searchsorted(frames // KEYFRAME_GRID, prop // KEYFRAME_GRID)]  # [N, 5]
    if n_inst == 0:
        return frames.astype(np.int32), np.zeros((len(frames), 0), dtype=bool)

    # the float32 test SceneBatch.inst_frames applies
    rep_secs = (rep / FPS).astype(np.float32)
    own = (rep_secs >= s.astype(np.float32)[:, None]) & (rep_secs <= e.astype(np.float32)[:, None])
    lost = np.flatnonzero(holds & ~own.any(1))
    rescue = prop[lost, FRAMES_PER_ACTION // 2]  # the middle proposal of an instance left without
    if len(lost):
        frames = np.union1d(frames, rescue)
    sampled = np.zeros((len(frames), n_inst), dtype=bool)
    n_own, k_own = np.nonzero(own)
    sampled[np.searchsorted(frames, rep[n_own, k_own]), n_own] = True
    sampled[np.searchsorted(frames, rescue), lost] = True
    return frames.astype(np.int32), sampled


def keyframes(starts: np.ndarray, ends: np.ndarray, length_secs: float) -> np.ndarray:
    """Charades frame numbers int32[F] (sorted, distinct) AG annotates: see :func:`sample_keyframes`."""
    return sample_keyframes(starts, ends, length_secs)[0]
