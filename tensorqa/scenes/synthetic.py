"""The embedded default dataset: Charades-grounded scene graphs built from a seed, no download.

Two stages, both deterministic:

1. :func:`sample_scripts` draws Charades-like *scripts* (video length and action instances) from
   the statistics profile of the real annotations (:mod:`tensorqa.scenes.profile`): actions per video,
   classes by frequency and co-occurrence, per-class durations and start positions.
2. :func:`synthesize_scene` turns a script (synthetic or a real Charades video) into a raw Action
   Genome style scene graph: keyframes where AG would sample them, person-object relations that
   follow each action's meaning, and a thin background of objects with attention, spatial and
   contact relations.

Scenes are "raw": AG relations only, verb relation columns all False (augmentation adds those).

Why the generator looks the way it does (targets: Action Genome's 234K keyframes, 476K objects
and 1.72M relation instances, i.e. per AGQA video about 24 keyframes, 2.0 objects per keyframe,
3.6 relations per object and 175 relations):

* Keyframes (:func:`sample_keyframes`). AG samples 5 frames uniformly across each action, which
  for 6.75 actions per Charades video would make 34 keyframes, yet AG has 24: the samples of
  overlapping actions, and of actions annotated with one shared interval, coincide or fall a
  frame or two apart. Dropping exact duplicates alone leaves 30 per video, so nearby samples are
  merged the way a sampler on a coarse grid merges them: frames are cut into cells of 10 frames
  (0.42 s at 24 fps) and the earliest sample of a cell is the keyframe. The cell width is the one
  that brings Charades-like scripts to AG's 24 (seed-0 scripts 24.2, real Charades intervals
  22.9; 12-frame cells would give 23.0 and 21.8). An action keeps as its own the merged keyframes
  that still lie inside it; one left with none gets its middle sample back.
* Objects. AG annotators label the objects the person interacts with in the frame at hand. An
  action's object is therefore annotated, with the relations the action implies, at every
  keyframe sampled for that action, but only with probability ``P_COVERED`` at the other
  keyframes the action spans (long background actions such as sitting on a sofa are not labelled
  in every frame of the video). Annotating the objects of all running actions everywhere would
  give 2.7 objects per keyframe, since Charades actions overlap so much. Where an action's object
  is not labelled it is not annotated at all, so an annotated object never contradicts a running
  action. Scene objects and action objects just before / after their action form a thin
  background (about 0.2 objects per keyframe). Seed 0: 1.1 objects per keyframe from the
  actions sampled there, 0.7 from actions spanning it, 0.2 background.
* Relations per object: one attention relation (97 %), one or two spatial ones (the second at
  ``P_SECOND_SPATIAL``, set so that the total comes to AG's 3.6) and the action's contact
  relations or a background one.

Densities, 9,601 videos from seed 0: 24.2 keyframes per video (232K), 2.05 objects and 7.35
relations per keyframe, 3.6 relations per object, 1.71M relation instances (178 per video).

Randomness: video i of ``sample_scripts`` uses ``default_rng([seed, i])``; the scene of a video uses
a generator seeded with ``seed`` and its video id. So video i is the same whatever ``n_videos`` is,
and a real video's graph does not depend on which other videos are packed with it.
"""

from __future__ import annotations

import functools
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

import numpy as np

from tensorqa.errors import TensorQAError
from tensorqa.scenes.profile import CHARADES_OBJECT_CLASS, load_profile
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.vocab import NO_OBJECT, vocab

FPS = 24  # Charades frame rate used to turn keyframe times into frame numbers
FRAMES_PER_ACTION = 5  # AG annotates 5 frames sampled uniformly across each action
KEYFRAME_GRID = 10  # frames (1/2.4 s): proposals in one cell of this width are one keyframe
DEFAULT_VIDEOS = 9601  # AGQA: 7,787 train + 1,814 test videos
DEFAULT_TRAIN = 7787
_BASE36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SCENE_STREAM = 0x5CE7E  # keeps the scene generator's stream apart from the script generator's


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


# --------------------------------------------------------------------------------------------------
# Stage 1: scripts from the profile
# --------------------------------------------------------------------------------------------------

COOCCURRENCE_STRENGTH = 1.1  # exponent on the lift of a new class with each class already drawn
LIFT_RANGE = (0.05, 50.0)
LIFT_PSEUDOCOUNT = 10.0  # pseudo-count shrinking the lifts of rare pairs toward 1
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
            for j in range(u.shape[1]):
                rows = np.flatnonzero(ks > j)  # videos that draw a j-th class
                w = np.where(seen[rows], 0.0, base * np.exp(acc[rows]))
                cdf = np.cumsum(w, 1)
                pick = np.minimum((cdf < (u[rows, j] * cdf[:, -1])[:, None]).sum(1), C - 1)
                seen[rows, pick] = True
                acc[rows] += self.log_lift[pick]
            observed = seen.sum(0) / max(seen.sum(), 1)
            base = base * np.where(observed > 0, target / np.maximum(observed, 1e-12), 1.0) ** 0.8
            base /= base.sum()
        return base

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
        acc = np.zeros(C)  # summed log-lifts of every class with the classes drawn so far
        for j in range(k):  # sequential: each class is conditioned on the ones before it
            if j > 0 and u[j, 0] < self.repeat_p:
                cls[j] = cls[int(u[j, 1] * j)]
                continue
            # classes that go with every class drawn so far are favoured: scripts stay on a theme
            w = np.where(seen, 0.0, self.base * np.exp(acc))
            cdf = np.cumsum(w)
            cls[j] = min(int(np.searchsorted(cdf, u[j, 1] * cdf[-1], side="right")), C - 1)
            seen[cls[j]] = True
            acc += self.log_lift[cls[j]]
        dur = self._interp_rows(self.dur_q, cls, u[:, 2])
        start = self._interp_rows(self.start_q, cls, u[:, 3]) * length
        end = np.minimum(start + dur, length)
        for j in np.flatnonzero(u[1:, 4] < self.share_p) + 1:  # in order, so copies of copies chain
            partner = int(np.argmax(self.log_lift[cls[:j], cls[j]]))
            start[j], end[j] = start[partner], end[partner]
        actions = tuple((int(c), round(float(s), 2), round(float(e), 2)) for c, s, e in zip(cls, start, end))
        return Script(video_id, split, round(length, 2), actions)


@functools.cache
def _default_script_model() -> _ScriptModel:
    return _ScriptModel(load_profile())


def _script_model(profile: dict | None) -> _ScriptModel:
    return _default_script_model() if profile is None else _ScriptModel(profile)


def _check_seed(seed: int) -> int:
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TensorQAError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def sample_scripts(n_videos: int, seed: int, profile: dict | None = None) -> list[Script]:
    """``n_videos`` Charades-like scripts; the first ``num_train(n_videos)`` are train, the rest test.

    Video i is drawn from ``np.random.default_rng([seed, i])`` alone, so it does not depend on
    ``n_videos`` (its split does: the train share is fixed).
    """
    seed = _check_seed(seed)
    if n_videos < 0:
        raise TensorQAError(f"n_videos must be >= 0, got {n_videos}")
    model = _script_model(profile)
    n_tr = num_train(n_videos)
    return [model.sample(np.random.default_rng([seed, i]), synthetic_video_id(i), "train" if i < n_tr else "test")
            for i in range(n_videos)]


# --------------------------------------------------------------------------------------------------
# Stage 2: scene graphs from scripts
# --------------------------------------------------------------------------------------------------

SPATIAL = ("above", "beneath", "infrontof", "behind", "onthesideof", "in")
CONTACT = ("notcontacting", "touching", "leaningon", "sittingon", "standingon", "lyingon",
           "wearing", "coveredby", "haveitontheback", "otherrelationship")

# Where an object tends to be relative to the person (spatial weights) and how the person touches it
# when no action is using it (background contact weights). Holding, eating and the like never appear
# here: they come only from actions.
_OBJECT_TABLE = """
# object        above beneath front behind side in | notcontacting touching leaning sitting standing lying wearing covered back other
bag               0     2      5     1     3   0  |  8  2  0  0  0  0  0  0  1  0
bed               0     4      3     1     2   2  |  4  2  1  2  0  2  0  0  0  0
blanket           0     2      4     1     2   0  |  5  3  0  0  0  0  0  2  0  0
book              0     1      6     0     3   0  |  7  3  0  0  0  0  0  0  0  0
box               0     2      5     1     3   0  |  8  2  0  0  0  0  0  0  0  0
broom             0     0      5     1     4   0  |  7  3  0  0  0  0  0  0  0  0
chair             0     3      3     3     3   0  |  5  2  2  4  0  0  0  0  0  0
closetcabinet     1     0      6     1     3   1  |  8  2  1  0  0  0  0  0  0  0
clothes           0     1      5     0     3   1  |  5  3  0  0  0  0  3  0  0  0
cupglassbottle    0     1      6     0     3   0  |  8  2  0  0  0  0  0  0  0  0
dish              0     2      6     0     3   0  |  8  2  0  0  0  0  0  0  0  0
door              0     0      6     2     3   0  |  8  2  1  0  0  0  0  0  0  0
doorknob          0     0      6     1     3   0  |  8  2  0  0  0  0  0  0  0  0
doorway           0     0      4     2     2   3  |  9  0  1  0  0  0  0  0  0  0
floor             0     9      0     0     0   0  |  3  0  0  1  6  0  0  0  0  0
food              0     2      6     0     3   0  |  8  2  0  0  0  0  0  0  0  0
groceries         0     2      6     0     3   0  |  8  2  0  0  0  0  0  0  0  0
laptop            0     2      6     0     2   0  |  7  3  0  0  0  0  0  0  0  0
light             5     0      2     1     2   0  |  9  1  0  0  0  0  0  0  0  0
medicine          0     1      6     0     3   0  |  8  2  0  0  0  0  0  0  0  0
mirror            0     0      7     1     2   0  |  9  1  0  0  0  0  0  0  0  0
papernotebook     0     2      6     0     2   0  |  7  3  0  0  0  0  0  0  0  0
phonecamera       0     1      6     0     3   0  |  7  3  0  0  0  0  0  0  0  0
picture           2     0      6     1     2   0  |  9  1  0  0  0  0  0  0  0  0
pillow            0     2      4     2     3   0  |  6  3  1  0  0  0  0  0  0  0
refrigerator      0     0      6     1     3   0  |  8  2  1  0  0  0  0  0  0  0
sandwich          0     1      6     0     3   0  |  8  2  0  0  0  0  0  0  0  0
shelf             2     1      5     1     3   0  |  8  2  1  0  0  0  0  0  0  0
shoe              0     4      3     0     2   0  |  5  2  0  0  0  0  4  0  0  0
sofacouch         0     4      3     3     2   0  |  4  2  2  4  0  1  0  0  0  0
table             0     2      6     1     3   0  |  6  3  3  0  0  0  0  0  0  0
television        0     0      7     1     2   0  | 10  0  0  0  0  0  0  0  0  0
towel             0     1      5     0     3   0  |  6  3  0  0  0  0  0  0  0  1
vacuum            0     1      5     1     3   0  |  7  3  0  0  0  0  0  0  0  0
window            0     0      6     3     2   0  | 10  0  0  0  0  0  0  0  0  0
"""

# Actions whose person-object relation is not (only) what their verb implies (vocab.verb_implies):
# sitting *at* a table is not sitting on it; talking on a phone, drinking and eating hold the thing.
_ACTION_RELATIONS = {
    "c011": (),  # sitting at a table: contact comes from the background table
    "c013": ("wiping",),  # washing a table
    "c019": ("holding",),  # talking on a phone
    "c038": ("holding",),  # washing something with a towel
    "c065": ("eating", "holding"),  # eating a sandwich
    "c091": ("wiping",),  # washing a window
    "c095": ("wiping",),  # washing a mirror
    "c102": ("holding",),  # tidying up with a broom
    "c106": ("drinkingfrom", "holding"),  # drinking from a cup
    "c126": (),  # throwing something on the floor: the floor is not touched
    "c133": ("lyingon",),  # awakening in bed
    "c140": ("twisting",),  # fixing a doorknob
    "c141": ("twisting",),  # grasping onto a doorknob
    "c145": ("writingon",),  # working on paper
}
# an action that puts the person on the object puts the object beneath them
_SPATIAL_OF_CONTACT = {"sittingon": "beneath", "lyingon": "beneath", "standingon": "beneath"}

# Background and relation densities, tuned toward Action Genome's (see the module docstring).
OBJECT_PAD = 0.03  # mean time (share of the video) an action's object is seen before / after it
SCENE_WINDOW = (0.2, 0.6)  # share of the video a scene object stays in view
DROPOUT = 0.4  # chance a background object is not annotated at a keyframe where it is in view
P_COVERED = 0.55  # an action's object is annotated at a keyframe of the action not sampled for it
P_ATTENTION = 0.97  # an annotated object gets an attention relation
P_LOOK_ACTIVE, P_LOOK_BACKGROUND = 0.6, 0.2  # looking at it, while an action uses it / otherwise
P_UNSURE = 0.03
P_KEEP = 0.8  # a spatial / contact relation keeps the video's usual one (else a fresh draw)
P_SECOND_SPATIAL = 0.3  # a second spatial relation; brings relations per object to AG's 3.6
P_SECOND_CONTACT = 0.1  # background: an extra 'touching' next to the drawn contact


class _SceneTables:
    """Per-vocabulary tables for scene synthesis (numpy, built once)."""

    def __init__(self) -> None:
        v = vocab()
        O, R, A = v.num_objects, v.num_relations, v.num_actions
        self.R = R
        rel = v.relation_index
        self.spatial_ids = np.array([rel(n) for n in SPATIAL])
        self.contact_ids = np.array([rel(n) for n in CONTACT])
        self.look, self.notlook, self.unsure = rel("lookingat"), rel("notlookingat"), rel("unsure")
        self.touching = rel("touching")
        self.contact_mask = v.relation_mask("contact")
        spatial_w = np.zeros((O, len(SPATIAL)))
        contact_w = np.zeros((O, len(CONTACT)))
        spatial_w[:, SPATIAL.index("infrontof")] = 1  # person: never annotated, keeps rows valid
        contact_w[:, 0] = 1
        for line in _OBJECT_TABLE.strip().splitlines():
            if line.startswith("#"):
                continue
            name, rest = line.split(maxsplit=1)
            sp, co = rest.split("|")
            spatial_w[v.object_index(name)] = [float(x) for x in sp.split()]
            contact_w[v.object_index(name)] = [float(x) for x in co.split()]
        self.spatial_cdf = np.cumsum(spatial_w / spatial_w.sum(1, keepdims=True), 1)
        self.contact_cdf = np.cumsum(contact_w / contact_w.sum(1, keepdims=True), 1)

        # what each action puts between the person and its object: bool[A, R] (AG relations only),
        # closed under the entailments between AG relations (holding => touching, ...)
        closure = v.entailment_closure()
        self.action_rel = np.zeros((A, R), dtype=bool)
        self.action_spatial = np.full(A, -1)  # forced spatial relation or -1
        for a in range(A):
            names = _ACTION_RELATIONS.get(v.actions[a])
            if names is None:
                implied = v.verb_implies[v.action_verb[a]]
                ids = [implied] if implied >= 0 else []
            else:
                ids = [rel(n) for n in names]
            for r in ids:
                self.action_rel[a] |= closure[r]
                if v.relations[r] in _SPATIAL_OF_CONTACT:
                    self.action_spatial[a] = rel(_SPATIAL_OF_CONTACT[v.relations[r]])
        self.action_rel &= v.relation_mask("attention", "spatial", "contact")[None, :]
        self.action_object = np.array(v.action_object)
        self.num_objects = O


@functools.cache
def _scene_tables() -> _SceneTables:
    return _SceneTables()


def _draw(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Categorical draws: row-wise CDFs ``cdf`` float[..., K] and uniforms ``u`` float[...] -> int[...]."""
    return np.minimum((u[..., None] > cdf).sum(-1), cdf.shape[-1] - 1)


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


def _scene_rng(seed: int, video_id: str) -> np.random.Generator:
    return np.random.default_rng([seed, _SCENE_STREAM, int.from_bytes(video_id.encode(), "big")])


class _SceneObjectModel:
    """How many and which scene objects (not used by the video's actions) a synthetic video lists."""

    def __init__(self, profile: dict) -> None:
        counts = np.asarray(profile["scene_objects_per_video"], dtype=np.float64)
        names = sorted(profile["scene_objects"])
        freq = np.array([profile["scene_objects"][n] for n in names], dtype=np.float64)
        self.count_cdf = np.cumsum(counts) / counts.sum()
        self.ids = np.array([vocab().object_index(n) for n in names], dtype=np.int64)
        self.p = freq / freq.sum()

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        k = min(int(np.searchsorted(self.count_cdf, rng.random(), side="right")), len(self.ids))
        return rng.choice(self.ids, size=k, replace=False, p=self.p) if k else np.zeros(0, dtype=np.int64)


@functools.cache
def _default_scene_object_model() -> _SceneObjectModel:
    return _SceneObjectModel(load_profile())


def synthesize_scene(script: Script, seed: int, *, scene_objects: Sequence[int] | None = None,
                     profile: dict | None = None) -> VideoScene:
    """The raw scene graph of one script (AG relations only; verb columns stay False).

    ``scene_objects``: AG object indices seen in the video besides its actions' objects (a real
    video's listed objects); None draws them from the profile. The result depends only on
    ``seed``, the script and ``scene_objects``.
    """
    model = _default_scene_object_model() if profile is None else _SceneObjectModel(profile)
    return _synthesize_scene(script, _check_seed(seed), scene_objects, model)


def _synthesize_scene(script: Script, seed: int, scene_objects: Sequence[int] | None,
                      object_model: _SceneObjectModel) -> VideoScene:
    t = _scene_tables()
    rng = _scene_rng(seed, script.video_id)
    O, R = t.num_objects, t.R

    # -- instances, clipped into the video (some Charades rows end after the video or before they start)
    acts = np.asarray([(c, s, e) for c, s, e in script.actions], dtype=np.float64).reshape(-1, 3)
    cls = acts[:, 0].astype(np.int64)
    length = float(script.length_secs)
    top = length if length > 0 else (float(acts[:, 2].max()) if len(acts) else 0.0)
    start = np.clip(acts[:, 1], 0, top)
    end = np.clip(np.maximum(acts[:, 2], acts[:, 1]), start, top)
    N = len(cls)

    # -- keyframes, the instances each was sampled for, and the instances covering them (with
    # SceneBatch.inst_frames' float32 test)
    frame_ids, sampled = sample_keyframes(start, end, top)  # sampled: bool[F, N]
    secs = (frame_ids / FPS).astype(np.float32)
    F = len(frame_ids)
    start32, end32 = start.astype(np.float32), end.astype(np.float32)
    inside = (secs[:, None] >= start32[None, :]) & (secs[:, None] <= end32[None, :])  # [F, N]

    # -- relations the running actions put on their objects (scatter, not matmul: BLAS threads
    # cost more than they save on these tiny products)
    obj_of = t.action_object[cls]  # [N], -1 = none
    has_obj = obj_of != NO_OBJECT
    f_run, n_run = np.nonzero(inside & has_obj[None, :])  # (keyframe, instance) pairs with an object
    active = np.zeros((F, O), dtype=bool)  # an action is using object o at keyframe f
    active[f_run, obj_of[n_run]] = True
    # labelled where sampled for one of those actions, elsewhere in their intervals only sometimes
    # (annotators label what the person handles in the frame they were given)
    f_own, n_own = np.nonzero(sampled & has_obj[None, :])
    labelled = np.zeros((F, O), dtype=bool)
    labelled[f_own, obj_of[n_own]] = True
    labelled |= active & (rng.random((F, O)) < P_COVERED)
    rel = np.zeros((F * O, R), dtype=bool)
    np.logical_or.at(rel, f_run * O + obj_of[n_run], t.action_rel[cls[n_run]])
    rel = rel.reshape(F, O, R)
    forced_spatial = np.full((F, O), -1)
    sp = t.action_spatial[cls[n_run]]
    forced_spatial[f_run[sp >= 0], obj_of[n_run][sp >= 0]] = sp[sp >= 0]

    # -- which objects are in view: action objects around their instances, scene objects in a window
    u_pad = rng.exponential(OBJECT_PAD * top, size=(N, 2))
    near = (secs[:, None] >= start32 - u_pad[:, 0]) & (secs[:, None] <= end32 + u_pad[:, 1])
    f_near, n_near = np.nonzero(near & has_obj[None, :])
    in_view = np.zeros((F, O), dtype=bool)
    in_view[f_near, obj_of[n_near]] = True
    scene = (np.asarray(scene_objects, dtype=np.int64) if scene_objects is not None
             else object_model.draw(rng))
    # the person is never an annotated object; objects the actions use are already placed above
    scene = np.setdiff1d(scene, np.concatenate([[0], obj_of[has_obj]]))
    width = rng.uniform(*SCENE_WINDOW, size=len(scene)) * top
    lo = rng.uniform(0, 1, size=len(scene)) * (top - width)
    in_window = (secs[:, None] >= lo) & (secs[:, None] <= lo + width)  # [F, S]
    in_view[:, scene] |= in_window
    # an object an action is using is annotated with that action's relations or not at all
    obj = labelled | (in_view & ~active & (rng.random((F, O)) >= DROPOUT))
    obj[:, 0] = False

    # -- attention on most annotated objects; the action's meaning can force looking at
    u = rng.random((5, F, O))
    forced_look = rel[:, :, t.look]
    has_att = obj & (forced_look | (u[0] < P_ATTENTION))
    p_look = np.where(active, P_LOOK_ACTIVE, P_LOOK_BACKGROUND)
    look = has_att & (forced_look | (u[1] < p_look))
    unsure = has_att & ~look & (u[1] > 1 - P_UNSURE)
    rel[:, :, t.look] |= look
    rel[:, :, t.notlook] |= has_att & ~look & ~unsure
    rel[:, :, t.unsure] |= unsure

    # -- spatial: the video's usual place of each object, sometimes another, sometimes a second one
    usual = _draw(t.spatial_cdf, rng.random(O))  # [O]
    fresh = _draw(t.spatial_cdf, u[2])  # [F, O]
    first = t.spatial_ids[np.where(u[3] < P_KEEP, usual[None, :], fresh)]
    first = np.where(forced_spatial >= 0, forced_spatial, first)
    second = t.spatial_ids[_draw(t.spatial_cdf, rng.random((F, O)))]
    f_idx, o_idx = np.nonzero(obj)
    rel[f_idx, o_idx, first[f_idx, o_idx]] = True
    two = (u[4] < P_SECOND_SPATIAL)[f_idx, o_idx]
    rel[f_idx[two], o_idx[two], second[f_idx, o_idx][two]] = True

    # -- contact: the action's when an action touches the object, else a background one
    touched = rel[:, :, t.contact_mask].any(-1)
    usual_c = _draw(t.contact_cdf, rng.random(O))
    u_c = rng.random((3, F, O))
    contact = t.contact_ids[np.where(u_c[0] < P_KEEP, usual_c[None, :], _draw(t.contact_cdf, u_c[1]))]
    bg = obj & ~touched
    f_idx, o_idx = np.nonzero(bg)
    c = contact[f_idx, o_idx]
    rel[f_idx, o_idx, c] = True
    extra = (u_c[2] < P_SECOND_CONTACT)[f_idx, o_idx] & (c != t.touching) & (c != t.contact_ids[0])
    rel[f_idx[extra], o_idx[extra], t.touching] = True

    rel &= obj[:, :, None]
    return VideoScene(
        video_id=script.video_id, frame_ids=frame_ids, frame_secs=secs, rel=rel, obj=obj,
        inst_cls=cls, inst_start=start32, inst_end=end32, split=script.split,
    ).sorted()


def synthesize(n_videos: int = DEFAULT_VIDEOS, seed: int = 0, profile: dict | None = None) -> Iterator[VideoScene]:
    """The default dataset: ``n_videos`` synthetic Charades-like videos as raw scene graphs."""
    object_model = _default_scene_object_model() if profile is None else _SceneObjectModel(profile)
    for script in sample_scripts(n_videos, seed, profile):
        yield _synthesize_scene(script, seed, None, object_model)


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
    seed = _check_seed(seed)
    for v in videos:
        script = Script(v.video_id, v.split, float(v.length_secs),
                        tuple((_action_class(c), float(s), float(e)) for c, s, e in v.actions))
        yield _synthesize_scene(script, seed, _charades_objects(v.objects), None)
