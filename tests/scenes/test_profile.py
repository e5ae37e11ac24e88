"""The Charades statistics profile against counts made here with plain csv parsing."""

from __future__ import annotations

import csv
import json
import statistics
from collections import Counter
from importlib import resources
from itertools import combinations

import pytest

from tensorqa.errors import TensorQAError
from tensorqa.scenes.profile import derive_profile, dump_profile, load_profile, main, object_classes

@pytest.fixture(scope="module")
def csvs(shared_data) -> list:
    return [shared_data / "charades" / f"Charades_v1_{s}.csv" for s in ("train", "test")]


@pytest.fixture(scope="module")
def profile(csvs) -> dict:
    return derive_profile(csvs)


@pytest.fixture(scope="module")
def rows(csvs) -> list[dict]:
    """Every video as (length, [(class, start, end)] with the CSV's own strings kept too)."""
    out = []
    for path in csvs:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                acts = [a.split() for a in r["actions"].split(";") if a]
                out.append({"length": float(r["length"]), "raw": acts,
                            "acts": [(int(c[1:]), float(s), float(e)) for c, s, e in acts]})
    return out


def test_totals_match_the_files(profile, rows):
    # the figures the AGQA reference quotes: 7,985 + 1,863 videos, 49,809 + 16,691 intervals
    assert profile["num_videos"] == len(rows) == 9848
    assert profile["num_intervals"] == sum(len(r["acts"]) for r in rows) == 66_500
    hist = profile["actions_per_video"]
    assert sum(hist) == 9848
    assert hist == [Counter(len(r["acts"]) for r in rows)[k] for k in range(len(hist))]
    mean = sum(k * n for k, n in enumerate(hist)) / sum(hist)
    assert mean == pytest.approx(66_500 / 9848)  # 6.75 actions per video


def test_clipped_intervals_are_counted(profile, rows):
    reversed_ = sum(e < s for r in rows for _, s, e in r["acts"])
    beyond = sum(e > r["length"] for r in rows for _, _, e in r["acts"])
    assert profile["clipped"]["end_before_start"] == reversed_ == 7
    assert profile["clipped"]["end_after_length"] == beyond


def test_class_figures(profile, rows):
    freq = Counter(c for r in rows for c, _, _ in r["acts"])
    top_class, top_count = freq.most_common(1)[0]
    assert profile["class_frequency"].index(max(profile["class_frequency"])) == top_class
    assert profile["class_frequency"][top_class] == top_count
    assert profile["class_frequency"] == [freq[c] for c in range(157)]
    assert profile["class_videos"][top_class] == sum(any(c == top_class for c, _, _ in r["acts"]) for r in rows)

    # median duration and relative start of 'holding a pillow' (c076), clipped into [0, length]
    durs, starts = [], []
    for r in rows:
        for c, s, e in r["acts"]:
            if c == 76:
                s2, e2 = min(max(s, 0), r["length"]), min(max(e, 0), r["length"])
                durs.append(max(e2 - s2, 0.0))
                starts.append(s2 / r["length"])
    assert profile["quantile_levels"][5] == 0.5
    assert profile["duration_quantiles"][76][5] == round(statistics.median(durs), 3)
    assert profile["duration_quantiles"][76][0] == round(min(durs), 3)
    assert profile["duration_quantiles"][76][10] == round(max(durs), 3)
    assert profile["start_quantiles"][76][5] == round(statistics.median(starts), 3)
    assert all(q >= 0 for row in profile["duration_quantiles"] for q in row)


def test_video_lengths(profile, rows):
    lengths = sorted(r["length"] for r in rows)
    levels = profile["length_levels"]
    assert levels[0] == 0 and levels[50] == 0.5 and levels[-1] == 1
    assert profile["length_quantiles"][0] == min(lengths)
    assert profile["length_quantiles"][-1] == max(lengths)
    assert profile["length_quantiles"][50] == round(statistics.median(lengths), 3)


def test_cooccurrence_overlap_repeats(profile, rows):
    pairs = Counter()
    overlapping = repeated = shared = 0
    for r in rows:
        acts = r["acts"]
        pairs.update(combinations(sorted({c for c, _, _ in acts}), 2))
        repeated += len(acts) - len({c for c, _, _ in acts})
        spans = Counter((s, e) for _, s, e in r["raw"])
        shared += sum(spans[(s, e)] > 1 for _, s, e in r["raw"])
        L = r["length"]
        clip = [(min(max(s, 0), L), max(min(max(e, 0), L), min(max(s, 0), L))) for _, s, e in acts]
        for i, (s, e) in enumerate(clip):
            overlapping += any(j != i and min(e, e2) > max(s, s2) for j, (s2, e2) in enumerate(clip))
    (a, b), n = max(pairs.items(), key=lambda kv: (kv[1], (-kv[0][0], -kv[0][1])))
    assert profile["cooccurrence"][0] == [a, b, n]
    # the pairs kept are the most frequent ones, with their exact counts
    kept = profile["cooccurrence"]
    assert all(pairs[(x, y)] == m for x, y, m in kept)
    assert min(m for _, _, m in kept) >= sorted(pairs.values(), reverse=True)[len(kept) - 1]
    assert profile["overlap_fraction"] == round(overlapping / 66_500, 3)
    assert profile["repeat_fraction"] == round(repeated / 66_500, 3)
    assert profile["shared_interval_fraction"] == round(shared / 66_500, 3)


def test_shipped_profile_is_the_derived_one(profile):
    shipped = json.loads(resources.files("tensorqa.data").joinpath("charades_profile.json").read_text())
    assert shipped == json.loads(json.dumps(profile))
    assert load_profile() == shipped


def test_profile_is_small_and_rounded(profile):
    text = dump_profile(profile)
    assert len(text.encode()) < 200_000

    def floats(x):
        if isinstance(x, float):
            yield x
        elif isinstance(x, dict):
            for v in x.values():
                yield from floats(v)
        elif isinstance(x, list):
            for v in x:
                yield from floats(v)

    assert all(round(x, 3) == x for x in floats(profile))


def test_cli_writes_the_profile(tmp_path, csvs, profile, capsys):
    out = tmp_path / "p.json"
    main([str(p) for p in csvs] + ["--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(profile))
    assert "wrote" in capsys.readouterr().out


def test_bad_files_are_named(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,objects,length\nX,,3\n")
    with pytest.raises(TensorQAError, match=r"bad\.csv.*actions"):
        derive_profile([bad])
    bad.write_text("id,objects,actions,length\nX,,c076 1.0,3\n")
    with pytest.raises(TensorQAError, match=r"bad\.csv: row 2.*c076 1.0"):
        derive_profile([bad])
    with pytest.raises(TensorQAError, match="missing.csv"):
        derive_profile([tmp_path / "missing.csv"])


def test_object_words_map_to_ag_classes():
    # cup and glass are both AG's cup/glass/bottle; stove has no AG class
    assert object_classes(["cup", "Glass", "stove", "sofa/couch", "tv"]) == ["cupglassbottle", "sofacouch", "television"]
