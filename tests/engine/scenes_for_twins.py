"""Random scenes for the primitive-vs-scalar-twin tests (tests/engine/test_<family>.py), and the
glue that runs both twins on them: the grid's flat windows (``localize(...).rows()``, what the
grid evaluators hand every window primitive) and the scalar ``Window`` of each row.

Scenes are built to hit the interesting cases rather than to look like Charades: keyframes over
~10 s (some on the half-second grid the instance edges may also sit on), a few instances of a
few classes (repeats, ties in start / end, lengths long enough to clear the 7 s margin), and
relations from a small set of objects and relations with runs (so that episodes start and stop
inside windows, stretches span keyframes, both objects of a Choose pair show up, and an action's
(object, verb relation) pair occurs for actTime's persistence check).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import torch

from tensorqa import vocab
from tensorqa.engine.primitives.localize import localize
from tensorqa.engine.scalar.video import Window
from tensorqa.scenes.batch import SceneBatch, VideoScene
from tensorqa.engine.windows import WINDOW_KINDS

# c044 (never localizes), c003, c010, c057, c120; their (object, verb relation) pairs are
# (5, 44), (9, 46), (31, 19), (29, 49), (11, 44): all inside OBJECTS x RELATIONS
ACTIONS = (44, 3, 10, 57, 120)
OBJECTS = (5, 9, 11, 29, 31)
# lookingat (no contact), carrying, holding, notcontacting, otherrelationship, sittingon (a contact
# and c010's verb relation), and the verb relations of c120 / c044, c003, c057
RELATIONS = (0, 9, 14, 17, 18, 19, 44, 46, 49)


def random_scene(rng: np.random.Generator, video_id: str, max_frames: int = 12) -> VideoScene:
    v = vocab()
    F = int(rng.integers(0, max_frames + 1))
    ids = np.sort(rng.choice(240, F, replace=False))
    if rng.random() < 0.5:  # keyframes on the half-second grid: instance edges can sit on them
        ids = np.sort(rng.choice(20, F, replace=False) * 12) if F <= 20 else ids
    secs = ids / 24.0
    rel = np.zeros((F, v.num_objects, v.num_relations), bool)
    for _ in range(int(rng.integers(0, 9))):  # a few (object, relation) pairs with runs
        o, r = int(rng.choice(OBJECTS)), int(rng.choice(RELATIONS))
        state = rng.random() < 0.5
        for f in range(F):
            if rng.random() < 0.35:
                state = not state
            rel[f, o, r] |= state
    N = int(rng.integers(0, 7))
    classes = rng.choice(ACTIONS, N)
    if rng.random() < 0.5:  # on the half-second grid: ties in start and end
        start = rng.integers(0, 20, N) / 2.0
        end = start + rng.integers(0, 21, N) / 2.0
    else:  # short and long instances: gaps of more than the 7 s length margin occur
        start = rng.random(N) * 10
        end = start + rng.random(N) * rng.choice([1.0, 3.0, 12.0], N)
    for c in classes:  # now and then an action's (object, verb relation) pair: actTime's persistence
        o, r = v.action_object[c], v.verb_relation[v.action_verb[c]]
        if F and rng.random() < 0.4:
            rel[int(rng.integers(0, F)), o, r] = True
    obj = rel.any(-1) | (rng.random((F, v.num_objects)) < 0.02)
    return VideoScene(video_id=video_id, frame_ids=ids, frame_secs=secs, rel=rel, obj=obj,
                      inst_cls=classes, inst_start=start, inst_end=end, split="train").sorted()


def random_batch(seed: int, videos: int = 4) -> tuple[list[VideoScene], SceneBatch]:
    rng = np.random.default_rng(seed)
    scenes = [random_scene(rng, f"V{i}") for i in range(videos)]
    return scenes, SceneBatch.from_scenes(scenes)


def flat_windows(batch: SceneBatch, sem):
    """The offered windows of the batch in the flat layout [V], as the grid evaluates on them."""
    return localize(batch, sem).rows()


def scalar_window(flat, v: int) -> tuple[int, Window]:
    """(video position, scalar Window) of flat row v: the word the program says, the frames."""
    kind = WINDOW_KINDS[int(flat.word[v])]
    return int(flat.video[v]), Window(kind, list(range(int(flat.start[v]), int(flat.stop[v]))))


def all_rel(batch: SceneBatch) -> torch.Tensor:
    """bool[B, F, O, R]: ``batch.rel`` with padded keyframes cleared (the grid's "all" domain)."""
    return batch.rel & batch.frame_mask[:, :, None, None]


def assert_cases_occur(name: str, tally: Counter, cases: list[str]) -> None:
    """The differential tests of one module met each of ``cases`` on their random scenes (``tally``
    counts the cases as those tests run, earlier in the same module): a differential test that never
    meets a case has not tested it. The cases listed are ones the random scenes produce tens of times
    or more per run, so a miss means the generator of scenes or the test lost them."""
    import pytest

    if not tally:
        pytest.skip(f"{name}: the differential tests did not run in this session (deselected)")
    missing = [c for c in cases if tally[c] == 0]
    assert not missing, f"{name}: no random scene gave {missing}; counts: {dict(sorted(tally.items()))}"


def same_as_torch_kernel(name: str, *args) -> None:
    """The kernel backend of primitive ``name`` gives exactly its torch backend's results on
    ``args``, run on the CPU under Triton's interpreter (the callers skip without Triton;
    tests/kernels/test_kernels.py has the thorough kernel tests, off-path sizes included)."""
    import os

    from tensorqa.engine.primitives import registry

    impls = registry.implementations(name)
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"  # kernels read it at launch
    try:
        got = impls["kernel"](*args)
    finally:
        if before is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = before
    expected = impls["torch"](*args)
    got, expected = (got if isinstance(got, tuple) else (got,)), (expected if isinstance(expected, tuple) else (expected,))
    assert len(got) == len(expected), name
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype and torch.equal(g, e), name
