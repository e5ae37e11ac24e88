"""``clevr.compiled`` (the grid's draws, the rules and CLEVR's per-scene loop) against its twin, the
torch grid, row for row (the files of both engines: ``test_compiled_driver``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensorqa.clevr.templates import DEFAULT_SYNONYMS, DEFAULT_TEMPLATES_DIR

from tensorqa.clevr.generate import Options
from tensorqa.clevr.semantics import CLEVR, STRICT
from tensorqa.errors import TensorQAError
from tensorqa.scenes.static_batch import StaticBatch

TEMPLATES = DEFAULT_TEMPLATES_DIR


def test_compiled_engine_is_for_the_cpu():
    with pytest.raises(TensorQAError, match="--engine compiled runs on the CPU"):
        Options(engine="compiled", device="cuda")
    with pytest.raises(TensorQAError, match="--engine"):
        Options(engine="fast")


def test_compiled_rows_equal_the_grids_on_crowded_scenes():
    """12 to 30 objects (CLEVR has at most 10): a scene's present keys span up to six words of the
    class tables' bit sets, and relations come from random positions."""
    from tensorqa.clevr.templates import param_order
    from tensorqa.clevr.compiled_driver import Book, accept_block
    from tensorqa.clevr.torch_backend import Bookkeeping, choose_block
    from tensorqa.clevr.plan import plans
    from tensorqa.clevr.templates import load_synonyms, load_templates
    from tensorqa.scenes.static_batch import StaticScene

    templates = load_templates(TEMPLATES)
    plan, _ = plans(templates, load_synonyms(DEFAULT_SYNONYMS))
    rng = np.random.default_rng(7)
    scenes = []
    for i in range(40):
        n = int(rng.integers(12, 31))
        attrs = np.stack([rng.integers(0, 2, n), rng.integers(0, 8, n), rng.integers(0, 2, n), rng.integers(0, 3, n)], 1)
        xy = rng.normal(size=(n, 2))
        d = xy[None, :, :] - xy[:, None, :]
        rel = np.stack([d[..., 0] < -0.2, d[..., 0] > 0.2, d[..., 1] < -0.2, d[..., 1] > 0.2], -1)
        scenes.append(StaticScene(f"CLEVR_crowd_{i:06d}.png", "crowd", attrs, rel, np.zeros((n, 3), np.float32), i))
    batch = StaticBatch.from_scenes(scenes)
    for sem in (CLEVR, STRICT):
        opt = Options(semantics=sem, templates_per_image=90)
        with torch.inference_mode():
            book = Bookkeeping(templates)
            accepted, rows = choose_block(templates, batch, np.arange(40), book, opt)
        want = [(b, t, m, int(rows[t].ans[b, m]), {p: int(v[b, m]) for p, v in rows[t].params.items()})
                for b, t, m in accepted]
        ab, at, am, aa, ap, _ = accept_block(plan, batch, np.arange(40), Book(len(templates)), opt)
        got = [(int(ab[i]), int(at[i]), int(am[i]), int(aa[i]),
                {p: int(v) for p, v in zip(param_order(templates[at[i]]), ap[i])}) for i in range(len(ab))]
        assert len(want) > 2000 and got == want


def test_scene_bits_are_the_objects_each_key_matches():
    """``compiled_bits.scene_bits`` against ``keys.scene_match`` (the torch grid's key table): for
    every filter key of ``keys.all_keys``, in its order, the objects it matches."""
    from tensorqa.clevr.compiled_driver import scene_bits
    from tensorqa.clevr.keys import scene_match
    from tensorqa.scenes.clevr_sampler import sample_scenes

    batch = StaticBatch.from_scenes(sample_scenes(30, seed=11), "cpu")
    _, maskbits, _, _, keybits, nobj = scene_bits(batch)
    match = scene_match(batch.attrs, batch.mask).numpy() > 0  # [B, N, K]
    want = (match.astype(np.int64) << np.arange(match.shape[1])[None, :, None]).sum(1)
    np.testing.assert_array_equal(keybits, want)
    assert (maskbits == (1 << nobj) - 1).all()
