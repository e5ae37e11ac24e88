"""``generate(..., jobs=J)``: the J shards of one machine as J spawned processes (shard i of J), each
with ``cores // J`` torch threads (CUDA: shard i on GPU i mod count), since rendering and writing
use one core per process. Progress comes back through shared counters to one bar. A failing shard
or SIGTERM stops them all (a child also ends when its parent is gone); complete shards stay, the
rest are redone on the next run. ``--jobs auto``: :func:`auto_jobs`."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import signal
import threading
import time
import traceback
from collections import Counter
from dataclasses import fields

from tqdm import tqdm

from tensorqa.errors import TensorQAError
from tensorqa.agqa.semantics import get_semantics
from tensorqa.scenes.store import open_store
from tensorqa.writers import resume_shard
from tensorqa.outputs import output_lock
from tensorqa.agqa.pipeline import generate_shard
from tensorqa.agqa.options import (StageTimes, default_grounding, record_params, refuse_other_shard_counts,
                                   resolve_templates, shard_lock_name, shared_gpu, videos_used)
from tensorqa.threads import torch_threads, usable_cores  # noqa: F401  (usable_cores: callers of jobs)

# statistics summed over shards: StageTimes' counters and stage seconds
SUMMED = tuple(f.name for f in fields(StageTimes) if f.name != "per_template")

# Peak resident memory of one shard process at the default block size, rounded up from
# benchmarks/RESULTS.md: 2.5 GiB on the CPU (16-video blocks), 4.8 GiB on CUDA (64-video blocks).
PROCESS_GIB = {"cpu": 3.0, "cuda": 6.0}

# the most shard processes one run starts (--jobs 100000 kept starting processes for minutes);
# a run also starts no more processes than it has videos
MAX_JOBS = 1024


def memory_gib() -> float | None:
    """The memory this process may use: MemTotal, or a smaller cgroup v2 limit (containers);
    None where neither can be read."""
    limits = []
    try:
        with open("/proc/meminfo") as f:
            limits += [int(line.split()[1]) / 2**20 for line in f if line.startswith("MemTotal:")]
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            text = f.read().strip()
        if text != "max":
            limits.append(int(text) / 2**30)
    except (OSError, ValueError):
        pass
    return min(limits) if limits else None


def auto_jobs(device: str = "cpu") -> int:
    """``--jobs auto``: one process per usable core, as many as the memory holds
    (:data:`PROCESS_GIB` each)."""
    cores = usable_cores()
    gib = memory_gib()
    if gib is None:
        return max(1, cores)
    per = PROCESS_GIB["cuda" if str(device).startswith("cuda") else "cpu"]
    return max(1, min(cores, int(gib // per)))


def _exit_with_parent(parent: int, interval: float = 0.5) -> None:
    """In a shard process: end it when the parent process has gone (killed, it could not stop its
    children), rather than keep writing shards nobody waits for."""
    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(1)
    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


class _Terminated(BaseException):
    """SIGTERM in the parent of the shard processes: unwinds through ``generate_jobs``' cleanup."""


# From the start of a --jobs run until its last shard process has started, SIGTERM is held (noted,
# then acted on): a start cut short leaves a child reading half its start-up data (a traceback
# from multiprocessing), and a parent ended by the default action leaks its queue's semaphores.
_SIGTERM_STATE = {"holding": False, "pending": False}


def _on_sigterm(signum, frame):
    if _SIGTERM_STATE["holding"]:
        _SIGTERM_STATE["pending"] = True
        return
    raise _Terminated()


@contextlib.contextmanager
def _sigterm_stops_the_run():
    """Install :func:`_on_sigterm` (holding SIGTERM at first) for the body; restore the old action."""
    _SIGTERM_STATE.update(holding=True, pending=False)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
        installed = True
    except ValueError:  # not the main thread: the children's parent watch still stops them
        installed = False
    try:
        yield
    finally:
        _SIGTERM_STATE["holding"] = False
        if installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _release_sigterm() -> None:
    """End the hold: a SIGTERM that came during it stops the run now."""
    _SIGTERM_STATE["holding"] = False
    if _SIGTERM_STATE["pending"]:
        raise _Terminated()


def _shard(index: int, jobs: int, kwargs: dict, done, results, parent: int | None = None) -> None:
    """Child process: shard ``index`` of ``jobs``; puts (index, "ok", stats) or (index, "error", message)."""
    if parent is not None:
        _exit_with_parent(parent)
    try:
        if kwargs.get("device") == "cuda":
            kwargs = {**kwargs, "device": shared_gpu(index)}

        def on_block(videos: int, questions: int) -> None:
            done[2 * index] += videos
            done[2 * index + 1] = questions

        # the parent holds the shards' locks for the run (options.shard_lock_name)
        stats = generate_shard(**kwargs, num_shards=jobs, shard_index=index, progress=False, on_block=on_block, lock=False)
        results.put((index, "ok", stats))
    except TensorQAError as e:
        results.put((index, "error", str(e)))
    except BaseException:  # noqa: BLE001 - reported by the parent
        results.put((index, "error", "shard %d failed:\n%s" % (index, traceback.format_exc())))


def generate_jobs(jobs: int, *, num_shards, shard_index, progress: bool, threads: int | None = None, **kwargs) -> dict:
    """Run shards 0..jobs-1 of ``jobs`` as processes; returns the merged statistics."""
    if jobs < 1:
        raise TensorQAError(f"--jobs must be at least 1, got {jobs}")
    if jobs > MAX_JOBS:
        raise TensorQAError(f"--jobs must be at most {MAX_JOBS:,} processes, got {jobs:,} (this machine has "
                            f"{usable_cores()} cores; --jobs auto picks a count)")
    if num_shards is not None or shard_index is not None or "WORLD_SIZE" in os.environ:
        raise TensorQAError("--jobs runs every shard of this machine itself: "
                            "do not combine it with --num-shards / --shard-index or torchrun")
    with _sigterm_stops_the_run():
        return _locked_run(jobs, progress, threads, kwargs)


def _locked_run(jobs: int, progress: bool, threads: int | None, kwargs: dict) -> dict:
    held = contextlib.ExitStack()  # the shards' locks, for the whole run (the processes take none)
    with open_store(kwargs["store"]) as src:  # a bad store or --out fails here, once, not in every child
        n = videos_used(src, kwargs["max_videos"])
        jobs = max(1, min(jobs, n))  # a shard per process, at least one video per shard
        names = resolve_templates(kwargs["templates"], kwargs["include_retired"])
        try:
            for i in range(jobs):
                held.enter_context(output_lock(kwargs["out"], shard_lock_name(i, jobs)))
            refuse_other_shard_counts(kwargs["out"], jobs)
            params = record_params(src, names, kwargs["seed"], get_semantics(kwargs["semantics"]).name, kwargs["fmt"],
                                   default_grounding(kwargs["fmt"], kwargs["grounding"]), n)
            complete = [resume_shard(kwargs["out"], i, jobs, params) for i in range(jobs)]
        except BaseException:
            held.close()
            raise
    if all(complete):  # a rerun of a complete pool: say so now, without starting a process or a bar
        held.close()
        return {"skipped": True, "jobs": jobs, "num_shards": jobs}
    with held:
        return _run_jobs(jobs, n, progress, threads, kwargs)


def _run_jobs(jobs: int, n: int, progress: bool, threads: int | None, kwargs: dict) -> dict:
    kwargs["threads"] = threads or torch_threads(jobs)
    ctx = mp.get_context("spawn")
    done = ctx.Array("q", 2 * jobs, lock=False)  # per shard: videos done, questions so far (one writer each)
    results = ctx.Queue()
    procs = [ctx.Process(target=_shard, args=(i, jobs, kwargs, done, results, os.getpid()), daemon=True)
             for i in range(jobs)]
    t0 = time.perf_counter()
    bar = tqdm(total=n, desc=f"generate ({jobs} processes)", unit="video", disable=not progress, dynamic_ncols=True)
    stats: dict[int, dict] = {}
    # SIGTERM (``kill``, a scheduler's stop) must stop the shard processes too: Python's default
    # action would end the parent at once, without the cleanup below, and leave them running
    try:
        for p in procs:
            p.start()
        _release_sigterm()
        while len(stats) < jobs:
            try:
                index, status, payload = results.get(timeout=0.5)
            except queue.Empty:  # refresh progress, notice dead children
                index = None
                if not any(p.is_alive() for p in procs) and results.empty():
                    codes = [p.exitcode for p in procs]
                    raise TensorQAError(f"generate: a shard process ended without a result (exit codes {codes})") from None
            if index is not None:
                if status == "error":
                    raise TensorQAError(payload)
                stats[index] = payload
            questions = sum(done[2 * i + 1] for i in range(jobs))
            bar.n = sum(done[2 * i] for i in range(jobs))
            bar.set_postfix(questions=f"{questions:,}",
                            q_per_s=f"{questions / max(time.perf_counter() - t0, 1e-9):,.0f}", refresh=False)
            bar.refresh()
    except _Terminated:
        raise TensorQAError("generate: terminated (SIGTERM); the shard processes were stopped, complete "
                            "shards stay and the others are redone on the next run") from None
    finally:
        started = [p for p in procs if p.pid is not None]  # SIGTERM may come while they start
        if len(stats) == jobs:  # every shard reported: let each process finish its own exit, whose
            for p in started:  # clean-up unregisters its semaphores (tqdm's lock); killed, it leaks them
                p.join(timeout=60)
        for p in started:
            if p.is_alive():
                p.terminate()
        for p in started:
            p.join()
            p.close()
        # drain what the shards put (an unread queue keeps its feeder thread and semaphores alive),
        # then release the queue's pipe and semaphores now rather than at interpreter exit
        with contextlib.suppress(Exception):
            while True:
                results.get_nowait()
        results.close()
        results.join_thread()
        del results
        bar.close()
    return _merge(stats, time.perf_counter() - t0)


def _merge(stats: dict[int, dict], seconds: float) -> dict:
    """One statistics dict for the shards: counts and stage seconds summed, wall seconds of the run."""
    shards = [stats[i] for i in sorted(stats)]
    if all(s.get("skipped") for s in shards):
        return {"skipped": True, "jobs": len(shards), "num_shards": len(shards)}
    ran = [s for s in shards if not s.get("skipped")]
    merged = {k: v for k, v in ran[0].items() if k not in ("shard", "per_template", *SUMMED)}
    merged.update({k: round(sum(s[k] for s in ran), 3) if isinstance(ran[0][k], float) else sum(s[k] for s in ran)
                   for k in SUMMED})
    merged.update(num_shards=len(shards), shards_skipped=len(shards) - len(ran), jobs=len(shards),
                  seconds=round(seconds, 3), per_template=dict(sum((Counter(s["per_template"]) for s in ran), Counter())))
    return merged
