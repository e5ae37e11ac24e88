"""The Triton kernels (tensorqa.kernels) against their torch twins, on the CPU under Triton's
interpreter (``TRITON_INTERPRET=1``; kernels read it when they first launch, so a fixture can set
it after tensorqa was imported), plus hand-worked bit and episode examples, the dispatch rules
and, where there is a GPU, the compiled kernels on CUDA.

Random inputs are deliberately off the beaten path: odd sizes, keyframe counts around the word
size (1, 63, 64, 65, 130), window edges outside [0, F], windows that are not offered, empty axes.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

from tensorqa import kernels  # noqa: E402
from tensorqa.scenes.augment import augment_scene  # noqa: E402
from tensorqa.errors import TensorQAError  # noqa: E402
from tensorqa.agqa.grid import GridContext, evaluate  # noqa: E402
from tensorqa.kernels import bits, runtime  # noqa: E402
from tensorqa.kernels.bits import highest_bit, lowest_bit  # noqa: E402
from tensorqa.engine.primitives import filter as torch_filter, first_last as torch_first_last, registry  # noqa: E402
from tensorqa.engine.primitives import order as torch_order  # noqa: E402
from tensorqa.engine.primitives.localize import (  # noqa: E402
    CompareWindows, Windows, compare_windows, interval_mask, localize, present_actions,
)
from tensorqa.agqa.shapes import PROGRAM_SHAPES  # noqa: E402
from tensorqa.scenes.batch import SceneBatch, VideoScene  # noqa: E402
from tensorqa.agqa.semantics import AGQA, STRICT  # noqa: E402
from tensorqa.engine.primitives.filter import ANY_PRESENT, CONTACT_EXCEPT_NOT_CONTACTING # noqa: E402
from tensorqa.scenes.synthetic import synthesize  # noqa: E402

FRAME_COUNTS = (1, 5, 63, 64, 65, 130)
LOOSE_STOP = replace(AGQA, choose_stretch_includes_stop=False)


@pytest.fixture(autouse=True, scope="module")
def interpreter():
    """Triton's interpreter for every test here (CUDA tests switch it off themselves)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITON_INTERPRET", "1")
        yield


def _same(a, b):
    """Kernel and twin results agree exactly: same type, shapes, dtypes and values."""
    if isinstance(b, tuple):
        assert isinstance(a, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert a.shape == b.shape and a.dtype == b.dtype and a.device == b.device
    assert torch.equal(a, b)


def _same_call(kernel_fn, twin_fn, *args):
    """The kernel wrapper behaves as its twin: the same results, or the same kind of error (the
    wrappers hand inputs they do not take to the twin, errors included)."""
    try:
        expected = twin_fn(*args)
    except Exception as error:  # noqa: BLE001
        with pytest.raises(type(error)):
            kernel_fn(*args)
        return
    _same(kernel_fn(*args), expected)


def _windows(g: torch.Generator, B: int, F: int, V: int, flat: bool) -> Windows:
    """Random windows: edges in [-2, F + 2] (some empty or reversed), a fifth not offered; [V]
    flat rows, or [B, V] padded windows whose masks are their ranges."""
    shape = (V,) if flat else (B, V)
    start = torch.randint(-2, F + 3, shape, generator=g)
    stop = torch.randint(-2, F + 3, shape, generator=g)
    valid = torch.rand(shape, generator=g) < 0.8
    video = torch.randint(0, max(B, 1), shape, generator=g) if flat else torch.arange(B)[:, None]
    mask = interval_mask(start, stop, F)
    kind = torch.zeros(shape, dtype=torch.long)
    return Windows(mask, start, stop, kind, torch.full((*shape, 2), -1), valid, kind, video)


def _rel(g: torch.Generator, B: int, F: int, O: int, R: int, density: float = 0.3) -> torch.Tensor:
    """Random relations with runs (a keyframe repeats its predecessor half of the time), so that
    episodes and Choose stretches span several keyframes."""
    fresh = torch.rand(B, F, O, R, generator=g) < density
    keep = torch.rand(B, F, 1, 1, generator=g) < 0.5
    rel = fresh.clone()
    for f in range(1, F):  # test data only
        rel[:, f] = torch.where(keep[:, f], rel[:, f - 1], fresh[:, f])
    return rel


# --------------------------------------------------------------------------------------------------
# Bits
# --------------------------------------------------------------------------------------------------

def test_pack_hand_example():
    # keyframes 0, 2, 63 | 64, 69 of 70: word 0 has bits 0, 2 and 63 (the sign bit), word 1 has
    # bits 0 and 5
    mask = torch.zeros(1, 70, 1, dtype=torch.bool)
    mask[0, [0, 2, 63, 64, 69], 0] = True
    expected = torch.tensor([[[1 + 4 - 2 ** 63], [1 + 32]]])
    assert torch.equal(bits.pack_frames(mask), expected)
    assert torch.equal(bits.pack_frames_torch(mask), expected)
    assert torch.equal(bits.unpack_frames(expected, 70), mask)
    # the frame axis anywhere: a [2, 70] mask packed along its last axis
    assert torch.equal(bits.pack_frames(mask[..., 0].expand(2, 70), dim=1), expected[..., 0].expand(2, 2))


@pytest.mark.parametrize("F", (0,) + FRAME_COUNTS)
def test_pack_round_trip(F):
    g = torch.Generator().manual_seed(F)
    x = torch.rand(3, F, 7, 5, generator=g) < 0.5
    words = bits.pack_frames(x)
    assert words.shape == (3, bits.num_words(F), 7, 5) and words.dtype == torch.int64
    assert torch.equal(words, bits.pack_frames_torch(x.reshape(3, F, 35)).reshape(words.shape))
    assert torch.equal(bits.unpack_frames(words, F), x)


@runtime.jit
def _bit_positions_kernel(words_ptr, low_ptr, high_ptr, N, BN: tl.constexpr):
    i = tl.program_id(0) * BN + tl.arange(0, BN)
    ok = i < N
    m = tl.load(words_ptr + i, mask=ok, other=1)
    tl.store(low_ptr + i, lowest_bit(m), mask=ok)
    tl.store(high_ptr + i, highest_bit(m), mask=ok)


def test_lowest_and_highest_bit():
    # every single bit (bit 63 is the sign), pairs of the extreme bits, and random words, against
    # Python's integers on the unsigned value
    single = [1 << i for i in range(64)]
    rng = np.random.default_rng(0)
    randoms = [int(x) for x in rng.integers(1, 2 ** 63, 200, dtype=np.uint64)] + \
              [int(x) | (1 << 63) for x in rng.integers(0, 2 ** 62, 50, dtype=np.uint64)]
    values = single + [(1 << 63) | 1, (1 << 63) | (1 << 62), (1 << 64) - 1] + randoms
    words = torch.tensor([v - (1 << 64) if v >= 1 << 63 else v for v in values], dtype=torch.int64)
    low, high = torch.empty_like(words), torch.empty_like(words)
    runtime.bind()
    _bit_positions_kernel[(-(-len(values) // 64),)](words, low, high, len(values), BN=64)
    assert low.tolist() == [(v & -v).bit_length() - 1 for v in values]
    assert high.tolist() == [v.bit_length() - 1 for v in values]


# --------------------------------------------------------------------------------------------------
# filter.py: window_any and the five primitives on it
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("F", FRAME_COUNTS)
def test_window_any_matches_twin(F):
    g = torch.Generator().manual_seed(100 + F)
    B = 3
    facts = torch.rand(B, F, 5, 3, generator=g) < 0.15
    for flat in (True, False):
        w = _windows(g, B, F, 11, flat)
        _same(kernels.filter.window_any(w, facts), torch_filter.window_any(w, facts))
    # a raw mask that is no interval at all
    mask = torch.rand(B, 7, F, generator=g) < 0.2
    _same(kernels.filter.window_any(mask, facts), torch_filter.window_any(mask, facts))


def test_window_any_empty_and_many_programs(monkeypatch):
    g = torch.Generator().manual_seed(7)
    for B, F, X in [(0, 9, 4), (3, 0, 4), (3, 9, 0)]:  # B = 0, F = 0, no facts
        facts = torch.rand(B, F, X, generator=g) < 0.3
        for flat in (True, False):
            w = _windows(g, B, F, 5 if B else 0, flat)
            _same_call(kernels.filter.window_any, torch_filter.window_any, w, facts)
    flat0 = _windows(g, 2, 9, 0, True)  # no rows
    facts = torch.rand(2, 9, 4, generator=g) < 0.3
    _same(kernels.filter.window_any(flat0, facts), torch_filter.window_any(flat0, facts))
    # tiny tiles: many programs, each edge of the grid masked
    monkeypatch.setattr(runtime, "INTERPRETER_TILE_ELEMENTS", 8)
    facts = torch.rand(3, 70, 13, generator=g) < 0.2
    for flat in (True, False):
        w = _windows(g, 3, 70, 9, flat)
        _same(kernels.filter.window_any(w, facts), torch_filter.window_any(w, facts))


def _scene_batch(videos: int = 4, seed: int = 3) -> SceneBatch:
    """Synthetic augmented videos, plus one hand-made 70-keyframe video (two words per mask) with
    random relations and four actions, two of them across the word boundary."""
    scenes = [augment_scene(s) for s in synthesize(videos, seed=seed)]
    rng = np.random.default_rng(seed)
    F = 70
    O, R = scenes[0].rel.shape[1:]
    # a few objects and relations (the interpreter's time grows with the compact axes)
    rel = np.zeros((F, O, R), bool)
    rel[:, 1:7, 4:14] = (rng.random((F, 6, 10)) < 0.04) | \
        np.repeat(rng.random((F // 5, 6, 10)) < 0.08, 5, axis=0)  # and runs of 5 keyframes
    obj = rel.any(2) | (rng.random((F, O)) < 0.02)
    scenes.append(VideoScene(
        video_id="LONG", frame_ids=np.arange(F) * 24 + 24, frame_secs=np.arange(F) + 1.0, rel=rel, obj=obj,
        inst_cls=[5, 17, 42, 96], inst_start=[2.0, 40.0, 60.0, 10.0], inst_end=[30.0, 66.0, 70.0, 64.5],
        split="train").sorted())
    return SceneBatch.from_scenes(scenes)


def test_filter_primitives_on_scenes():
    batch = _scene_batch()
    windows = localize(batch, AGQA)
    for w in (windows, windows.rows()):
        _same(kernels.filter.relate(batch.rel & batch.frame_mask[:, :, None, None], w),
              torch_filter.relate(batch.rel & batch.frame_mask[:, :, None, None], w))
        _same(kernels.filter.relations_present(batch, w), torch_filter.relations_present(batch, w))
        _same(kernels.filter.objects_present(batch, w), torch_filter.objects_present(batch, w))
        _same(kernels.filter.actions_in(batch, w), torch_filter.actions_in(batch, w))
        for rule in (ANY_PRESENT, CONTACT_EXCEPT_NOT_CONTACTING):
            _same(kernels.filter.contacted(batch, w, rule), torch_filter.contacted(batch, w, rule))


# --------------------------------------------------------------------------------------------------
# first_last.py: episodes and Choose
# --------------------------------------------------------------------------------------------------

def test_episodes_hand_example():
    # one relation r, two objects, 70 keyframes: r holds with o1 at keyframe 59 and with o0 at
    # 62..66 (across the word boundary at 64); nothing at 60, 61 or from 67 on
    F = 70
    rel = torch.zeros(1, F, 2, 1, dtype=torch.bool)
    rel[0, 59, 1] = True
    rel[0, 62:67, 0] = True
    occurs = rel.any(2)

    def rows(*ranges):
        s = torch.tensor([a for a, _ in ranges])
        e = torch.tensor([b for _, b in ranges])
        k = torch.zeros_like(s)
        return Windows(torch.zeros(len(ranges), F, dtype=torch.bool), s, e, k, torch.full((len(ranges), 2), -1),
                       torch.ones(len(ranges), dtype=torch.bool), k, torch.zeros_like(s))

    w = rows((55, 70), (61, 70), (61, 67))
    objects, defined = kernels.first_last.first_episode(occurs, rel, w)
    # [55, 70): first r at 59 (o1), stops at 60 -> stretch [59, 60]: o1 only
    # [61, 70): first r at 62, stops at 67 (< 70) -> stretch [62, 67]: o0 only
    # [61, 67): the run stops at 67, outside the window -> undefined
    assert defined[:, 0].tolist() == [True, True, False]
    assert objects[:, :, 0].tolist() == [[False, True], [True, False], [False, False]]

    w = rows((55, 70), (62, 70))
    # objLast: last r at 66, nearest earlier keyframe without r at 61. [55, 70): defined; AGQA
    # reads from 2 keyframes before 61 (59: o1 is there) through 66; STRICT from 61 on: o0 only.
    # [62, 70): 61 is outside the window -> undefined.
    objects, defined = kernels.first_last.last_episode(occurs, rel, w, AGQA)
    assert defined[:, 0].tolist() == [True, False]
    assert objects[:, :, 0].tolist() == [[True, True], [False, False]]
    objects, defined = kernels.first_last.last_episode(occurs, rel, w, STRICT)
    assert objects[:, :, 0].tolist() == [[True, False], [False, False]]


def test_choose_hand_example():
    # two candidate objects, one relation: r holds with o0 at 63..65 and with o1 at 66..68.
    # Window [60, 70), forward: o0 first (63), its run stops at 66, where o1 starts. AGQA counts
    # the stop keyframe as part of the stretch, so o1 shows up in it: undefined; without the stop
    # keyframe the answer is o0. Backward: o1 last (68), its run goes back to 65, where o0 holds.
    F = 70
    rel = torch.zeros(1, F, 2, 1, dtype=torch.bool)
    rel[0, 63:66, 0] = True
    rel[0, 66:69, 1] = True
    w = Windows(torch.zeros(1, F, dtype=torch.bool), torch.tensor([60]), torch.tensor([70]), torch.zeros(1).long(),
                torch.full((1, 2), -1), torch.ones(1, dtype=torch.bool), torch.zeros(1).long(), torch.zeros(1).long())
    pick, defined = kernels.first_last.choose_episode(rel, w, True, AGQA)
    assert pick[0, 0].tolist() == [[True, True], [False, True]]  # row: first object of the pair
    assert defined[0, 0, 0, 1].item() is False and defined[0, 0, 1, 0].item() is False
    pick, defined = kernels.first_last.choose_episode(rel, w, True, LOOSE_STOP)
    assert defined[0, 0, 0, 1].item() is True and pick[0, 0, 0, 1].item() is True  # o0
    pick, defined = kernels.first_last.choose_episode(rel, w, False, LOOSE_STOP)
    assert defined[0, 0, 1, 0].item() is True and pick[0, 0, 1, 0].item() is True  # o1 (last)
    pick, defined = kernels.first_last.choose_episode(rel, w, False, AGQA)
    assert defined[0, 0, 1, 0].item() is False  # the stop keyframe 65 has o0


@pytest.mark.parametrize("F", FRAME_COUNTS)
def test_episodes_and_choose_match_twins(F):
    g = torch.Generator().manual_seed(200 + F)
    B, O, R = 3, 5, 7
    rel = _rel(g, B, F, O, R)
    occurs = rel.any(2)
    for flat in (True, False):
        w = _windows(g, B, F, 9, flat)
        _same(kernels.first_last.first_episode(occurs, rel, w), torch_first_last.first_episode(occurs, rel, w))
        for sem in (AGQA, STRICT):
            _same(kernels.first_last.last_episode(occurs, rel, w, sem),
                  torch_first_last.last_episode(occurs, rel, w, sem))
        for forward in (True, False):
            for sem in (AGQA, LOOSE_STOP):
                _same(kernels.first_last.choose_episode(rel, w, forward, sem),
                      torch_first_last.choose_episode(rel, w, forward, sem))


def test_episodes_and_choose_empty_and_many_programs(monkeypatch):
    g = torch.Generator().manual_seed(9)
    for B, F, O, R, V in [(0, 5, 3, 2, 0), (2, 0, 3, 2, 4), (2, 5, 0, 2, 4), (2, 5, 3, 0, 4), (2, 5, 3, 2, 0)]:
        rel = _rel(g, B, F, O, R)
        occurs = rel.any(2)
        for flat in (True, False):
            w = _windows(g, B, F, V, flat)
            _same_call(kernels.first_last.first_episode, torch_first_last.first_episode, occurs, rel, w)
            _same_call(kernels.first_last.last_episode, torch_first_last.last_episode, occurs, rel, w, AGQA)
            _same_call(kernels.first_last.choose_episode, torch_first_last.choose_episode, rel, w, True, AGQA)
    # tiny tiles: many programs, each edge of the grid masked
    monkeypatch.setattr(runtime, "INTERPRETER_TILE_ELEMENTS", 16)
    rel = _rel(g, 2, 67, 3, 3)
    occurs = rel.any(2)
    w = _windows(g, 2, 67, 5, True)
    _same(kernels.first_last.first_episode(occurs, rel, w), torch_first_last.first_episode(occurs, rel, w))
    _same(kernels.first_last.last_episode(occurs, rel, w, AGQA), torch_first_last.last_episode(occurs, rel, w, AGQA))
    _same(kernels.first_last.choose_episode(rel, w, False, AGQA),
          torch_first_last.choose_episode(rel, w, False, AGQA))


# --------------------------------------------------------------------------------------------------
# order.py: side_of
# --------------------------------------------------------------------------------------------------

def _compare(g: torch.Generator, B: int, K: int, F: int) -> CompareWindows:
    edge = lambda: torch.randint(-1, F + 2, (B, K), generator=g)  # noqa: E731
    return CompareWindows(edge(), edge(), edge(), edge(), torch.rand(B, K, generator=g) < 0.7, None, None, None)


@pytest.mark.parametrize("F", FRAME_COUNTS)
def test_side_of_matches_twin(F, monkeypatch):
    g = torch.Generator().manual_seed(300 + F)
    B, K, X = 3, 5, 11
    occurs = torch.rand(B, F, X, generator=g) < 0.1
    nf = torch.randint(0, F + 2, (B,), generator=g)
    cw = _compare(g, B, K, F)
    _same(kernels.order.side_of(occurs, cw, nf), torch_order.side_of(occurs, cw, nf))
    if F == 65:  # tiny tiles: many programs, each edge of the grid masked
        monkeypatch.setattr(runtime, "INTERPRETER_TILE_ELEMENTS", 8)
        _same(kernels.order.side_of(occurs, cw, nf), torch_order.side_of(occurs, cw, nf))


def test_side_of_real_and_empty():
    batch = _scene_batch()
    ids, _ = present_actions(batch)
    cw = compare_windows(batch, ids, AGQA)
    occurs = batch.rel.any(2) & batch.frame_mask[:, :, None]
    nf = batch.frame_mask.sum(1)
    _same(kernels.order.side_of(occurs, cw, nf), torch_order.side_of(occurs, cw, nf))
    g = torch.Generator().manual_seed(4)
    for B, K, F, X in [(0, 3, 5, 2), (2, 0, 5, 2), (2, 3, 0, 2), (2, 3, 5, 0)]:
        occurs = torch.rand(B, F, X, generator=g) < 0.3
        cw = _compare(g, B, K, F)
        nf = torch.full((B,), F)
        _same_call(kernels.order.side_of, torch_order.side_of, occurs, cw, nf)


# --------------------------------------------------------------------------------------------------
# Grid evaluation with the kernel backend
# --------------------------------------------------------------------------------------------------

def _same_grid(a, b):
    assert a.axes == b.axes and a.answer_kind == b.answer_kind
    _same(a.defined, b.defined)
    _same(a.real, b.real)
    _same(a.video, b.video)
    _same(a.answer[a.defined], b.answer[b.defined])
    assert a.values.keys() == b.values.keys()
    for k in a.values:
        _same(a.values[k], b.values[k])


def _every_template_same_under_kernels(batch):
    """Every template's grid under the kernel backend equals the torch one (separate contexts)."""
    torch_ctx = GridContext(batch, AGQA)
    with registry.use("kernel"):
        kernel_ctx = GridContext(batch, AGQA)
        for template in PROGRAM_SHAPES:
            _same_grid(evaluate(template, batch, AGQA, context=kernel_ctx),
                       evaluate(template, batch, AGQA, context=torch_ctx))


def test_grid_kernel_backend_gives_the_same_answers():
    batch = _scene_batch()
    assert batch.frame_mask.shape[1] == 70
    _every_template_same_under_kernels(batch)
    with registry.use("kernel"):
        # the whole vocabularies on the object and relation axes: 36 objects, 54 relations
        for template in ("objRelExists", "objLast"):
            _same_grid(evaluate(template, batch, AGQA, domain="all"), _torch_grid(template, batch, "all"))


def _torch_grid(template, batch, domain):
    with registry.use("torch"):
        return evaluate(template, batch, AGQA, domain=domain)


# --------------------------------------------------------------------------------------------------
# Dispatch and backend choice
# --------------------------------------------------------------------------------------------------

def test_registered_with_the_twins_signatures():
    import inspect
    names = kernels.kernel_primitives()
    assert set(names) == {"relate", "relations_present", "objects_present", "contacted", "actions_in",
                          "first_episode", "last_episode", "choose_episode", "side_of"}
    for name in names:
        impls = registry.implementations(name)
        assert inspect.signature(impls["kernel"]) == inspect.signature(impls["torch"]), name
        with registry.use("kernel"):
            assert registry.lookup(name) is impls["kernel"]
    with registry.use("torch"):
        assert registry.lookup("relate") is torch_filter.relate


def test_disabled_or_cpu_without_interpreter_calls_the_twin(monkeypatch):
    g = torch.Generator().manual_seed(5)
    facts = torch.rand(2, 9, 3, generator=g) < 0.3
    w = _windows(g, 2, 9, 4, True)

    def no_launch():
        raise AssertionError("a kernel launched")

    monkeypatch.setattr(runtime, "bind", no_launch)
    kernels.set_enabled(False)
    try:
        assert not runtime.launchable(facts)
        _same(kernels.filter.window_any(w, facts), torch_filter.window_any(w, facts))
        assert kernels.auto_backend("cuda") == "torch"
    finally:
        kernels.set_enabled(True)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert not runtime.launchable(facts)  # CPU tensors, compiler mode: the twin runs
    _same(kernels.filter.window_any(w, facts), torch_filter.window_any(w, facts))


def test_backend_choice():
    assert kernels.available()
    assert kernels.auto_backend("cpu") == "torch"
    assert kernels.auto_backend("cuda") == "kernel"  # no GPU needed to decide
    assert kernels.backend_for("off", "cuda") == "torch"
    assert kernels.backend_for("on", "cpu") == "kernel"
    assert kernels.backend_for("auto", "cuda:0") == "kernel"
    with pytest.raises(TensorQAError, match="--kernels"):
        kernels.backend_for("yes", "cpu")
    before = registry.backend()
    with kernels.configure("on", "cpu"):
        assert registry.backend() == "kernel" and kernels.enabled()
    assert registry.backend() == before
    with kernels.configure("off", "cuda"):
        assert registry.backend() == "torch" and not kernels.enabled()
        assert kernels.auto_backend("cuda") == "torch"
    assert registry.backend() == before and kernels.enabled()


def test_auto_leaves_the_kernels_that_lost_to_torch_on_torch():
    # "auto" on CUDA runs a kernel only where it measured faster than its torch twin; "on" runs them all
    assert set(kernels.AUTO_TORCH) <= set(kernels.kernel_primitives())
    slow, fast = "relate", "first_episode"
    assert slow in kernels.AUTO_TORCH and fast not in kernels.AUTO_TORCH
    torch_impl = {n: registry.implementations(n)["torch"] for n in (slow, fast)}
    kernel_impl = {n: registry.implementations(n)["kernel"] for n in (slow, fast)}
    if kernels.available():
        with kernels.configure("auto", "cuda"):
            assert registry.lookup(slow) is torch_impl[slow] and registry.lookup(fast) is kernel_impl[fast]
        with kernels.configure("on", "cuda"):
            assert registry.lookup(slow) is kernel_impl[slow] and registry.lookup(fast) is kernel_impl[fast]
    with kernels.configure("auto", "cpu"):
        assert registry.lookup(slow) is torch_impl[slow] and registry.lookup(fast) is torch_impl[fast]
    assert registry.lookup(slow) is torch_impl[slow]  # restored


def test_imports_and_runs_without_triton():
    # a fresh interpreter in which ``import triton`` fails: the package imports, reports no
    # kernels, and the kernel backend runs the torch twins
    code = (
        "import sys; sys.modules['triton'] = None; sys.modules['triton.language'] = None\n"
        "from tensorqa import kernels\n"
        "from tensorqa.engine.primitives import registry\n"
        "from tensorqa.agqa.grid import evaluate\n"
        "from tensorqa.scenes.synthetic import synthesize\n"
        "from tensorqa.scenes.batch import SceneBatch\n"
        "assert not kernels.available() and kernels.auto_backend('cuda') == 'torch'\n"
        "b = SceneBatch.from_scenes(list(synthesize(2, seed=1)))\n"
        "with registry.use('kernel'):\n"
        "    g = evaluate('objFirstChoose', b)\n"
        "print('ok', int(g.defined.sum()))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")


# --------------------------------------------------------------------------------------------------
# Compiler mode: the kernels compile for a Hopper GPU without one (the interpreter runs Python
# and forgives what the compiler does not: types of loop-carried values, constexpr branches)
# --------------------------------------------------------------------------------------------------

def test_kernels_use_only_triton_builtins():
    # jitted library functions (tl.sum, tl.zeros, ...) are bound to the mode Triton was imported
    # in; builtins work in both, which lets the tests switch the interpreter on and off
    import inspect
    import re
    for module in (bits, kernels.filter, kernels.first_last, kernels.order):
        for name in set(re.findall(r"\btl\.(\w+)", inspect.getsource(module))):
            member = getattr(tl, name)
            assert getattr(member, "__triton_builtin__", False) or isinstance(member, (tl.dtype, type)), \
                f"{module.__name__} uses tl.{name}, not a Triton builtin"


def _ptxas_present() -> bool:
    try:
        import triton.backends.nvidia as nvidia
    except ImportError:
        return False
    from pathlib import Path
    return (Path(nvidia.__file__).parent / "bin" / "ptxas").exists()


@pytest.mark.skipif(not _ptxas_present(), reason="Triton's CUDA backend (ptxas) is not installed")
def test_kernels_compile_for_sm90(monkeypatch):
    import inspect
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    if "constexprs" not in inspect.signature(ASTSource).parameters:
        pytest.skip("this Triton's ASTSource takes constants another way (Triton < 3.3)")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    runtime.bind()
    P, U8, I = "*i64", "*u8", "i32"  # the wrappers pass int64 tensors, bool tensors as uint8, ints

    def compile_(fn, types: dict, constants: dict) -> None:
        signature = {**types, **{k: "constexpr" for k in constants}}
        assert list(signature) == fn.arg_names, fn.__name__
        constexprs = {(fn.arg_names.index(k),): v for k, v in constants.items()}
        compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs),
                                  target=GPUTarget("cuda", 90, 32))
        assert ".entry" in compiled.asm["ptx"]

    compile_(bits.pack_kernel, dict(x_ptr=U8, out_ptr=P, P=I, F=I, X=I, NW=I), dict(BP=1, BX=64))
    for ranges in (True, False):
        compile_(kernels.filter.window_any_kernel,
                 dict(facts_ptr=P, rows_ptr=P, video_ptr=P, start_ptr=P, stop_ptr=P, out_ptr=U8, L=I, W=I, X=I, NW=I),
                 dict(RANGES=ranges, BL=16, BX=256))
    rows = dict(video_ptr=P, start_ptr=P, stop_ptr=P, valid_ptr=U8)
    for forward in (True, False):
        compile_(kernels.first_last.episode_kernel,
                 dict(occ_ptr=P, rel_ptr=P, **rows, objects_ptr=U8, defined_ptr=U8, L=I, F=I, O=I, R=I, NW=I, extra=I),
                 dict(FORWARD=forward, BL=4, BO=16, BR=32))
        compile_(kernels.first_last.choose_kernel,
                 dict(rel_ptr=P, **rows, pick_ptr=U8, defined_ptr=U8, N=I, F=I, K=I, R=I, NW=I),
                 dict(FORWARD=forward, KEEP_STOP=forward, BN=16, BK=16))
    compile_(kernels.order.side_of_kernel,
             dict(occ_ptr=P, first_ptr=P, last_ptr=P, before_stop_ptr=P, after_start_ptr=P, single_ptr=U8, nf_ptr=P,
                  side_ptr=P, defined_ptr=U8, N=I, K=I, X=I, NW=I),
             dict(BN=32, BX=32))


# --------------------------------------------------------------------------------------------------
# CUDA: the compiled kernels (skipped without a GPU)
# --------------------------------------------------------------------------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@cuda
@pytest.mark.parametrize("F", (1, 63, 64, 65, 130))
def test_cuda_kernels_match_twins(F, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # compile for the GPU
    g = torch.Generator().manual_seed(400 + F)
    B, O, R, K = 5, 9, 23, 6
    rel = _rel(g, B, F, O, R).cuda()
    occurs = rel.any(2)
    for flat in (True, False):
        w = _windows(g, B, F, 57, flat).to("cuda")
        assert runtime.launchable(rel, w.start)
        _same(kernels.filter.relate(rel, w), torch_filter.relate(rel, w))
        _same(kernels.first_last.first_episode(occurs, rel, w), torch_first_last.first_episode(occurs, rel, w))
        _same(kernels.first_last.last_episode(occurs, rel, w, AGQA),
              torch_first_last.last_episode(occurs, rel, w, AGQA))
        for forward in (True, False):
            _same(kernels.first_last.choose_episode(rel, w, forward, AGQA),
                  torch_first_last.choose_episode(rel, w, forward, AGQA))
    cw = _compare(g, B, K, F)
    cw = CompareWindows(*(t.cuda() for t in (cw.first, cw.last, cw.before_stop, cw.after_start, cw.single)),
                        None, None, None)
    nf = torch.randint(0, F + 2, (B,), generator=g).cuda()
    _same(kernels.order.side_of(occurs, cw, nf), torch_order.side_of(occurs, cw, nf))


@cuda
def test_cuda_grid_kernel_backend(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    batch = _scene_batch(videos=16).to("cuda")
    _every_template_same_under_kernels(batch)
