"""``scenes.h5``: the header check and the reader base both store kinds share: each refusal is one
line naming the file, and a failed check closes the file."""

import h5py
import pytest

from tensorqa import TensorQAError
from tensorqa.scenes.h5 import H5Reader, check_header, corrupt_store


def _file(path, **attrs):
    with h5py.File(path, "w") as f:
        f.attrs.update({"format": "fmt", "format_version": 3, "vocab_hash": "abc", **attrs})
    return h5py.File(path, "r")


@pytest.mark.parametrize("attrs, message", [
    ({}, None),
    ({"format": "other"}, "not a tensorqa thing store"),
    ({"format_version": 2}, "format_version 2 is not supported"),
    ({"format_version": True}, "is not supported"),  # a bool is not a version
    ({"vocab_hash": "zzz"}, "vocabulary mismatch"),
])
def test_check_header(tmp_path, attrs, message):
    p = tmp_path / "s.h5"
    with _file(p, **attrs) as f:
        if message is None:
            check_header(f, p, "fmt", "thing store", 3, "abc")
            return
        with pytest.raises(TensorQAError, match=message) as e:
            check_header(f, p, "fmt", "thing store", 3, "abc")
    assert str(e.value).startswith(str(p)) and "\n" not in str(e.value)


def test_corrupt_store_is_one_line():
    e = corrupt_store("s.h5", OSError("Unable to read\nobject header\n..."))
    assert str(e) == "s.h5: corrupt store (OSError: Unable to read)"


class _Reader(H5Reader):
    def __init__(self, path, check):
        self.path, self._f = path, h5py.File(path, "r")
        self._validated(check)


def test_a_failed_check_closes_the_file(tmp_path):
    p = tmp_path / "s.h5"
    _file(p).close()

    def damaged():
        raise KeyError("rel_bits")

    def refused():
        raise TensorQAError(f"{p}: no")

    for check, message in ((damaged, r"corrupt store \(KeyError"), (refused, ": no")):
        opened = []
        with pytest.raises(TensorQAError, match=message):
            r = _Reader.__new__(_Reader)
            r.path, r._f = p, h5py.File(p, "r")
            opened.append(r._f)
            r._validated(check)
        assert not opened[0].id.valid  # closed
    with _Reader(p, lambda: None) as r:
        assert r._f.id.valid
    assert not r._f.id.valid
