"""``tensorqa.direct_file``: whatever the chunks, the buffer size and the mode (direct, or through the
page cache where O_DIRECT is refused or off; written by the writer thread or the caller's), the
file holds exactly the bytes put, in order; a failed write is raised to the caller."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorqa.direct_file import BLOCK, DirectFile

_CHUNKS = st.lists(st.binary(max_size=3 * BLOCK), max_size=12)


@pytest.mark.parametrize("background", [True, False], ids=["thread", "caller"])
@pytest.mark.parametrize("direct", [True, False], ids=["direct", "buffered"])
@settings(max_examples=40, deadline=None)
@given(chunks=_CHUNKS, size=st.sampled_from([1, BLOCK, 3 * BLOCK + 5]))
def test_the_file_holds_the_bytes_put(tmp_path_factory, direct, background, chunks, size):
    p = tmp_path_factory.mktemp("direct") / "f.bin"
    f = DirectFile(p, size, direct, background)
    for c in chunks:
        f.put(c)
    f.close()
    assert p.read_bytes() == b"".join(chunks)
    assert f.fd == -1


def test_writing_into_the_buffer_then_flushing(tmp_path):
    """The writers' way: bytes written at buf[fill:], fill moved, flush; room() grows the buffer."""
    rng = np.random.default_rng(0)
    want = []
    f = DirectFile(tmp_path / "g.bin", BLOCK)
    for n in rng.integers(0, 3 * BLOCK, 30):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        f.room(n)
        f.buf[f.fill:f.fill + n] = data  # (buf is read afresh: flush swaps buffers)
        f.fill += n
        f.flush()
        assert f.fill < BLOCK
        want.append(data.tobytes())
    f.close()
    assert (tmp_path / "g.bin").read_bytes() == b"".join(want)


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no tmpfs at /dev/shm")
def test_a_file_system_without_o_direct_is_written_through_the_page_cache():
    p = Path("/dev/shm") / f"tensorqa-direct-{os.getpid()}.bin"
    try:
        f = DirectFile(p, BLOCK)
        f.put(b"x" * 5000)
        f.close()
        assert p.read_bytes() == b"x" * 5000
    finally:
        p.unlink(missing_ok=True)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("background", [True, False], ids=["thread", "caller"])
def test_a_failed_write_is_raised_to_the_caller(background):
    """/dev/full refuses every write (ENOSPC): the error reaches the caller, at the flush or at close."""
    f = DirectFile("/dev/full", BLOCK, background=background)
    with pytest.raises(OSError) as e:
        for _ in range(4):
            f.put(b"y" * (2 * BLOCK))
        f.close()
    assert e.value.errno == errno.ENOSPC
    f.abort()
    assert f.fd == -1
