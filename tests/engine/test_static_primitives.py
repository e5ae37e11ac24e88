"""CLEVR's functions: vectorized primitives against their scalar twins on random scenes
(hypothesis), and hand-worked scenes for relate / same_* / unique edge cases."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings, strategies as st

from tensorqa.clevr import run_program
from tensorqa.engine.primitives import registry, static
from tensorqa.scenes.clevr_sampler import sample_scene
from tensorqa.scenes.static_batch import ATTRS, RELATIONS, StaticBatch, StaticScene, clevr_vocab

V = clevr_vocab()


def _scenes(seed: int, n: int = 6):
    return [sample_scene(np.random.default_rng([seed, i]), i) for i in range(n)]


def _set(vec_row: torch.Tensor) -> list[int]:
    return [int(i) for i in torch.nonzero(vec_row).flatten()]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 9))
def test_every_function_matches_its_scalar_twin(seed, pick):
    scenes = _scenes(seed)
    b = StaticBatch.from_scenes(scenes)
    P, N = b.mask.shape
    rng = np.random.default_rng(seed)
    sets = torch.from_numpy(rng.random((P, N)) < 0.5) & b.mask
    sets2 = torch.from_numpy(rng.random((P, N)) < 0.5) & b.mask
    objs = torch.tensor([int(rng.integers(0, s.num_objects)) for s in scenes])
    js = [s.to_json() for s in scenes]
    tw = registry.scalar
    for p in range(P):
        assert _set(static.scene(b.mask)[p]) == tw("clevr_scene")(js[p], [], [])
    for k, a in enumerate(ATTRS):
        val = torch.full((P,), pick % len(V.values(a)))
        out = registry.lookup(f"clevr_filter_{a}")(sets, b.attrs, val)
        same = registry.lookup(f"clevr_same_{a}")(objs, b.attrs, b.mask)
        q = registry.lookup(f"clevr_query_{a}")(objs, b.attrs)
        for p in range(P):
            assert _set(out[p]) == tw(f"clevr_filter_{a}")(js[p], [_set(sets[p])], [V.values(a)[int(val[p])]])
            assert _set(same[p]) == tw(f"clevr_same_{a}")(js[p], [int(objs[p])], [])
            assert V.values(a)[int(q[p])] == tw(f"clevr_query_{a}")(js[p], [int(objs[p])], [])
    for r, name in enumerate(RELATIONS):
        out = registry.lookup("clevr_relate")(objs, b.rel, torch.full((P,), r))
        for p in range(P):
            assert _set(out[p]) == tw("clevr_relate")(js[p], [int(objs[p])], [name])
    u = registry.lookup("clevr_unique")(sets)
    un, it = registry.lookup("clevr_union")(sets, sets2), registry.lookup("clevr_intersect")(sets, sets2)
    c, c2 = registry.lookup("clevr_count")(sets), registry.lookup("clevr_count")(sets2)
    e = registry.lookup("clevr_exist")(sets)
    for p in range(P):
        s1, s2 = _set(sets[p]), _set(sets2[p])
        want = tw("clevr_unique")(js[p], [s1], [])
        assert (int(u[p]) if u[p] >= 0 else "__INVALID__") == want
        assert _set(un[p]) == tw("clevr_union")(js[p], [s1, s2], [])
        assert _set(it[p]) == tw("clevr_intersect")(js[p], [s1, s2], [])
        assert int(c[p]) == tw("clevr_count")(js[p], [s1], [])
        assert bool(e[p]) == tw("clevr_exist")(js[p], [s1], [])
        for fn in ("equal_integer", "less_than", "greater_than"):
            assert bool(registry.lookup(f"clevr_{fn}")(c, c2)[p]) == tw(f"clevr_{fn}")(js[p], [int(c[p]), int(c2[p])], [])


def _hand_scene() -> StaticScene:
    """Three objects on a line, left to right: 0 large red metal cube, 1 small red rubber sphere,
    2 large blue metal cube. left[i] = objects to the left of i, ..."""
    attrs = np.array([[V.size.index("large"), V.color.index("red"), V.material.index("metal"), V.shape.index("cube")],
                      [V.size.index("small"), V.color.index("red"), V.material.index("rubber"), V.shape.index("sphere")],
                      [V.size.index("large"), V.color.index("blue"), V.material.index("metal"), V.shape.index("cube")]])
    rel = np.zeros((3, 3, 4), bool)
    for i in range(3):
        for j in range(3):
            rel[i, j, 0] = j < i  # j left of i
            rel[i, j, 1] = j > i
    rel[0, 1, 2] = rel[1, 0, 3] = True  # 1 behind 0, 0 in front of 1
    return StaticScene("CLEVR_new_000007.png", "new", attrs, rel, np.zeros((3, 3), np.float32), 7)


def test_hand_worked_relate_same_unique():
    s = _hand_scene()
    prog = lambda *nodes: [{"type": t, "inputs": i, "side_inputs": v} for t, i, v in nodes]  # noqa: E731
    red_unique = prog(("scene", [], []), ("filter_color", [0], ["red"]), ("unique", [1], []))
    assert run_program(red_unique, s) == "__INVALID__"  # two red things: unique fails
    sphere = prog(("scene", [], []), ("filter_shape", [0], ["sphere"]), ("unique", [1], []))
    assert run_program(sphere, s) == 1
    assert run_program(sphere + prog(("relate", [2], ["left"])), s) == [0]
    assert run_program(sphere + prog(("relate", [2], ["right"]), ("count", [3], [])), s) == 1
    assert run_program(sphere + prog(("relate", [2], ["front"])), s) == [0]
    assert run_program(sphere + prog(("relate", [2], ["behind"])), s) == []
    # same_color excludes the sphere itself; same_size on the sphere is empty
    assert run_program(sphere + prog(("same_color", [2], [])), s) == [0]
    assert run_program(sphere + prog(("same_size", [2], []), ("exist", [3], [])), s) is False
    cube0 = prog(("scene", [], []), ("filter_color", [0], ["red"]), ("filter_shape", [1], ["cube"]), ("unique", [2], []))
    assert run_program(cube0 + prog(("same_shape", [3], [])), s) == [2]
    # the value_inputs spelling and 'function' key (released v1.0) run the same
    alt = [{"function": n["type"], "inputs": n["inputs"], "value_inputs": n["side_inputs"]} for n in sphere]
    assert run_program(alt + [{"function": "query_material", "inputs": [2], "value_inputs": []}], s) == "rubber"
    # the vectorized forms on the same scene
    b = StaticBatch.from_scenes([s])
    one = torch.tensor([1])
    assert _set(static.relate(one, b.rel, torch.tensor([0]))[0]) == [0]
    assert _set(registry.lookup("clevr_same_color")(one, b.attrs, b.mask)[0]) == [0]
    assert int(static.unique(static.filter_key(b.mask, b.attrs, torch.tensor([[-1, 0 + V.color.index("red"), -1, -1]])))[0]) == -1
    assert int(static.unique(b.mask & torch.tensor([[False, False, True]]))[0]) == 2
