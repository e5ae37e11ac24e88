"""safe_pickle: the restricted unpickler (no global outside numpy's array reconstruction) and
load_bounded (the loader in a child process under CPU and memory limits relative to the size)."""

import os
import pickle
import time

import numpy as np
import pytest

from tensorqa import TensorQAError
from tensorqa import limits
from tensorqa.scenes.loaders import load_agqa_stsgs
from tensorqa.scenes.loaders.safe_pickle import load_bounded


def _marker_payloads(marker):
    """Pickles that run ``touch marker`` (or import a module) when loaded by pickle itself, written
    by hand in every opcode that resolves a global: GLOBAL, STACK_GLOBAL, INST, OBJ, NEWOBJ, and
    REDUCE on os / posix / subprocess / builtins."""
    cmd = f"touch {marker}".encode()
    s = lambda b: b"\x8c" + bytes([len(b)]) + b  # noqa: E731 SHORT_BINUNICODE
    return {
        "GLOBAL os.system": b"cos\nsystem\n(" + b"V" + cmd + b"\ntR.",
        "GLOBAL posix.system": b"cposix\nsystem\n(V" + cmd + b"\ntR.",
        "STACK_GLOBAL os.system": b"\x80\x04" + s(b"os") + s(b"system") + b"\x93" + s(cmd) + b"\x85R.",
        "INST os.system": b"(V" + cmd + b"\nios\nsystem\n.",
        "OBJ os.system": b"(cos\nsystem\nV" + cmd + b"\no.",
        "subprocess.Popen": b"csubprocess\nPopen\n((Vtouch\nV" + str(marker).encode() + b"\nltR.",
        "builtins.eval": b"cbuiltins\neval\n(V__import__('os').system('" + cmd + b"')\ntR.",
        "builtins.exec": b"cbuiltins\nexec\n(V__import__('os').system('" + cmd + b"')\ntR.",
        "builtins.getattr": b"cbuiltins\ngetattr\n(cos\nsystem\nV__call__\ntR(V" + cmd + b"\ntR.",
    }


@pytest.mark.parametrize("name", list(_marker_payloads("m")))
def test_malicious_pickles_run_nothing(tmp_path, name):
    marker = tmp_path / "pwned"
    data = _marker_payloads(marker)[name]
    ran = pickle.loads(data)  # the payload is real: pickle itself runs it
    if hasattr(ran, "wait"):
        ran.wait()
    assert marker.exists()
    marker.unlink()
    p = tmp_path / "AGQA_train_stsgs.pkl"
    p.write_bytes(b"\x80\x02}(V46GP8\n" + data[data.startswith(b"\x80") * 2:-1] + b"u.")
    with pytest.raises(TensorQAError, match="unsafe AGQA scene-graph pickle: refused global"):
        load_agqa_stsgs(p)
    assert not marker.exists()


def _arrays(n):
    return [np.arange(n, dtype=np.int32), np.ones((n, 3), bool), "text"]


def test_the_result_comes_back_whole(tmp_path):
    p = tmp_path / "f.pkl"
    p.write_bytes(b"x" * 100)
    back = load_bounded([p], "test", _arrays, 100_000)
    want = _arrays(100_000)
    assert all(np.array_equal(a, b) for a, b in zip(back[:2], want[:2])) and back[2] == "text"
    assert back[0].dtype == np.int32 and back[1].shape == (100_000, 3)


def _fail():
    raise TensorQAError("f.pkl: video 'A': a problem")


def _spin():
    t = time.process_time()
    while time.process_time() - t < 60:
        pass


def _allocate():
    return bytearray(1 << 30)


def test_errors_work_and_memory(tmp_path, monkeypatch):
    p = tmp_path / "f.pkl"
    p.write_bytes(b"x" * 100)
    with pytest.raises(TensorQAError, match=r"^f\.pkl: video 'A': a problem$"):
        load_bounded([p], "test", _fail)
    monkeypatch.setattr(limits, "PICKLE_CPU_FLOOR", 1)
    t = time.monotonic()
    with pytest.raises(TensorQAError, match=r"f\.pkl: the test pickle takes more work to load than its size allows \(over 1 s"):
        load_bounded([p], "test", _spin)
    assert time.monotonic() - t < 30
    monkeypatch.setattr(limits, "PICKLE_MEMORY_FLOOR", 256 * 2**20)
    with pytest.raises(TensorQAError, match=r"f\.pkl: the test pickle needs more memory than its size allows"):
        load_bounded([p], "test", _allocate)


def test_a_fifo_is_refused_before_it_blocks(tmp_path):
    fifo = tmp_path / "AGQA_train_stsgs.pkl"
    os.mkfifo(fifo)
    with pytest.raises(TensorQAError, match="AGQA_train_stsgs.pkl: not a regular file"):
        load_agqa_stsgs(fifo)
