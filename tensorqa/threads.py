"""How many CPU threads torch runs, chosen once per command from the cores this process may use.

torch starts one thread per physical core; where other processes keep cores busy its threads wait for
each other at every parallel operation. :func:`set_torch_threads` gives torch the cores this process
may use (affinity, capped by a cgroup quota) less those the 1-minute load average says are busy,
shared among the command's processes. An explicit ``--threads`` or ``OMP_NUM_THREADS`` /
``MKL_NUM_THREADS`` wins. Nothing here imports torch until a count is set.
"""

from __future__ import annotations

import math
import os

USER_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def cgroup_cpu_limit(root: str = "/sys/fs/cgroup") -> float | None:
    """The CPUs a cgroup CPU quota allows this process (cgroup v2 ``cpu.max``, or v1
    ``cpu/cpu.cfs_quota_us`` over ``cpu/cpu.cfs_period_us``), or None without a quota."""
    try:
        with open(os.path.join(root, "cpu.max")) as f:
            quota, period = f.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(root, "cpu", "cpu.cfs_quota_us")) as f:
            quota = int(f.read())
        with open(os.path.join(root, "cpu", "cpu.cfs_period_us")) as f:
            period = int(f.read())
        return None if quota <= 0 or period <= 0 else quota / period
    except (OSError, ValueError):
        return None


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the OS reports one, capped by a
    cgroup CPU quota (rounded up: a quota of 1.5 CPUs keeps 2 cores partly busy)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    limit = cgroup_cpu_limit()
    return max(1, min(cores, math.ceil(limit)) if limit else cores)


def idle_cores() -> int:
    """:func:`usable_cores` less the cores other processes keep busy (the 1-minute load average
    over the affinity's cores), at least 1."""
    cores = usable_cores()
    try:
        busy = os.getloadavg()[0]
    except (OSError, AttributeError):  # no load average on this system
        return cores
    online = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, round(online - busy)))


def user_threads() -> int | None:
    """The thread count the user set in the environment (``OMP_NUM_THREADS``, else
    ``MKL_NUM_THREADS``), or None."""
    for name in USER_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def torch_threads(jobs: int = 1) -> int:
    """Threads for each of ``jobs`` processes that run torch side by side: the user's
    ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS``, else the idle cores (:func:`idle_cores`) shared
    among the processes, at least 1."""
    return user_threads() or max(1, idle_cores() // max(1, jobs))


def set_torch_threads(jobs: int = 1, threads: int | None = None) -> int:
    """Set torch's CPU threads for this process, one of ``jobs`` processes the command runs side
    by side: ``threads`` if given (an explicit ``--threads``), else :func:`torch_threads`. Returns
    the count."""
    import torch

    count = threads or torch_threads(jobs)
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    return count
