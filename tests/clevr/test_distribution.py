"""tensorqa's default CLEVR generation against CLEVR's depth-first search restated
(``benchmarks/clevr_dfs_reference.py``) on the same scenes: the chi-square tests of
``benchmarks/clevr_distribution.py``, per question type (answers) and of the family counts."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import clevr_distribution
    finally:
        sys.path.remove(str(BENCHMARKS))
    return clevr_distribution


def test_chi_square_survival_matches_tables():
    D = _bench()
    # the 0.05 critical values of chi-square tables, and the figure (17.3 on 5 df: p = 0.004)
    assert abs(D.chi2_sf(3.841, 1) - 0.05) < 1e-4
    assert abs(D.chi2_sf(11.070, 5) - 0.05) < 1e-4
    assert abs(D.chi2_sf(17.3, 5) - 0.004) < 5e-4


def test_homogeneity_pools_rare_bins_and_counts_by_hand():
    D = _bench()
    # 2 x 2 table [[30, 70], [50, 50]]: expected [[40, 60], [40, 60]], chi2 = 2 x (100/40 + 100/60) = 8.33
    r = D.homogeneity(Counter(a=30, b=70), Counter(a=50, b=50))
    assert r["df"] == 1 and abs(r["chi2"] - 8.33) < 0.01 and r["pooled"] == 0
    # e, d and c expect under 5 in the smaller sample (198 x 1, 2, 6 / 398): pooled; the pool (9: 4.5) still
    # under 5 joins the rarest bin kept (b)
    r = D.homogeneity(Counter(a=100, b=94, c=3, d=1), Counter(a=100, b=95, c=3, d=1, e=1))
    assert r["pooled"] == 3 and r["bins"] == 2 and r["df"] == 1


@pytest.mark.slow
def test_default_generation_is_distributed_as_clevrs_search(tmp_path):
    """500 scenes (5,000 questions a side) with the benchmark's scene seed (no other test uses it):
    every test passes at p > 0.05."""
    D = _bench()
    from tensorqa.clevr.templates import DEFAULT_TEMPLATES_DIR, load_templates
    from tensorqa.scenes.clevr_sampler import sample_scenes
    from tensorqa.scenes.static_store import write_static_store

    scenes = sample_scenes(500, seed=D.SCENE_SEED)
    store = write_static_store(tmp_path / "s.h5", scenes)
    grid = D.grid_questions(store, tmp_path / "q.json")
    dfs, _ = D.dfs_questions(load_templates(DEFAULT_TEMPLATES_DIR), scenes, 0, None)
    assert len(grid) == len(dfs) == 5000
    res = D.tests(grid, dfs)
    assert len(res) == 14
    assert {k: v["p"] for k, v in res.items() if v["p"] <= 0.05} == {}
