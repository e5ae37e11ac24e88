"""torch's thread count: the cores this process may use, less the busy ones, shared among jobs;
the user's setting wins."""

import os

import pytest
import torch

from tensorqa import threads


@pytest.fixture
def machine(monkeypatch):
    """A machine of ``cores`` cores in the affinity, a cgroup quota and a load average, as given."""
    for name in threads.USER_VARIABLES:
        monkeypatch.delenv(name, raising=False)

    def set_up(cores: int, quota: float | None = None, load: float = 0.0):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
        monkeypatch.setattr(threads, "cgroup_cpu_limit", lambda root="": quota)
        monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    return set_up


def test_idle_cores_are_shared_among_the_jobs(machine):
    machine(8)
    assert threads.torch_threads() == 8 and threads.torch_threads(jobs=3) == 2 and threads.torch_threads(jobs=16) == 1
    machine(8, load=5.6)  # about 6 cores busy elsewhere: 2 left
    assert threads.idle_cores() == 2 and threads.torch_threads() == 2 and threads.torch_threads(jobs=2) == 1
    machine(2, load=9.0)  # a loaded 2-core machine: one thread, not two waiting for each other
    assert threads.torch_threads() == 1


def test_a_cgroup_quota_caps_the_cores(machine):
    machine(64, quota=1.5)  # 1.5 CPUs of quota keep 2 cores partly busy
    assert threads.usable_cores() == 2 and threads.torch_threads() == 2
    machine(64, quota=2.0, load=40.0)  # the host's load leaves 24 idle cores; the quota allows 2
    assert threads.torch_threads() == 2


def test_the_users_setting_wins(machine, monkeypatch):
    machine(8, load=7.9)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads.torch_threads() == 3 and threads.torch_threads(jobs=2) == 3
    before = torch.get_num_threads()
    try:
        assert threads.set_torch_threads(threads=5) == 5 and torch.get_num_threads() == 5  # --threads
        assert threads.set_torch_threads() == 3 and torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_cgroup_quota_files(tmp_path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("150000 100000\n")
    assert threads.cgroup_cpu_limit(str(v2)) == 1.5
    (v2 / "cpu.max").write_text("max 100000\n")
    assert threads.cgroup_cpu_limit(str(v2)) is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("200000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert threads.cgroup_cpu_limit(str(v1)) == 2.0
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert threads.cgroup_cpu_limit(str(v1)) is None
    assert threads.cgroup_cpu_limit(str(tmp_path / "none")) is None


def test_commands_that_run_torch_set_it(machine, tmp_path, capsys):
    from tensorqa.cli import main
    from tensorqa.scenes.pack import pack_default

    store = pack_default(tmp_path / "s.h5", videos=2, seed=1, progress=False)
    before = torch.get_num_threads()
    try:
        machine(3)
        assert main(["info", str(store)]) == 0 and torch.get_num_threads() == 3
        machine(3, load=1.2)
        assert main(["export-agqa", str(store), "--out", str(tmp_path / "g.pkl"), "--quiet"]) == 0
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    capsys.readouterr()
