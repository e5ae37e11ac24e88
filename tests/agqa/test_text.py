"""agqa/text.py: text columns built from lexicon ids, checked against plain Python string building."""

import numpy as np
import pyarrow as pa
import pytest

from tensorqa.agqa import text
from tensorqa.agqa.text import Lexicon, compose, gather_text, join_patterns, split_pattern


def test_split_and_join_patterns():
    assert split_pattern("Did they {relation} {object}{window}?") == ["Did they ", "relation", " ", "object", "", "window", "?"]
    assert split_pattern("Exists(<object>, x)") == ["Exists(", "object", ", x)"]
    assert split_pattern("no slots") == ["no slots"]
    # "yes-no-" + "{relation}-{object}" + "-{time}" reads "yes-no-{relation}-{object}-{time}"
    joined = join_patterns(["yes-no-"], split_pattern("{relation}-{object}"), ["-", "time", ""])
    assert joined == ["yes-no-", "relation", "-", "object", "-", "time", ""]


def test_gather_text_fixed_and_ragged():
    lex = pa.array(["", "a", "bc", "def", "ü"])
    ids = np.array([[1, 2, 0], [3, 0, 4], [0, 0, 0]])
    assert gather_text(lex, ids).to_pylist() == ["abc", "defü", ""]
    flat, lengths = np.array([1, 2, 3, 4, 4]), np.array([2, 0, 3])
    assert gather_text(lex, flat, lengths).to_pylist() == ["abc", "", "defüü"]
    assert gather_text(lex, np.zeros((0, 3), np.int64)).to_pylist() == []


def _random_case(rng, M, extra=()):
    """A lexicon of 40 words, 7 patterns (two slots, one of two atoms; one pattern of literals only)
    and M random rows; ``extra`` strings are appended after the lexicon (per-block strings) and
    every tenth row's s1 is one of them. Returns the lexicon, the array to render from, the rows'
    groups, the patterns, the slot ids and the texts built with plain Python."""
    words = [f"w{i}" + "x" * int(rng.integers(0, 5)) for i in range(40)]
    lex = Lexicon()
    lex.section("words", words)
    patterns = {g: [f"lit{g}a ", "s1", f" lit{g}b", "s2", "?" if g % 2 else ""] if g % 3 else [f"only literal {g}"]
                for g in range(7)}
    patterns[5] = ["", "s2", " then ", "s1", ""]  # slots in the other order
    for pat in patterns.values():
        lex.literals(pat)
    array, first = lex.extended(list(extra)) if extra else (lex.array(), len(lex))
    group = rng.integers(0, 7, M)
    s1 = rng.integers(-1, len(words), M)  # -1: the empty string
    s2 = rng.integers(-1, len(words), (M, 2))  # a two-atom slot
    s1_ids = lex.ids("words", s1)
    s1_text = ["" if i < 0 else words[i] for i in s1]
    if extra:
        pick = rng.integers(0, len(extra), M)
        every10 = np.arange(M) % 10 == 0
        s1_ids = np.where(every10, first + pick, s1_ids)
        s1_text = [extra[pick[i]] if every10[i] else t for i, t in enumerate(s1_text)]
    slots = {"s1": s1_ids, "s2": np.stack([lex.ids("words", s2[:, 0]), lex.ids("words", s2[:, 1])], 1)}

    def word(i):
        return "" if i < 0 else words[i]

    expected = []
    for i in range(M):
        values = {"s1": s1_text[i], "s2": word(s2[i, 0]) + word(s2[i, 1])}
        pat = patterns[int(group[i])]
        expected.append("".join(x if k % 2 == 0 else values[x] for k, x in enumerate(pat)))
    return lex, array, group, patterns, slots, expected


@pytest.mark.parametrize("M", [0, 1, 17, 500])
def test_compose_matches_python_formatting(M):
    lex, _, group, patterns, slots, expected = _random_case(np.random.default_rng(M), M)
    assert compose(lex, group, patterns.__getitem__, slots).to_pylist() == expected


@pytest.mark.parametrize("min_run_rows", [1, 1 << 62])  # every row in a run / every row by group
@pytest.mark.parametrize("runs", [False, True])
def test_compose_fills_runs_and_groups_alike(monkeypatch, min_run_rows, runs):
    # Rows of one group in long runs (as a block's programs come, per video and template) or mixed.
    monkeypatch.setattr(text, "MIN_RUN_ROWS", min_run_rows)
    rng = np.random.default_rng(11)
    lex, _, group, patterns, slots, expected = _random_case(rng, 700)
    if runs:
        order = np.argsort(group, kind="stable")  # 7 runs of ~100 rows
        group, slots = group[order], {k: v[order] for k, v in slots.items()}
        expected = [expected[i] for i in order]
    assert compose(lex, group, patterns.__getitem__, slots).to_pylist() == expected


def test_compose_across_output_chunks_and_extended_lexicon(monkeypatch):
    # Chunks of 7 rows (500 rows span 72 chunks), and per-block strings appended to the lexicon.
    monkeypatch.setattr(text, "CHUNK_ROWS", 7)
    lex, array, group, patterns, slots, expected = _random_case(np.random.default_rng(3), 500,
                                                                 extra=("<extra-0>", "<extra-1>"))
    out = compose(lex, group, patterns.__getitem__, slots, array)
    assert isinstance(out, pa.ChunkedArray) and out.to_pylist() == expected


def test_extend_appends_block_strings_without_copying_the_lexicon():
    """Lexicon.extend: the lexicon's strings then the parts' (sliced and chunked arrays too), block
    after block; the lexicon itself stays in one buffer, which a grown lexicon replaces."""
    lex = Lexicon()
    lex.section("words", ["a", "", "ccc"])
    blocks = [[pa.array(["x", "", "yy"]), pa.chunked_array([pa.array(["q"]), pa.array(["rr", ""])])],
              [pa.array(["zz" * 50] * 40).slice(3, 30)],  # longer than the scratch: it grows
              [pa.array([], pa.string()), pa.array(["é", "ü"])]]
    for parts in blocks:
        out = lex.extend(parts)
        out.validate(full=True)
        assert out.to_pylist() == lex.array().to_pylist() + sum((p.to_pylist() for p in parts), [])
    lex.literal("new")  # the lexicon grew: its strings move to a new buffer
    out = lex.extend([pa.array(["tail"])])
    assert out.to_pylist() == ["", "a", "", "ccc", "new", "tail"]
    assert lex.extended(["x", "y"])[0].to_pylist()[-2:] == ["x", "y"] and lex.extended(["x"])[1] == 5


def test_compose_refuses_unregistered_literals_with_an_extended_lexicon():
    lex = Lexicon()
    lex.section("words", ["a"])
    extended, _ = lex.extended(["x"])
    with pytest.raises(RuntimeError):
        compose(lex, np.zeros(2, np.int64), lambda g: ["new literal ", "s", ""], {"s": np.ones(2, np.int64)}, extended)


@pytest.mark.parametrize("n", [0, 1, 7, 1000, 50_000])
def test_first_occurrences_match_unique(n):
    """The distinct localization keys of a block, found with a hash table: each code stands for one
    key, and each code's position is that key's first occurrence (``np.unique``'s return_index)."""
    from tensorqa.agqa.records import _first_occurrences

    key = np.random.default_rng(n).integers(0, max(2, n // 7), n) * 1_000_003  # sparse int64 keys
    inverse, first = _first_occurrences(key)
    distinct, first_ref = np.unique(key, return_index=True)
    assert len(first) == len(distinct) and sorted(first) == sorted(first_ref)
    assert np.array_equal(key[first][inverse], key)


def test_lexicon_ids_map_minus_one_to_the_empty_string():
    lex = Lexicon()
    base = lex.section("words", ["a", "b", "c"])
    ids = lex.ids("words", np.array([2, -1, 0], np.int32))
    assert ids.dtype == np.int32 and ids.tolist() == [base + 2, 0, base]
    assert lex.array().take(pa.array(ids)).to_pylist() == ["c", "", "a"]


@pytest.mark.parametrize("bound", [1, 16, 1 << 15, (1 << 15) + 1, 1 << 20])
def test_stable_order_is_a_stable_argsort(bound):
    keys = np.random.default_rng(bound).integers(0, bound, 20_000).astype(np.int32)
    assert np.array_equal(text.stable_order(keys, bound), np.argsort(keys, kind="stable"))
