"""Balancing (tensorqa.agqa.balancing.balance, tensorqa.agqa.balancing): hand-worked counts, crafted pools, determinism.

Every pool here is built by hand as RECORD_SCHEMA rows and written with ParquetShardWriter; expected
results are worked out in the comments from semantics §d, never read back from the code.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tensorqa.agqa.balancing.balance import TEMPLATE_NAMES, WINDOW_KINDS, BalanceConfig, balance_config, balance_pool
from tensorqa.agqa.balancing.hashindex import HashIndex
from tensorqa.agqa.balancing.hashing import hash_strings, mix64
from tensorqa.agqa.balancing.labels import DIFFERENT, NO_DIRECT, NO_TEMPORAL, SAME, label_removals, temporal_labels
from tensorqa.agqa.balancing.smoothing import SmoothingRule, binary_targets, smooth_counts, uniform_counts
from tensorqa.agqa.balancing.waterfill import waterfill, waterfill_rows
from tensorqa.cli import main
from tensorqa.errors import TensorQAError
from tensorqa.agqa.templates import TEMPLATES
from tensorqa.writers import RECORD_SCHEMA, VOCABULARY_COLUMNS, ParquetShardWriter, read_pool, write_dataset_card

FAITHFUL = SmoothingRule()
FIXED = SmoothingRule(last_pass_only=False)


# -- pool building (also used by test_splits.py) ---------------------------------------------------
def record(**fields) -> dict:
    """One RECORD_SCHEMA row; template metadata from the catalogue, everything else defaulted."""
    spec = TEMPLATES[fields.get("template", "objExists")]
    row = {name: "" for name in RECORD_SCHEMA.names}
    row.update(template=spec.name, frame=0, question="Q?", answer="yes", global_=None, ans_type=spec.ans_type,
               steps=spec.base_steps, semantic=spec.semantic, structural=spec.structural, program="", window="video",
               is_direct=0, indirect=0, i_obj=0, i_rel=0, i_act=0, i_temp=0, sg_grounding=None, split="train")
    row.update(fields)
    row["global"] = list(spec.global_)
    row.pop("global_", None)
    if row["window"] != "video":
        row.update(i_temp=1, indirect=1)
        if "steps" not in fields:
            row["steps"] = spec.base_steps + 2
    return row


def number(rows: list[dict]) -> list[dict]:
    """Give rows without a question_id the id "<video>-<rank within video>" (in list order)."""
    per_video = Counter()
    for r in rows:
        if not r.get("question_id"):
            r["question_id"] = f"{r['video_id']}-{per_video[r['video_id']]}"
        per_video[r["video_id"]] += 1
    return rows


def write_pool(path: Path, rows: list[dict], shards: int = 2, marker: dict | None = None) -> Path:
    """Write rows as a pool; each video's rows go to one shard (as the generator does); ``marker``:
    what the shards' done markers record besides their row counts (semantics, store, ...)."""
    number(rows)
    per_video = Counter(r["video_id"] for r in rows)
    table = pa.Table.from_pylist(rows, schema=RECORD_SCHEMA)
    videos = sorted(per_video)
    shard_of = {v: i * shards // max(len(videos), 1) for i, v in enumerate(videos)}
    vid = table.column("video_id").to_pylist()
    for s in range(shards):
        w = ParquetShardWriter(path, s, shards)
        w.write(table.filter(pa.array([shard_of[v] == s for v in vid])))
        w.close(marker)
    write_dataset_card(path, "test pool")
    return path


def kept_rows(out: Path) -> list[dict]:
    return read_pool(out).to_pylist()


def file_digests(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


ONLY_BINARY = BalanceConfig(open_family="none", open_local="none", structural=False)


# -- water-filling ---------------------------------------------------------------------------------
def _one_at_a_time(x, cut):
    """Scalar reference: remove one unit at a time from the largest, earliest column on ties."""
    x, out = list(x), [0] * len(x)
    for _ in range(max(cut, 0)):
        if max(x) == 0:
            break
        j = x.index(max(x))
        x[j] -= 1
        out[j] += 1
    return out


def test_waterfill_rows_matches_one_at_a_time_removal():
    rng = np.random.default_rng(0)
    for L in (1, 2, 3, 4):
        x = rng.integers(0, 12, (500, L))
        cut = rng.integers(-2, 50, 500)
        expected = np.array([_one_at_a_time(r, int(c)) for r, c in zip(x, cut)])
        assert (waterfill_rows(x, cut) == expected).all()


def test_waterfill_spreads_cut_from_the_largest_member_per_parent():
    # parent 0: [10, 7, 3] minus 5: 10 -> 7 costs 3, then 7,7 -> 6,6 costs 2: removals [4, 1, 0]
    # parent 1: [5, 5] minus 3: 4,4 then one more (the earlier member keeps the extra): [1, 2]
    # parent 2: cut larger than the total: everything goes
    got = waterfill(np.array([10, 7, 3, 5, 5, 2, 1]), np.array([0, 0, 0, 1, 1, 2, 2]), np.array([5, 3, 99]))
    assert got.tolist() == [4, 1, 0, 1, 2, 2, 1]
    rng = np.random.default_rng(1)
    for _ in range(300):
        k = int(rng.integers(1, 6))
        x, c = rng.integers(0, 15, k), int(rng.integers(0, 60))
        got = waterfill(x, np.zeros(k, np.int64), np.array([c]))
        assert got.sum() == min(c, x.sum())
        assert sorted(x - got) == sorted(np.array(x) - np.array(_one_at_a_time(x, c)))


# -- temporal-change labels --------------------------------------------------------------------------
def test_label_removals_follow_agqa_order():
    # bucket (S, D, N, T) = (10, 4, 3, 1), remove 12:
    #   equalize same/different: S 10 -> 4 (6 removed, 6 left);
    #   trim S, D toward no-direct (3): both 4 -> 3 (2 removed, 4 left);
    #   trim S, D, N toward no-temporal (1): excess 2 + 2 + 2, take 4 lowering evenly -> levels
    #   2, 2, 2 then one more from the earliest label: S 3 -> 1, D 3 -> 2, N 3 -> 2;
    #   totals S 6 + 1 + 2 = 9, D 1 + 1 = 2, N 1, T 0.
    # bucket (2, 2, 2, 2), remove 5: nothing to equalize or trim, evenly: (2, 1, 1, 1).
    # bucket (0, 0, 5, 5), remove 4: no-direct is not above no-temporal, so evenly: (0, 0, 2, 2).
    got = label_removals(np.array([[10, 4, 3, 1], [2, 2, 2, 2], [0, 0, 5, 5]]), np.array([12, 5, 4]))
    assert got.tolist() == [[9, 2, 1, 0], [2, 1, 1, 1], [0, 0, 2, 2]]


def _reference_labels(group, is_direct, localized, answer):
    first = {}
    for g, d, a in zip(group, is_direct, answer):
        if d:
            first.setdefault(g, a)
    return [NO_TEMPORAL if not loc else NO_DIRECT if g not in first else SAME if first[g] == a else DIFFERENT
            for g, loc, a in zip(group, localized, answer)]


def test_temporal_labels_match_scalar_reference_even_with_prefix_collisions():
    rng = np.random.default_rng(2)
    n = 20_000
    for collide in (False, True):
        ids = rng.integers(0, 3000, n)
        if collide:  # hashes sharing their top bits exercise the exact fallback
            base = (rng.integers(0, 40, 3000).astype(np.uint64) << np.uint64(50)) | rng.integers(0, 2**30, 3000).astype(np.uint64)
        else:
            base = mix64(np.arange(3000, dtype=np.uint64))
        g = base[ids]
        is_direct = rng.random(n) < 0.1
        localized = ~is_direct & (rng.random(n) < 0.8)
        answer = rng.integers(0, 3, n)
        got = temporal_labels(g, is_direct, localized, answer)
        assert got.tolist() == _reference_labels(g.tolist(), is_direct, localized, answer.tolist())


# -- hashing and the hash index ----------------------------------------------------------------------
def test_string_hash_depends_only_on_the_string():
    words = ["", "a", "ab", "abcdefgh", "abcdefgh\x01", "héllo", "x" * 40, None]
    alone = {w: int(hash_strings(pa.array([w]))[0]) for w in words}
    mixed = hash_strings(pa.array(words))
    assert [alone[w] for w in words] == mixed.tolist()
    assert alone[None] == alone[""]  # nulls hash like the empty string
    assert len({alone[w] for w in words if w is not None}) == len(words) - 1
    assert hash_strings(pa.array(["ab"]), seed=1)[0] != alone["ab"]


def test_hash_index_codes_are_stable_and_dense():
    rng = np.random.default_rng(3)
    index, seen = HashIndex(capacity=16), {}
    for _ in range(6):  # grows several times
        h = mix64(rng.integers(0, 5000, 3000).astype(np.uint64))
        for key, code in zip(h.tolist(), index.index(h).tolist()):
            assert seen.setdefault(key, code) == code
    assert sorted(seen.values()) == list(range(len(index)))
    probe = mix64(np.array([0, 10**9], np.uint64))
    assert index.lookup(probe)[1] == -1 and index.lookup(probe)[0] == seen[int(probe[0])]


# -- answer targets ----------------------------------------------------------------------------------
def test_binary_targets_cut_to_the_minority_and_drop_one_answer_keys():
    # keys: (5 yes, 3 no) -> 3/3; (4 yes) -> dropped; (7, 7) unchanged
    assert binary_targets(np.array([0, 2, 3]), np.array([5, 3, 4, 7, 7])).tolist() == [3, 3, 0, 7, 7]


def test_smoothing_three_answers_worked_by_hand():
    # [300, 100, 100], no tail (the rarest 100 is 20 % > 5 %).
    # b=3: cut 1: 300 / mean(100, 100) = 3, not above 3; cut 2: 200 / 100 = 2. Unchanged.
    #      acceptance: top ceil(0.2 * 3) = 1 answer holds 300 / 500 = 0.6 > 0.3 -> next pass.
    # b=2.25: cut 1: 300 > 2.25 * 100 -> the top answer shrinks to floor(2.25 * 200 / 2) = 225.
    #      225 / 425 = 0.53 > 0.3 -> next pass.
    # b=1.6875: 225 -> floor(168.75) = 168 (168 / 368 = 0.46); b=1.265625: 168 -> floor(126.56) = 126
    #      (126 / 326 = 0.39); b = 0.949 < 1: stop.
    # fixed: every pass applied -> 126. faithful: only the last pass (168 -> 126, 42 questions) is
    # applied to the original -> 300 - 42 = 258.
    assert smooth_counts(np.array([300, 100, 100]), FIXED).tolist() == [126, 100, 100]
    assert smooth_counts(np.array([300, 100, 100]), FAITHFUL).tolist() == [258, 100, 100]
    # the answer order of the input is kept
    assert smooth_counts(np.array([100, 300, 100]), FIXED).tolist() == [100, 126, 100]


def test_smoothing_acceptance_rule_stops_early():
    # [400, 100 x 9]: b=3 cuts 400 to floor(3 * 900 / 9) = 300; top ceil(0.2 * 10) = 2 answers hold
    # 400 / 1200 = 0.333 > 0.3. b=2.25 cuts 300 to 225; top two: 325 / 1125 = 0.289 <= 0.3: accepted,
    # no more passes. Faithful applies only the last pass (300 -> 225): 400 - 75 = 325.
    counts = np.array([400] + [100] * 9)
    assert smooth_counts(counts, FIXED).tolist() == [225] + [100] * 9
    assert smooth_counts(counts, FAITHFUL).tolist() == [325] + [100] * 9


def test_smoothing_ratio_bound_with_tail_and_shrink_worked_by_hand():
    # [1000, 200, 150, 100, 30, 20, 5, 5], 1510 questions. Tail: the rarest answers with at most
    # 5 % (75.5) together: 5+5+20+30 = 60 -> [30, 20, 5, 5] set aside; head [1000, 200, 150, 100].
    # b=3:      cut 1: 1000 vs mean(200,150,100) = 150 -> 1000 shrinks to floor(3*450/3) = 450.
    #           cut 2: 325 / 125 = 2.6, cut 3: 266.7 / 100 = 2.67: fine. top 2 of 8: 650 / 960.
    # b=2.25:   cut 1: 450 -> floor(2.25 * 150) = 337. cut 2: 268.5 / 125 = 2.148 fine. cut 3:
    #           687 / 3 = 229 vs 100 -> the top three scale to floor(2.25 * 3 * 100) = 675 by 675/687:
    #           331.11, 196.51, 147.38 -> floors 331 + 196 + 147 = 674, the largest remainder (.51)
    #           gets the last one: [331, 197, 147, 100].
    # b=1.6875: cut 1: 331 -> floor(1.6875 * 444 / 3) = 249. cut 2: (249+197)/2 = 223 vs 123.5 ->
    #           416 by 416/446: 232.25, 183.75 -> [232, 184]. cut 3: 563/3 vs 100 -> 506 by 506/563:
    #           208.51, 165.37, 132.12 -> [209, 165, 132, 100].
    # b=1.2656: cut 1: 209 -> floor(1.265625 * 397 / 3) = 167. cut 2: (167+165)/2 = 166 vs 116 ->
    #           293 by 293/332: 147.38, 145.62 -> [147, 146]. cut 3: 425/3 vs 100 -> 379 by 379/425:
    #           131.09, 130.20, 117.71 -> [131, 130, 118, 100]. top 2: 261/539 > 0.3. b < 1: stop.
    # Every cut point now has mean(above) / mean(below) <= 1.265625; 539 >= 10 % of 1510.
    # Faithful: the last pass removed [78, 35, 14, 0] from the original head: [922, 165, 136, 100].
    counts = np.array([1000, 200, 150, 100, 30, 20, 5, 5])
    fixed = smooth_counts(counts, FIXED)
    assert fixed.tolist() == [131, 130, 118, 100, 30, 20, 5, 5]
    head = fixed[:4]
    for i in range(1, 4):
        assert head[:i].mean() / head[i:].mean() <= 3 * 0.75 ** 3
    assert smooth_counts(counts, FAITHFUL).tolist() == [922, 165, 136, 100, 30, 20, 5, 5]


def test_smoothing_stop_rules():
    # [1000, 10, 10, 10]: the tail would leave one answer, so none is set aside. b=3 would cut 1000 to
    # 3 * 10 = 30, leaving 60 < 10 % of 1030: stop and keep the previous state (the original).
    assert smooth_counts(np.array([1000, 10, 10, 10]), FIXED).tolist() == [1000, 10, 10, 10]
    # [500, 9, 8, 7]: the walk stops at once (the first answer below the cut has 9 < 10 questions)
    assert smooth_counts(np.array([500, 9, 8, 7]), FIXED).tolist() == [500, 9, 8, 7]
    # one answer: dropped; two: equalized
    assert smooth_counts(np.array([40]), FIXED).tolist() == [0]
    assert smooth_counts(np.array([40, 25]), FIXED).tolist() == [25, 25]
    # AGQA 2.0 uniform: answers under 10 dropped, the rest cut to the smallest
    assert uniform_counts(np.array([50, 12, 30, 9])).tolist() == [12, 12, 12, 0]
    assert uniform_counts(np.array([50, 9])).tolist() == [0, 0]


# -- balancing whole pools ---------------------------------------------------------------------------
def _binary_pool() -> list[dict]:
    """objExists keys (family exists) with known answer counts, one question per video."""
    rows = []
    layout = {  # local key -> (yes, no)
        "yes-no-o4-all-": (30, 10),   # skewed: 10 / 10
        "yes-no-o5-all-": (5, 0),     # one answer: dropped
        "yes-no-o6-all-": (7, 7),     # already even
        "yes-no-o7-all-": (0, 3),     # one answer: dropped
        "yes-no-o8-all-": (12, 40),   # 12 / 12
    }
    for k, (local, (yes, no)) in enumerate(layout.items()):
        for i in range(yes + no):
            rows.append(record(video_id=f"V{k}{i:03d}", template="objExists", local=local, object=local.split("-")[2],
                               answer="yes" if i < yes else "no", is_direct=1,
                               direct_group=f"V{k}{i:03d}|objExists|{local.split('-')[2]}"))
    return rows


def test_binary_keys_end_exactly_50_50_and_one_answer_keys_vanish(tmp_path):
    pool = write_pool(tmp_path / "pool", _binary_pool())
    balance_pool(pool, tmp_path / "out", ONLY_BINARY)
    counts = Counter((r["local"], r["answer"]) for r in kept_rows(tmp_path / "out"))
    assert counts == {("yes-no-o4-all-", "yes"): 10, ("yes-no-o4-all-", "no"): 10,
                      ("yes-no-o6-all-", "yes"): 7, ("yes-no-o6-all-", "no"): 7,
                      ("yes-no-o8-all-", "yes"): 12, ("yes-no-o8-all-", "no"): 12}


def _label_pool() -> list[dict]:
    """One localized binary key (yes-no-o4-while-c076) whose questions carry every label.

    Videos A0-A3: direct yes, localized yes -> same; A4: direct no, localized yes -> different;
    A5: no direct, localized yes -> no direct; B0: direct no, localized no -> same; B1: direct yes,
    localized no -> different. The direct questions live in another key (yes-no-o4-all-).
    """
    rows = []
    spec = [("A0", "yes", "yes"), ("A1", "yes", "yes"), ("A2", "yes", "yes"), ("A3", "yes", "yes"),
            ("A4", "no", "yes"), ("A5", None, "yes"), ("B0", "no", "no"), ("B1", "yes", "no")]
    for video, direct, localized in spec:
        group = f"{video}|objExists|o4"
        if direct is not None:
            rows.append(record(video_id=video, question_id=f"{video}-0", local="yes-no-o4-all-", object="o4",
                               answer=direct, is_direct=1, direct_group=group))
        rows.append(record(video_id=video, question_id=f"{video}-1", local="yes-no-o4-while-c076", object="o4",
                           window="while", window_action="c076", answer=localized, direct_group=group))
    return rows


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_temporal_labels_decide_which_questions_go(tmp_path, seed):
    # The localized key has yes: 4 same, 1 different, 1 no-direct; no: 1 same, 1 different.
    # 50/50 cuts yes from 6 to 2: equalize same/different (same 4 -> 1), then same, different and
    # no-direct are all at 1, above no-temporal (0): one more goes, from "same" (earliest label).
    # So whatever the seed, the kept yes questions are A4-1 (different) and A5-1 (no direct).
    pool = write_pool(tmp_path / "pool", _label_pool())
    balance_pool(pool, tmp_path / "out", BalanceConfig(seed=seed, open_family="none", open_local="none",
                                                       structural=False))
    kept = {r["question_id"] for r in kept_rows(tmp_path / "out") if r["local"] == "yes-no-o4-while-c076"}
    assert kept == {"A4-1", "A5-1", "B0-1", "B1-1"}


def _open_pool(counts: dict[str, int], template="objWhat", local="r15") -> list[dict]:
    rows, i = [], 0
    for answer, n in counts.items():
        for _ in range(n):
            rows.append(record(video_id=f"W{i // 50:03d}", template=template, local=local, relation=local,
                               answer=answer, is_direct=1, direct_group=f"W{i // 50:03d}|{template}|{local}|{i}"))
            i += 1
    return rows


def test_open_smoothing_family_then_local_faithful_and_fixed(tmp_path):
    # One open key (objWhat, local r15) with answers 300 / 100 / 100: it is the whole "what" family.
    # Faithful: family step -> [258, 100, 100] (see test_smoothing_three_answers_worked_by_hand).
    #   Local step on [258, 100, 100]: b=3 no cut, b=2.25 -> 225, b=1.6875 -> 168, b=1.2656 -> 126,
    #   only the last pass (42) applied: 258 - 42 = 216.
    # Fixed: family -> [126, 100, 100]; local: 126 <= 1.265625 * 100, nothing more -> 126.
    pool = write_pool(tmp_path / "pool", _open_pool({"cup": 300, "dish": 100, "phone": 100}))
    for rule, top in ((FAITHFUL, 216), (FIXED, 126)):
        out = tmp_path / f"out{top}"
        balance_pool(pool, out, BalanceConfig(smoothing=rule, structural=False))
        assert Counter(r["answer"] for r in kept_rows(out)) == {"cup": top, "dish": 100, "phone": 100}


def _structural_pool() -> list[dict]:
    """Enough questions of every structure, binary keys already 50/50, open answers already flat.

    query:   objWhat, 10 answers x 500                                  5,000
    verify:  objExists (video 150 keys + while 50 keys) x (10 yes, 10 no) 4,000 and relExists 50 x 20 = 1,000
    logic:   andObjRelExists 100 keys x 20                               2,000
    choose:  objWhatChoose 150 keys x (10 o4, 10 o5)                     3,000
    compare: actTime 100 keys x (10 before, 10 after)                    2,000
    """
    rows = []
    serial = iter(range(10**9))

    def add(n_keys, yes, no, template, local_of, answers=("yes", "no"), window="video"):
        for k in range(n_keys):
            for a, n in zip(answers, (yes, no)):
                for _ in range(n):
                    i = next(serial)
                    v = f"S{i // 40:05d}"
                    rows.append(record(video_id=v, template=template, local=local_of(k), answer=a, window=window,
                                       window_action="c076" if window != "video" else "",
                                       is_direct=int(window == "video"), direct_group=f"{v}|{template}|{k}|{i}"))

    answers = [f"obj{j}" for j in range(10)]
    for a in answers:
        add(1, 500, 0, "objWhat", lambda k: "r15", answers=(a, "unused"))
    add(150, 10, 10, "objExists", lambda k: f"yes-no-o{k}-all-")
    add(50, 10, 10, "objExists", lambda k: f"yes-no-o{k}-while-c076", window="while")
    add(50, 10, 10, "relExists", lambda k: f"yes-no-r{k}-all-")
    add(100, 10, 10, "andObjRelExists", lambda k: f"yes-no-and-r15-o{k}-o4-all-")
    add(150, 10, 10, "objWhatChoose", lambda k: f"r15-o4-o{k}-r15-o4-o{k}-all-", answers=("o4", "o5"))
    add(100, 10, 10, "actTime", lambda k: f"before-after-c{k:03d}-c001-all-", answers=("before", "after"))
    return rows


def test_structural_mix_hits_targets_and_water_fills(tmp_path):
    # total = 5,000 query / 0.5 = 10,000: verify <= 1,500, compare <= 1,500, choose <= 1,500,
    # logic <= 500. Nothing else changes (binary keys even, open answers flat and accepted).
    # verify: templates [objExists 4,000, relExists 1,000] lose 3,500 lowering the largest first:
    #   4,000 -> 1,000 (3,000), then 250 each: 750 / 750.
    # objExists windows [video 3,000, while 1,000] keep 750: 3,000 -> 1,000, then 625 each: 375 / 375,
    #   i.e. every one of the 150 video keys keeps 2.5 -> pairs: the cut is taken in pairs of one yes
    #   and one no, so every kept key stays exactly 50/50.
    pool = write_pool(tmp_path / "pool", _structural_pool(), shards=3)
    report = balance_pool(pool, tmp_path / "out")
    rows = kept_rows(tmp_path / "out")
    mix = Counter(r["structural"] for r in rows)
    total = sum(mix.values())
    targets = {"query": 0.50, "verify": 0.15, "compare": 0.15, "choose": 0.15, "logic": 0.05}
    for s, share in targets.items():
        assert abs(mix[s] / total - share) <= 0.01, (s, mix[s], total)
    assert mix["query"] == 5000
    per_template = Counter(r["template"] for r in rows)
    assert abs(per_template["objExists"] - 750) <= 2 and abs(per_template["relExists"] - 750) <= 2
    windows = Counter(r["window"] for r in rows if r["template"] == "objExists")
    assert abs(windows["video"] - 375) <= 2 and abs(windows["while"] - 375) <= 2
    per_key = defaultdict(Counter)
    for r in rows:
        if r["ans_type"] == "binary":
            per_key[(r["template"], r["local"])][r["answer"]] += 1
    assert all(len(c) == 2 and len(set(c.values())) == 1 for c in per_key.values())
    assert report["splits"]["train"]["structural_mix"]["after"]["query"] == pytest.approx(0.5, abs=0.01)


def test_report_has_sizes_entropy_and_majority_baseline(tmp_path):
    pool = write_pool(tmp_path / "pool", _binary_pool())
    report = balance_pool(pool, tmp_path / "out", ONLY_BINARY)
    train = report["splits"]["train"]
    # input 40 + 5 + 14 + 3 + 52 = 114 questions: yes 30+5+7+12 = 54, no 10+7+3+40 = 60;
    # kept 20 + 14 + 24 = 58, 29 yes and 29 no
    assert train["rows"]["input"] == 114 and train["rows"]["output"] == 58
    cat = train["categories"]["structural:verify"]
    p = np.array([54, 60]) / 114
    assert cat["before"]["entropy"] == pytest.approx(float(-(p * np.log2(p)).sum()), abs=1e-4)
    assert cat["before"]["majority"] == pytest.approx(60 / 114, abs=1e-4)
    assert cat["after"] == {"questions": 58, "answers": 2, "entropy": 1.0, "majority": 0.5}


def test_agqa2_preset_drops_deep_questions_and_flattens_open_keys(tmp_path):
    rows = _open_pool({"cup": 40, "dish": 25, "phone": 12, "bag": 5})
    rows += [record(video_id="D0", template="objExists", local="yes-no-o4-all-", answer=a, steps=9, is_direct=1,
                    direct_group=f"D0|x|{i}") for i, a in enumerate(["yes", "no"])]
    pool = write_pool(tmp_path / "pool", rows)
    balance_pool(pool, tmp_path / "out", balance_config("agqa2", structural=False))
    kept = kept_rows(tmp_path / "out")
    assert all(r["steps"] <= 8 for r in kept)
    # family step (AGQA smoothing, faithful) on [40, 25, 12, 5] (no tail: 5 > 5 % of 82):
    #   b=3:      cut 2: mean(40, 25) / mean(12, 5) = 3.8 -> the top two scale to 51: [31, 20];
    #             the walk stops at 5 < 10.
    #   b=2.25:   cut 1: 31 -> floor(2.25 * 37 / 3) = 27; cut 2: [27, 20] -> 38: [22, 16].
    #   b=1.6875: cut 1: 22 -> 18; cut 2: [18, 16] -> 28: [15, 13].
    #   b=1.2656: cut 1: 15 -> 12.66, clipped at the next answer: 13; cut 2: 21 < 2 x 12: both at 12.
    #             [12, 12, 12, 5]: the top answer holds 12 / 41 <= 30 %: accepted.
    #   faithful: only the last pass ([3, 1, 0, 0]) applied: [37, 24, 12, 5].
    # local step (uniform): answers with >= 10 questions cut to the smallest (12), "bag" dropped.
    assert smooth_counts(np.array([40, 25, 12, 5]), FAITHFUL).tolist() == [37, 24, 12, 5]
    assert Counter(r["answer"] for r in kept) == {"cup": 12, "dish": 12, "phone": 12}


def test_same_seed_same_bytes_other_seed_other_choice(tmp_path):
    pool = write_pool(tmp_path / "pool", _structural_pool() + _binary_pool(), shards=3)
    balance_pool(pool, tmp_path / "a", BalanceConfig(seed=7))
    balance_pool(pool, tmp_path / "b", BalanceConfig(seed=7))
    balance_pool(pool, tmp_path / "c", BalanceConfig(seed=8))
    a, b, c = file_digests(tmp_path / "a"), file_digests(tmp_path / "b"), file_digests(tmp_path / "c")
    assert a == b
    assert {k: v for k, v in a.items() if k.endswith(".parquet")} != {k: v for k, v in c.items() if k.endswith(".parquet")}
    ids = lambda d: {r["question_id"] for r in kept_rows(tmp_path / d)}
    assert len(ids("a")) == len(ids("c")) and ids("a") != ids("c")


def test_kept_set_does_not_depend_on_batches_or_shards(tmp_path):
    rows = number(_structural_pool() + _label_pool())
    one = write_pool(tmp_path / "one", [dict(r) for r in rows], shards=1)
    four = write_pool(tmp_path / "four", [dict(r) for r in reversed(rows)], shards=4)
    balance_pool(one, tmp_path / "o1", BalanceConfig(seed=3))
    balance_pool(four, tmp_path / "o2", BalanceConfig(seed=3, batch_rows=777))
    ids = lambda d: sorted(r["question_id"] for r in kept_rows(tmp_path / d))
    assert ids("o1") == ids("o2")


def test_dictionary_pages_listing_unused_words_balance_the_same(tmp_path):
    """``tensorqa generate`` writes each vocabulary column with its whole vocabulary ("" included)
    in the dictionary page, words no row holds among them; balancing reads those columns with their
    dictionaries and must see only the words the rows hold (it once rejected the unused "" template)."""
    rows = number(_structural_pool() + _label_pool() + _binary_pool())
    plain = write_pool(tmp_path / "plain", [dict(r) for r in rows], shards=1)
    table = pa.Table.from_pylist(rows, schema=RECORD_SCHEMA)
    extra = {"template": list(TEMPLATE_NAMES), "window": list(WINDOW_KINDS),
             "answer": ["yes", "no", "before", "after", "a never given answer"]}
    coded = {}
    for name in table.column_names:
        column = table.column(name)
        if name in VOCABULARY_COLUMNS:  # dictionary over the column's words, the extra ones and "", in that order
            words = list(dict.fromkeys(column.to_pylist() + extra.get(name, []) + [""]))
            column = pa.DictionaryArray.from_arrays(pa.array([words.index(v) for v in column.to_pylist()], pa.int32()),
                                                    pa.array(words, pa.string()))
        coded[name] = column
    w = ParquetShardWriter(tmp_path / "coded", 0, 1)
    w.write(pa.table(coded))
    w.close()
    dictionary = pq.read_table(next((tmp_path / "coded/data").glob("train-*.parquet")), columns=["template"],
                               read_dictionary=["template"])["template"].chunk(0).dictionary.to_pylist()
    assert "" in dictionary and set(TEMPLATE_NAMES) <= set(dictionary)  # the pages do list unused words
    balance_pool(plain, tmp_path / "a", BalanceConfig(seed=3))
    balance_pool(tmp_path / "coded", tmp_path / "b", BalanceConfig(seed=3))
    assert kept_rows(tmp_path / "a") == kept_rows(tmp_path / "b")
    parquet = lambda d: {k: v for k, v in file_digests(tmp_path / d).items() if k.endswith(".parquet")}
    assert parquet("a") == parquet("b")


def test_partitioned_steps_give_the_same_result(tmp_path, monkeypatch):
    # the per-key steps and the label join run in parts of PART_ROWS questions; tiny parts (many
    # partitions) must keep exactly the same questions as one part
    import tensorqa.agqa.balancing.labels as labels_module
    import tensorqa.agqa.balancing.select as select_module

    rows = number(_structural_pool() + _label_pool() + _binary_pool())
    pool = write_pool(tmp_path / "pool", rows, shards=2)
    balance_pool(pool, tmp_path / "whole", BalanceConfig(seed=5))
    monkeypatch.setattr(select_module, "PART_ROWS", 97)
    monkeypatch.setattr(labels_module, "PART_ROWS", 89)
    balance_pool(pool, tmp_path / "parts", BalanceConfig(seed=5))
    assert file_digests(tmp_path / "whole") == file_digests(tmp_path / "parts")
    rng = np.random.default_rng(4)
    g = mix64(rng.integers(0, 500, 5000).astype(np.uint64))
    d, loc, ans = rng.random(5000) < 0.2, rng.random(5000) < 0.7, rng.integers(0, 2, 5000)
    assert (temporal_labels(g, d, loc & ~d, ans, part_rows=37) == temporal_labels(g, d, loc & ~d, ans)).all()


def test_errors_name_the_problem(tmp_path):
    write_pool(tmp_path / "pool", [record(video_id="X", template="objExists", local="yes-no-o4-all-"),
                                    record(video_id="Y", template="objExists", local="yes-no-o4-all-")])
    (tmp_path / "pool" / "data" / "train-00001-of-00002.parquet").unlink()
    with pytest.raises(TensorQAError, match="train shard 00001 of 00002 is missing"):
        balance_pool(tmp_path / "pool", tmp_path / "out")
    bad = write_pool(tmp_path / "bad", [record(video_id="X", template="objExists", window="someday")])
    with pytest.raises(TensorQAError, match="unknown window 'someday'"):
        balance_pool(bad, tmp_path / "out2")
    good = write_pool(tmp_path / "good", _binary_pool())
    balance_pool(good, tmp_path / "out3", ONLY_BINARY)
    with pytest.raises(TensorQAError, match="already holds a pool"):
        balance_pool(good, tmp_path / "out3", ONLY_BINARY)


def test_records_must_not_hold_nulls_outside_sg_grounding(tmp_path):
    """Every RECORD_SCHEMA column but sg_grounding is non-nullable in the files; a table holding a
    null there (a pool written by another tool) is refused with the shard and the column named,
    and nothing is published."""
    rows = number([record(video_id=f"V{i}") for i in range(4)])
    assert [f.name for f in RECORD_SCHEMA if f.nullable] == ["sg_grounding"]
    rows[2]["answer"] = None
    nullable = pa.schema([f.with_nullable(True) for f in RECORD_SCHEMA])
    writer = ParquetShardWriter(tmp_path / "out", 0, 1)
    with pytest.raises(TensorQAError, match=r"data: column 'answer' holds 1 null value\(s\)"):
        writer.write(pa.Table.from_pylist(rows, schema=nullable))
    writer.abort()
    assert not list((tmp_path / "out" / "data").glob("*.parquet"))


def test_cli_balance(tmp_path, capsys):
    pool = write_pool(tmp_path / "pool", _binary_pool())
    assert main(["balance", str(pool), "--out", str(tmp_path / "out"), "--seed", "3", "--no-structural", "--quiet"]) == 0
    assert "structural mix" in capsys.readouterr().out
    assert (tmp_path / "out" / "README.md").read_text().count("binary") >= 1
    assert main(["balance", str(pool), "--out", str(tmp_path / "out2"), "--shares", "query=x", "--quiet"]) == 2


@pytest.mark.parametrize("semantics, flags, all_passes", [
    ("agqa", [], False), ("strict", [], True), (None, [], False), ("agqa", ["--all-passes"], True)])
def test_smoothing_passes_follow_the_pools_semantics(tmp_path, semantics, flags, all_passes):
    # §f10: AGQA applies only the last smoothing pass's removals; the strict semantics (and
    # --all-passes) apply every pass. balance reads the semantics the pool was generated under from
    # its done markers, and passes it on in its own
    rows = [record(video_id=f"V{i % 7}", template="objWhat", answer=a, relation="r15", local="r15")
            for i, a in enumerate(["cup"] * 40 + ["phone"] * 8 + ["book"] * 4)]
    pool = write_pool(tmp_path / "pool", rows, marker=None if semantics is None else {"semantics": semantics})
    out = tmp_path / "out"
    assert main(["balance", str(pool), "--out", str(out), "--quiet", *flags]) == 0
    marker = json.loads(next((out / "data").glob(".done-*.json")).read_text())
    assert marker["balance"]["smoothing"]["last_pass_only"] is (not all_passes)
    assert marker["semantics"] == semantics


def test_a_shard_without_rows_of_a_split_has_no_file_and_the_pool_is_complete(tmp_path):
    from tensorqa.agqa.balancing.scan import pool_files

    # video X (train) goes to shard 0, Y (test) to shard 1: each shard has rows of one split only
    pool = write_pool(tmp_path / "pool", [record(video_id="X", template="objExists", local="yes-no-o4-all-"),
                                          record(video_id="Y", template="objExists", local="yes-no-o4-all-",
                                                 split="test")])
    names = sorted(p.name for p in (pool / "data").glob("*.parquet"))
    assert names == ["test-00001-of-00002.parquet", "train-00000-of-00002.parquet"]
    files = pool_files(pool)
    assert [p.name for p in files["train"]] == ["train-00000-of-00002.parquet"]
    assert [p.name for p in files["test"]] == ["test-00001-of-00002.parquet"]
    (pool / "data" / ".done-00000-of-00002.json").unlink()  # without its marker, shard 0 may have lost a file
    with pytest.raises(TensorQAError, match="incomplete pool: shard 00000 of 00002 has no done marker"):
        pool_files(pool)
