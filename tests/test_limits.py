"""tensorqa.limits: the one place input names, sizes and nesting are bounded. The commands' use of it
is tested end to end in tests/test_hostile_inputs.py; here, each check on its own."""

from __future__ import annotations

import pytest

from tensorqa.errors import TensorQAError
from tensorqa.limits import (MAX_JSON_DEPTH, MAX_NAME, PICKLE_ENTRY_MARGIN, EntryBudget, check_depth, check_name,
                             check_split, parse_json, read_json, shown)


@pytest.mark.parametrize("name", ["Q0042", "VERYLONGVIDEOID_1", "CLEVR_val_000001.png", "a", "9" * MAX_NAME])
def test_plain_names_pass_whole(name):
    assert check_name(name, "f.pkl", "video id") == name


@pytest.mark.parametrize("name", ["", "../x", "/abs/dir/ABS", "a/b", "a\\b", ".hidden", "-flag", "a\x00b", "é",
                                  "9" * (MAX_NAME + 1), 7, None, True, b"Q0042"])
def test_names_that_could_leave_a_folder_or_are_not_text_are_refused(name):
    with pytest.raises(TensorQAError) as e:
        check_name(name, "scenes.json: scene 3", "image_filename")
    line = str(e.value)
    assert line.startswith("scenes.json: scene 3: image_filename ") and "\n" not in line


@pytest.mark.parametrize("split, ok", [("train", True), ("val", True), ("test_2", True), ("new", True),
                                       ("validation-x", False), ("../train", False), ("2train", False),
                                       ("t" * 33, False), ("", False)])
def test_splits_are_identifiers(split, ok):
    if ok:
        assert check_split(split, "s.json") == split
    else:
        with pytest.raises(TensorQAError, match="split"):
            check_split(split, "s.json")


def test_shown_never_builds_a_huge_repr():
    shared = (1,)
    for _ in range(200):  # 2**200 leaves if walked: shown must not walk it
        shared = (shared, shared)
    assert shown(shared) == "<tuple of 2>"
    assert shown(10 ** 5000) == "<16610-bit integer>"
    assert len(shown("x" * 10_000)) <= 60 and shown("abc") == "'abc'"


def test_nesting_past_the_limit_is_refused_without_recursion():
    deep: list = []
    node = deep
    for _ in range(MAX_JSON_DEPTH):
        node.append([])
        node = node[0]
    check_depth(deep, "s.json", "info")  # exactly the limit
    node.append([])
    with pytest.raises(TensorQAError, match=f"s.json: info nests deeper than {MAX_JSON_DEPTH} levels"):
        check_depth(deep, "s.json", "info")


@pytest.mark.parametrize("text, problem", [("{", "not JSON"), ("[" * 100_000 + "]" * 100_000, "nests too deeply"),
                                           ("1" * 5000, "cannot be read"), (b"{\"a\": \"\xc3\x28\"}", "not UTF-8")])
def test_parse_json_failures_are_one_line(text, problem):
    with pytest.raises(TensorQAError) as e:
        parse_json(text, "p.json", "predictions")
    assert str(e.value).startswith("p.json: ") and problem in str(e.value) and "\n" not in str(e.value)


def test_read_json_names_a_missing_file(tmp_path):
    with pytest.raises(TensorQAError, match="nope.json: cannot read scores"):
        read_json(tmp_path / "nope.json", "scores")
    (tmp_path / "ok.json").write_text('{"a": [1, 2]}')
    assert read_json(tmp_path / "ok.json", "scores") == {"a": [1, 2]}


def test_entry_budget_is_the_size_plus_a_margin():
    budget = EntryBudget("g.pkl", 100, "stsgs")
    budget.spend(100 + PICKLE_ENTRY_MARGIN)  # all of it
    with pytest.raises(TensorQAError, match="g.pkl: the stsgs pickle expands to more entries than its size allows"):
        budget.spend(1)


def _own_limits():
    import resource

    return resource.getrlimit(resource.RLIMIT_CPU)[0], resource.getrlimit(resource.RLIMIT_AS)[0]


def test_a_pickle_loads_under_limits_set_from_its_size(tmp_path):
    """As limits.md says: 1 s plus 2 s of CPU per MiB, 2 GiB plus 32 bytes per byte of address space
    (on top of what the process maps), set in the child that loads it."""
    from tensorqa.scenes.loaders.safe_pickle import load_bounded

    p = tmp_path / "f.pkl"
    p.write_bytes(b"\0" * (3 * 2**20))
    cpu, address_space = load_bounded([p], "test", _own_limits)
    assert cpu == 1 + 6
    assert address_space >= 2 * 2**30 + 32 * 3 * 2**20 and address_space < 2**40
