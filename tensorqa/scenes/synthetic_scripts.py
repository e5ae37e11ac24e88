"""Stage 1 of the embedded default dataset: Charades-like *scripts* (video length and action
instances) drawn from the statistics profile of the real annotations (:mod:`tensorqa.scenes.profile`):
actions per video, classes by frequency and co-occurrence, per-class durations and start positions;
with the synthetic video ids and the train / test share.

Video i of :func:`sample_scripts` uses ``default_rng([seed, i])``, so it is the same whatever
``n_videos`` is.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.scenes.profile import load_profile
from tensorqa.scenes.vocab import vocab

DEFAULT_VIDEOS = 9601  # AGQA: 7,787 train + 1,814 test videos
DEFAULT_TRAIN = 7787
_BASE36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class Script(NamedTuple):
    """A video's actions: ``actions`` holds (class index, start s, end s) triples."""

    video_id: str
    split: str
    length_secs: float
    actions: tuple[tuple[int, float, float], ...]


# how many synthetic video ids there are (four base-36 digits): the most videos ``pack`` synthesizes
MAX_SYNTHETIC_VIDEOS = 36**4


def synthetic_video_id(index: int) -> str:
    """``'Q'`` + the index in base 36, upper case, zero-padded to 4 digits (``Q0000`` ... ``QZZZZ``)."""
    if not 0 <= index < 36**4:
        raise TensorQAError(f"synthetic video index {index} is outside 0..{36**4 - 1}")
    digits = []
    for _ in range(4):
        index, d = divmod(index, 36)
        digits.append(_BASE36[d])
    return "Q" + "".join(reversed(digits))


def num_train(n_videos: int) -> int:
    """How many of ``n_videos`` synthetic videos are train (AGQA's 7,787 / 9,601 share)."""
    return round(n_videos * DEFAULT_TRAIN / DEFAULT_VIDEOS)


COOCCURRENCE_STRENGTH = 1.1  # exponent on the lift of a new class with each class already drawn
LIFT_RANGE = (0.05, 50.0)
LIFT_PSEUDOCOUNT = 10.0  # pseudo-count shrinking the lifts of rare pairs toward 1
# weight factor of a new class whose object (synonyms merged) the video's actions already use: in
# Charades 42 % of a video's new classes reuse an object already handled (the pair lifts alone give
# 36 %), which keeps Charades' 3.3 distinct action objects per video and 2.1 per keyframe
OBJECT_AFFINITY = 1.8
# Charades videos often stop while several actions still run (29.5 % of its intervals end past the
# video): in such a video (share P_OPEN_END) every instance that would end in the last OPEN_END_TAIL
# of the video runs to its end, so instances ending with the video come in groups as in Charades
P_OPEN_END, OPEN_END_TAIL = 0.3, 0.25
CALIBRATION_SEED, CALIBRATION_VIDEOS, CALIBRATION_ROUNDS = 20240611, 3000, 5


class _ScriptModel:
    """Sampling tables built once from a profile (all numpy)."""

    def __init__(self, profile: dict) -> None:
        counts = np.asarray(profile["actions_per_video"], dtype=np.float64)
        self.count_cdf = np.cumsum(counts) / counts.sum()
        self.length_levels = np.asarray(profile["length_levels"], dtype=np.float64)
        self.length_q = np.asarray(profile["length_quantiles"], dtype=np.float64)
        self.levels = np.asarray(profile["quantile_levels"], dtype=np.float64)
        self.dur_q = np.asarray(profile["duration_quantiles"], dtype=np.float64)  # [C, Q]
        self.start_q = np.asarray(profile["start_quantiles"], dtype=np.float64)  # [C, Q]
        videos = np.asarray(profile["class_videos"], dtype=np.float64)
        # lift(a, b) = P(a and b) / (P(a) P(b)) over videos; pairs the profile left out co-occur
        # less often than its last kept pair, so they get at most half that count and lift <= 1
        n_videos = float(profile["num_videos"])
        expected = np.outer(videos, videos) / n_videos
        floor = 0.5 * min((n for _, _, n in profile["cooccurrence"]), default=0)
        counts_ab = np.minimum(expected, floor)
        for a, b, n in profile["cooccurrence"]:
            counts_ab[a, b] = counts_ab[b, a] = n
        # pseudo-counts shrink the noisy lifts of rare pairs toward 1
        lift = (counts_ab + LIFT_PSEUDOCOUNT) / (expected + LIFT_PSEUDOCOUNT)
        self.log_lift = COOCCURRENCE_STRENGTH * np.log(np.clip(lift, LIFT_RANGE[0], LIFT_RANGE[1]))
        v = vocab()
        obj = np.array(v.action_object)
        self.class_object = np.where(obj >= 0, np.array(v.object_merged_into)[np.maximum(obj, 0)], -1)  # [C]
        self.has_object = self.class_object >= 0
        self.num_objects = v.num_objects
        # base weights of a class new to the video, calibrated so that classes still appear in as
        # many videos as in Charades once co-occurrence has pulled scripts toward their themes
        self.base = self._calibrate(videos / videos.sum())
        # a drawn instance repeats an earlier class with this probability (the first never does)
        mean_k = (counts * np.arange(len(counts))).sum() / counts.sum()
        mean_later = (counts[1:] * np.arange(len(counts) - 1)).sum() / counts.sum()
        self.repeat_p = float(profile["repeat_fraction"]) * mean_k / max(mean_later, 1e-9)
        # a later instance copies the interval of its most related earlier one; each copy makes two
        # instances share an interval, hence the half
        self.share_p = min(0.5 * float(profile["shared_interval_fraction"]) * mean_k / max(mean_later, 1e-9), 1.0)

    def _calibrate(self, target: np.ndarray) -> np.ndarray:
        """Base class weights float64[C] whose scripts hit ``target`` (share of video presences).

        A fixed-seed batch of class sequences is drawn for many videos at once (the same rule as
        :meth:`sample`, without repeats) and the weights are rescaled by target / observed.
        """
        rng = np.random.default_rng(CALIBRATION_SEED)
        M, C = CALIBRATION_VIDEOS, len(target)
        ks = np.searchsorted(self.count_cdf, rng.random(M), side="right")
        u = rng.random((M, int(ks.max(initial=0))))
        base = target.copy()
        for _ in range(CALIBRATION_ROUNDS):
            acc = np.zeros((M, C))  # summed log-lifts with the classes drawn so far
            seen = np.zeros((M, C), dtype=bool)
            used = np.zeros((M, self.num_objects + 1), dtype=bool)  # objects in use (last column: none)
            for j in range(u.shape[1]):
                rows = np.flatnonzero(ks > j)  # videos that draw a j-th class
                w = np.where(seen[rows], 0.0, base * np.exp(acc[rows]) * self._affinity(used[rows]))
                cdf = np.cumsum(w, 1)
                pick = np.minimum((cdf < (u[rows, j] * cdf[:, -1])[:, None]).sum(1), C - 1)
                seen[rows, pick] = True
                used[rows, self.class_object[pick]] = True
                acc[rows] += self.log_lift[pick]
            observed = seen.sum(0) / max(seen.sum(), 1)
            base = base * np.where(observed > 0, target / np.maximum(observed, 1e-12), 1.0) ** 0.8
            base /= base.sum()
        return base

    def _affinity(self, used: np.ndarray) -> np.ndarray:
        """Weight factors float64[..., C]: OBJECT_AFFINITY for classes whose object is in ``used``
        bool[..., O + 1] (the last column stands for "no object" and never counts)."""
        return np.where(used[..., self.class_object] & self.has_object, OBJECT_AFFINITY, 1.0)

    def _interp_rows(self, table: np.ndarray, cls: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Inverse CDF of per-class quantile rows at u: float64[K] for classes ``cls`` int[K]."""
        pos = u * (len(self.levels) - 1)
        lo = np.minimum(pos.astype(np.int64), len(self.levels) - 2)
        frac = pos - lo
        return table[cls, lo] * (1 - frac) + table[cls, lo + 1] * frac

    def sample(self, rng: np.random.Generator, video_id: str, split: str) -> Script:
        k = int(np.searchsorted(self.count_cdf, rng.random(), side="right"))
        length = float(np.interp(rng.random(), self.length_levels, self.length_q))
        u = rng.random((k, 5))
        cls = np.empty(k, dtype=np.int64)
        C = len(self.base)
        seen = np.zeros(C, dtype=bool)
        affinity = np.ones(C)  # OBJECT_AFFINITY where a class's object is already in use
        acc = np.zeros(C)  # summed log-lifts of every class with the classes drawn so far
        for j in range(k):  # sequential: each class is conditioned on the ones before it
            if j > 0 and u[j, 0] < self.repeat_p:
                cls[j] = cls[int(u[j, 1] * j)]
                continue
            # classes that go with every class drawn so far are favoured: scripts stay on a theme
            # and so are classes handling an object already in use
            w = np.where(seen, 0.0, self.base * np.exp(acc) * affinity)
            cdf = np.cumsum(w)
            cls[j] = min(int(np.searchsorted(cdf, u[j, 1] * cdf[-1], side="right")), C - 1)
            seen[cls[j]] = True
            if self.has_object[cls[j]]:
                affinity[self.class_object == self.class_object[cls[j]]] = OBJECT_AFFINITY
            acc += self.log_lift[cls[j]]
        dur = self._interp_rows(self.dur_q, cls, u[:, 2])
        start = self._interp_rows(self.start_q, cls, u[:, 3]) * length
        end = np.minimum(start + dur, length)
        for j in np.flatnonzero(u[1:, 4] < self.share_p) + 1:  # in order, so copies of copies chain
            partner = int(np.argmax(self.log_lift[cls[:j], cls[j]]))
            start[j], end[j] = start[partner], end[partner]
        if rng.random() < P_OPEN_END:  # drawn last, so the draws above do not depend on it
            end = np.where(end >= (1 - OPEN_END_TAIL) * length, length, end)
        actions = tuple((int(c), round(float(s), 2), round(float(e), 2)) for c, s, e in zip(cls, start, end))
        return Script(video_id, split, round(length, 2), actions)


@functools.cache
def _default_script_model() -> _ScriptModel:
    return _ScriptModel(load_profile())


def _script_model(profile: dict | None) -> _ScriptModel:
    return _default_script_model() if profile is None else _ScriptModel(profile)


def check_seed(seed: int) -> int:
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TensorQAError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def sample_scripts(n_videos: int, seed: int, profile: dict | None = None) -> list[Script]:
    """``n_videos`` Charades-like scripts; the first ``num_train(n_videos)`` are train, the rest test.

    Video i is drawn from ``np.random.default_rng([seed, i])`` alone, so it does not depend on
    ``n_videos`` (its split does: the train share is fixed).
    """
    seed = check_seed(seed)
    if n_videos < 0:
        raise TensorQAError(f"n_videos must be >= 0, got {n_videos}")
    model = _script_model(profile)
    n_tr = num_train(n_videos)
    return [model.sample(np.random.default_rng([seed, i]), synthetic_video_id(i), "train" if i < n_tr else "test")
            for i in range(n_videos)]


# --------------------------------------------------------------------------------------------------
# Stage 2: scene graphs from scripts
