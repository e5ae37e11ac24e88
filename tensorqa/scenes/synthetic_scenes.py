"""Stage 2 of the embedded default dataset: a script (synthetic or a real Charades video) becomes a
raw Action Genome style scene graph: keyframes where AG would sample them
(:mod:`tensorqa.scenes.synthetic_keyframes`), person-object relations that follow each action's
meaning, and a thin background of objects with attention, spatial and contact relations. Scenes
are "raw": AG relations only, verb relation columns all False (augmentation adds those).

Why it looks the way it does (targets, Action Genome's densities: per AGQA video about 24
keyframes, 2.0 objects per keyframe, 3.6 relations per object; the densities reached:
(measurements: benchmarks/RESULTS.md, 'synthetic scenes')):

* Objects. AG annotators label the objects the person interacts with in the frame at hand. An
  action's object is therefore annotated, with the relations the action implies, at every
  keyframe sampled for that action, but only with probability ``P_COVERED`` at the other
  keyframes the action spans (long background actions such as sitting on a sofa are not labelled
  in every frame of the video); annotating the objects of all running actions everywhere would
  give far too many objects per keyframe, since Charades actions overlap so much. Where an
  action's object is not labelled it is not annotated at all, so an annotated object never
  contradicts a running action. Scene objects and action objects just before / after their
  action form a thin background.
* Relations per object: one attention relation (``P_ATTENTION``), one or two spatial ones (the
  second at ``P_SECOND_SPATIAL``, set so that the total comes to AG's 3.6) and the action's
  contact relations or a background one.

The scene of a video uses a generator seeded with ``seed`` and its video id, so a real video's
graph does not depend on which other videos are packed with it.
"""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from tensorqa.scenes.profile import load_profile
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.vocab import NO_OBJECT, vocab
from tensorqa.scenes.synthetic_keyframes import FPS, sample_keyframes
from tensorqa.scenes.synthetic_scripts import Script, check_seed

_SCENE_STREAM = 0x5CE7E  # keeps the scene generator's stream apart from the script generator's


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
# chance a background object is not annotated at a keyframe where it is in view: AG annotates the
# objects the person interacts with, so a scene object is mostly left out (raw graphs keep AG's
# 2.0 objects per keyframe; objWhatGeneral, which needs one object in W, comes to Table 14's count)
DROPOUT = 0.65
P_COVERED = 0.55  # an action's object is annotated at a keyframe of the action not sampled for it
P_ATTENTION = 0.97  # an annotated object gets an attention relation
P_LOOK_ACTIVE, P_LOOK_BACKGROUND = 0.6, 0.2  # looking at it, while an action uses it / otherwise
P_UNSURE = 0.03
P_KEEP = 0.9  # a spatial / contact relation keeps the video's usual one (else a fresh draw): AG's persist
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


def _scene_rng(seed: int, video_id: str) -> np.random.Generator:
    return np.random.default_rng([seed, _SCENE_STREAM, int.from_bytes(video_id.encode(), "big")])


class SceneObjectModel:
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
def default_scene_object_model() -> SceneObjectModel:
    return SceneObjectModel(load_profile())


def synthesize_scene(script: Script, seed: int, *, scene_objects: Sequence[int] | None = None,
                     profile: dict | None = None) -> VideoScene:
    """The raw scene graph of one script (AG relations only; verb columns stay False).

    ``scene_objects``: AG object indices seen in the video besides its actions' objects (a real
    video's listed objects); None draws them from the profile. The result depends only on
    ``seed``, the script and ``scene_objects``.
    """
    model = default_scene_object_model() if profile is None else SceneObjectModel(profile)
    return synthesize_scene_pieces(script, check_seed(seed), scene_objects, model)


def synthesize_scene_pieces(script: Script, seed: int, scene_objects: Sequence[int] | None,
                      object_model: SceneObjectModel) -> VideoScene:
    """:func:`synthesize_scene`'s stages, in the order they draw from the video's generator."""
    t = _scene_tables()
    rng = _scene_rng(seed, script.video_id)
    cls, start, end, top = _instances(script)
    # keyframes and the instances each was sampled for (sampled: bool[F, N]); the instances covering
    # them with SceneBatch.inst_frames' float32 test
    frame_ids, sampled = sample_keyframes(start, end, top)
    secs = (frame_ids / FPS).astype(np.float32)
    start32, end32 = start.astype(np.float32), end.astype(np.float32)
    inside = (secs[:, None] >= start32[None, :]) & (secs[:, None] <= end32[None, :])  # [F, N]
    active, labelled, rel, forced_spatial = _action_relations(t, rng, cls, inside, sampled)
    in_view = _in_view(t, rng, cls, secs, start32, end32, top, scene_objects, object_model)
    # an object an action is using is annotated with that action's relations or not at all
    obj = labelled | (in_view & ~active & (rng.random(active.shape) >= DROPOUT))
    obj[:, 0] = False
    u = rng.random((5, *obj.shape))
    _attention(t, rel, obj, active, u)
    _spatial(t, rng, rel, obj, forced_spatial, u)
    _contact(t, rng, rel, obj)
    rel &= obj[:, :, None]
    return VideoScene(
        video_id=script.video_id, frame_ids=frame_ids, frame_secs=secs, rel=rel, obj=obj,
        inst_cls=cls, inst_start=start32, inst_end=end32, split=script.split,
    ).sorted()


def _instances(script: Script) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The script's instances (class, start, end) clipped into the video (some Charades rows end
    after the video or before they start), and the video's end."""
    acts = np.asarray([(c, s, e) for c, s, e in script.actions], dtype=np.float64).reshape(-1, 3)
    length = float(script.length_secs)
    top = length if length > 0 else (float(acts[:, 2].max()) if len(acts) else 0.0)
    start = np.clip(acts[:, 1], 0, top)
    end = np.clip(np.maximum(acts[:, 2], acts[:, 1]), start, top)
    return acts[:, 0].astype(np.int64), start, end, top


def _action_relations(t, rng, cls, inside, sampled):
    """The relations the running actions put on their objects (scatter, not matmul: BLAS threads
    cost more than they save on these tiny products). Returns active bool[F, O] (an action is using
    object o at keyframe f), labelled bool[F, O] (annotated: where sampled for one of those actions,
    elsewhere in their intervals only sometimes, as annotators label what the person handles in the
    frame they were given), rel bool[F, O, R] and the spatial relation an action forces (-1: none)."""
    F, O = inside.shape[0], t.num_objects
    obj_of = t.action_object[cls]  # [N], -1 = none
    has_obj = obj_of != NO_OBJECT
    f_run, n_run = np.nonzero(inside & has_obj[None, :])  # (keyframe, instance) pairs with an object
    active = np.zeros((F, O), dtype=bool)
    active[f_run, obj_of[n_run]] = True
    f_own, n_own = np.nonzero(sampled & has_obj[None, :])
    labelled = np.zeros((F, O), dtype=bool)
    labelled[f_own, obj_of[n_own]] = True
    labelled |= active & (rng.random((F, O)) < P_COVERED)
    rel = np.zeros((F * O, t.R), dtype=bool)
    np.logical_or.at(rel, f_run * O + obj_of[n_run], t.action_rel[cls[n_run]])
    forced_spatial = np.full((F, O), -1)
    sp = t.action_spatial[cls[n_run]]
    forced_spatial[f_run[sp >= 0], obj_of[n_run][sp >= 0]] = sp[sp >= 0]
    return active, labelled, rel.reshape(F, O, t.R), forced_spatial


def _in_view(t, rng, cls, secs, start32, end32, top, scene_objects, object_model) -> np.ndarray:
    """bool[F, O]: the objects in view, action objects around their instances and scene objects in
    a window of the video."""
    obj_of = t.action_object[cls]
    has_obj = obj_of != NO_OBJECT
    u_pad = rng.exponential(OBJECT_PAD * top, size=(len(cls), 2))
    near = (secs[:, None] >= start32 - u_pad[:, 0]) & (secs[:, None] <= end32 + u_pad[:, 1])
    f_near, n_near = np.nonzero(near & has_obj[None, :])
    in_view = np.zeros((len(secs), t.num_objects), dtype=bool)
    in_view[f_near, obj_of[n_near]] = True
    scene = (np.asarray(scene_objects, dtype=np.int64) if scene_objects is not None
             else object_model.draw(rng))
    # the person is never an annotated object; objects the actions use are already placed above
    scene = np.setdiff1d(scene, np.concatenate([[0], obj_of[has_obj]]))
    width = rng.uniform(*SCENE_WINDOW, size=len(scene)) * top
    lo = rng.uniform(0, 1, size=len(scene)) * (top - width)
    in_view[:, scene] |= (secs[:, None] >= lo) & (secs[:, None] <= lo + width)  # [F, S]
    return in_view


def _attention(t, rel, obj, active, u) -> None:
    """Attention on most annotated objects; an action's meaning can force looking at."""
    forced_look = rel[:, :, t.look]
    has_att = obj & (forced_look | (u[0] < P_ATTENTION))
    p_look = np.where(active, P_LOOK_ACTIVE, P_LOOK_BACKGROUND)
    look = has_att & (forced_look | (u[1] < p_look))
    unsure = has_att & ~look & (u[1] > 1 - P_UNSURE)
    rel[:, :, t.look] |= look
    rel[:, :, t.notlook] |= has_att & ~look & ~unsure
    rel[:, :, t.unsure] |= unsure


def _spatial(t, rng, rel, obj, forced_spatial, u) -> None:
    """Spatial relations: the video's usual place of each object, sometimes another, sometimes a
    second one."""
    usual = _draw(t.spatial_cdf, rng.random(obj.shape[1]))  # [O]
    fresh = _draw(t.spatial_cdf, u[2])  # [F, O]
    first = t.spatial_ids[np.where(u[3] < P_KEEP, usual[None, :], fresh)]
    first = np.where(forced_spatial >= 0, forced_spatial, first)
    second = t.spatial_ids[_draw(t.spatial_cdf, rng.random(obj.shape))]
    f_idx, o_idx = np.nonzero(obj)
    rel[f_idx, o_idx, first[f_idx, o_idx]] = True
    two = (u[4] < P_SECOND_SPATIAL)[f_idx, o_idx]
    rel[f_idx[two], o_idx[two], second[f_idx, o_idx][two]] = True


def _contact(t, rng, rel, obj) -> None:
    """Contact: the action's where an action touches the object, else a background one."""
    touched = rel[:, :, t.contact_mask].any(-1)
    usual_c = _draw(t.contact_cdf, rng.random(obj.shape[1]))
    u_c = rng.random((3, *obj.shape))
    contact = t.contact_ids[np.where(u_c[0] < P_KEEP, usual_c[None, :], _draw(t.contact_cdf, u_c[1]))]
    f_idx, o_idx = np.nonzero(obj & ~touched)
    c = contact[f_idx, o_idx]
    rel[f_idx, o_idx, c] = True
    extra = (u_c[2] < P_SECOND_CONTACT)[f_idx, o_idx] & (c != t.touching) & (c != t.contact_ids[0])
    rel[f_idx[extra], o_idx[extra], t.touching] = True
