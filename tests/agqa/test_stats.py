"""``stats`` counted batch by batch: the same numbers as counting the whole pool's rows at once."""

import math
from collections import Counter

import pytest

from tensorqa.agqa import generate, stats
from tensorqa.scenes.pack import pack_default
from tensorqa.writers import read_pool


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    root = tmp_path_factory.mktemp("stats")
    store = pack_default(root / "s.h5", videos=12, seed=2, progress=False)
    generate(store, root / "pool", templates=["objExists", "objWhat", "actWhatAfterAll", "relExists"],
             jobs=1, progress=False, num_shards=2, shard_index=0)
    generate(store, root / "pool", templates=["objExists", "objWhat", "actWhatAfterAll", "relExists"],
             jobs=1, progress=False, num_shards=2, shard_index=1)
    return root / "pool"


def test_batches_count_what_the_whole_pool_holds(pool, monkeypatch):
    monkeypatch.setattr(stats, "BATCH_ROWS", 997)  # many batches per shard, each with its own dictionaries
    s = stats.pool_stats(str(pool))
    rows = read_pool(pool, columns=stats.COLUMNS).to_pylist()
    assert s["questions"] == len(rows) > 3 * 997
    assert s["splits"] == Counter(r["split"] for r in rows) and list(s["splits"]) == ["train", "test"]
    assert s["structural"] == Counter(r["structural"] for r in rows)
    assert s["steps"] == dict(sorted(Counter(r["steps"] for r in rows).items()))
    by_template = Counter(r["template"] for r in rows)
    answers = Counter((r["template"], r["answer"]) for r in rows)
    for row in s["templates"]:
        t = row["template"]
        assert row["questions"] == by_template.get(t, 0)
        mine = sorted(((a, n) for (tt, a), n in answers.items() if tt == t), key=lambda x: (-x[1], x[0]))
        total = sum(n for _, n in mine) or 1
        assert row["answers"] == len(mine)
        assert row["top_answers"] == [(a, round(n / total, 3)) for a, n in mine[:5]]
        assert row["entropy_bits"] == round(-sum(n / total * math.log2(n / total) for _, n in mine), 2)
    assert sum(r["questions"] for r in s["templates"]) == len(rows)


@pytest.mark.parametrize("recorded", [True, False])
def test_ratio_scales_the_count_to_agqa_videos(pool, monkeypatch, recorded):
    # 12 videos (both shards): objExists's ratio is its count x 9,601 / 12 over Table 14's 2,316.0K
    # (unbalanced) and 99.0K (balanced); a template the pool lacks has ratio 0. The videos come
    # from the done markers, or, for a pool without them, from its distinct video ids
    if not recorded:
        monkeypatch.setattr(stats, "pool_fact", lambda pool, key: None)
    s = stats.pool_stats(str(pool))
    rows = read_pool(pool, columns=["template", "video_id"]).to_pylist()
    assert s["videos"] == len({r["video_id"] for r in rows}) == 12
    n = sum(r["template"] == "objExists" for r in rows)
    row = next(r for r in s["templates"] if r["template"] == "objExists")
    assert row["ratio"] == round(n * 9601 / 12 / 2_316_000, 3)
    assert row["ratio_balanced"] == round(n * 9601 / 12 / 99_000, 3)
    assert next(r for r in s["templates"] if r["template"] == "actTime")["ratio"] == 0
    text = stats.format_stats(s)
    assert f"{row['ratio']:6.2f}" in next(line for line in text.splitlines() if line.startswith("objExists"))
