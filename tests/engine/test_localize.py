"""The window rule's twins agree: the vectorized ``localize.window_frames`` (through the
``localize`` primitive the grid runs) and the scalar twin ``registry.scalar("localize")`` give
the same windows, offered or not, on random scene graphs; and every registered primitive has a
scalar twin under its own name."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from tensorqa import vocab
from tensorqa.engine.primitives import registry
from tensorqa.engine.primitives.localize import localize
from tensorqa.engine.scalar import twin
from tensorqa.engine.scalar.video import NoAnswer, ScalarVideo
from tensorqa.agqa.semantics import AGQA, STRICT
from tensorqa.scenes.batch import SceneBatch, VideoScene
from tensorqa.engine.windows import WINDOW_KINDS


def _scene(rng: np.random.Generator, video_id: str) -> VideoScene:
    """Keyframes over 10 s and a few instances of a few classes that cover some of them (repeated
    classes, shared keyframes, instances between keyframes, c044 among the classes)."""
    v = vocab()
    F = int(rng.integers(0, 12))
    ids = np.sort(rng.choice(240, F, replace=False))
    N = int(rng.integers(0, 7))
    classes = rng.choice([v.action_index("c044"), 3, 10, 57, 120], N)
    start = rng.random(N) * 10
    return VideoScene(video_id=video_id, frame_ids=ids, frame_secs=ids / 24.0,
                      rel=np.zeros((F, v.num_objects, v.num_relations), bool), obj=np.zeros((F, v.num_objects), bool),
                      inst_cls=classes, inst_start=start, inst_end=start + rng.random(N) * 4, split="train").sorted()


def test_every_primitive_has_a_scalar_twin():
    import tensorqa.engine.scalar  # noqa: F401  (registers the twins)

    missing = [n for n in registry.names() if "scalar" not in registry.implementations(n)]
    assert not missing, f"primitives without a scalar twin: {missing}"


def _scalar_windows(video: ScalarVideo, sem, actions: list[int]) -> set[tuple]:
    """Every offered (kind, x, y, first, last + 1) of the scalar twin."""
    out = set()
    loc = twin("localize")
    w = loc(video, sem, "video")
    out.add(("video", -1, -1, 0, video.num_frames))
    for kind in ("before", "after", "while"):
        for x in actions:
            try:
                w = loc(video, sem, kind, x)
            except NoAnswer:
                continue
            out.add((kind, x, -1, w.frames[0], w.frames[-1] + 1))
    for x in actions:
        for y in actions:
            try:
                w = loc(video, sem, "between", x, y)
            except NoAnswer:
                continue
            out.add(("between", x, y, w.frames[0], w.frames[-1] + 1))
    return out


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), strict=st.booleans())
def test_window_rule_torch_and_scalar_agree(seed, strict):
    sem = STRICT if strict else AGQA
    rng = np.random.default_rng(seed)
    scenes = [_scene(rng, f"V{i}") for i in range(4)]
    batch = SceneBatch.from_scenes(scenes)
    w = localize(batch, sem)
    for b, scene in enumerate(scenes):
        got = set()
        for j in np.flatnonzero(w.valid[b].numpy()):
            kind = WINDOW_KINDS[int(w.word[b, j])]
            x, y = (int(a) for a in w.action[b, j])
            got.add((kind, x if kind != "video" else -1, y if kind == "between" else -1,
                     int(w.start[b, j]), int(w.stop[b, j])))
        video = ScalarVideo(scene)
        actions = sorted({i.cls for i in video.instances})
        assert got == _scalar_windows(video, sem, actions), scene.video_id
