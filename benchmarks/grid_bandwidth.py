"""Grid evaluation against the memory-bandwidth limit of the device, for the bytes it must touch
and for the bytes it does touch.

    python benchmarks/grid_bandwidth.py --store default.h5 --device cuda --json grid_bw.json
    python benchmarks/grid_bandwidth.py --store default.h5 --device cpu --videos 512 --batch-videos 256

Issue 7 asks that grid evaluation (every template's program over its whole slot grid, the
``grid`` stage of ``tensorqa generate``) run within 5x of the device's memory-bandwidth limit for
the bytes it touches. This script measures both sides in one process:

* the limit: a device-to-device copy of ``--copy-gib`` GiB, bytes read plus bytes written over
  the median time of ``--repeats`` copies (on an H200 about 4.3 TB/s);
* the bytes: each block's scene tensors read once (rel, obj, frames, instances) plus every
  template's answer grid written once (``answer``, ``defined`` and ``real`` of each
  :class:`~tensorqa.agqa.grid.AnswerGrid`, an expanded view counted at its storage's size): the least
  any implementation that materializes these grids must move. A second figure
  counts the scene tensors once per template (what 28 independent programs would read);
* the time: every template evaluated over every block of the first ``--videos`` videos, the
  blocks already resident on the device (the store read and the host-to-device copy are not
  grid evaluation), one warm-up pass first (Triton compilation, allocator), then the median of
  ``--repeats`` passes, synchronized.

Prints one line per block size: seconds, programs (real grid cells) per second, GB moved at
the floor, and the ratio of the measured time to the bandwidth floor (target <= 5 on the GPU);
then the slowest templates of one more pass, synchronized around each template.

A third figure counts the bytes the implementation does touch: one more pass under a
:class:`Traffic` counter, which adds up, for every torch op it dispatches and every Triton kernel
it launches, the bytes of the tensors the op reads and writes (each argument once, an expanded
view at its storage's size; an indexing op as its indices plus what it gathers or scatters, not
the whole tensor it indexes; allocations nothing, views nothing unless they copy; not the copies
Triton's interpreter makes inside a launch). The time over that traffic's
bandwidth time says how far the kernels run from the device's bandwidth (the issue's "within 5x
of the memory-bandwidth limit for the bytes it touches"); the floor above says how many more
bytes than the least they move.

``--profile`` adds one pass under ``torch.profiler``, each template in its own
``record_function`` range: per template, the device time its kernels took (and the span from its
first kernel to its last), how many kernels and host ops it launched, against its synchronized
wall time, and the kernels with the most device
time overall. A template whose wall time far exceeds its device time is launch- or sync-bound;
one whose device time is far above its share of the floor moves too many bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
import weakref
from pathlib import Path

import tensorqa  # noqa: F401  (before pyarrow: Arrow's allocator options)
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from tensorqa import kernels as kernels_mod
from tensorqa.agqa.grid import GridContext, evaluate
from tensorqa.agqa.shapes import PROGRAM_SHAPES
from tensorqa.agqa.semantics import get_semantics
from tensorqa.scenes.store import open_store

SCENE_FIELDS = ("rel", "obj", "frame_secs", "frame_ids", "frame_mask", "inst_cls", "inst_start", "inst_end", "inst_mask")


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def copy_bandwidth(device: str, gib: float, repeats: int) -> float:
    """Bytes per second of a device-to-device copy (read + write), median of ``repeats``."""
    n = int(gib * 2**30)
    src = torch.randint(0, 255, (n,), dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        dst.copy_(src)
        sync(device)
        times.append(time.perf_counter() - t0)
    return 2 * n / statistics.median(times)


def scene_bytes(batch) -> int:
    return sum(getattr(batch, f).numel() * getattr(batch, f).element_size() for f in SCENE_FIELDS)


def written_bytes(g, shared: list | None = None) -> int:
    """Bytes an answer grid occupies: ``answer``, ``defined`` and ``real``, each counted at most at
    its storage's size (an expanded view is written once, not once per broadcast cell), a storage
    shared by two of them once. ``shared``: weak references to the tensors of the earlier grids
    of the same context; a tensor of ``g`` found there is not counted again (the ``real`` masks a
    context computes once for several templates, the grid objWhatChoose and objFirstChoose share),
    and ``g``'s tensors are added to it. Weak references keep no grid alive."""
    seen, total = set(), 0
    known = [] if shared is None else [r() for r in shared]
    for t in (g.answer, g.defined, g.real):
        st = t.untyped_storage()
        if st.data_ptr() in seen or any(k is not None and (t is k or t._base is k) for k in known):
            continue
        seen.add(st.data_ptr())
        total += min(t.numel() * t.element_size(), st.nbytes())
    if shared is not None:
        shared.extend(weakref.ref(t) for t in (g.answer, g.defined, g.real) if not any(t is k for k in known))
    return total


def grid_pass(batches, templates, sem, per_template: dict | None = None) -> tuple[float, int, int]:
    """(seconds, programs, bytes written) of one pass of every template over every block. With
    ``per_template``, also each template's synchronized seconds (summed over blocks) into it."""
    device = batches[0].device
    programs = torch.zeros((), dtype=torch.int64, device=device)  # summed on the device: no sync in the loop
    out_bytes = 0
    sync(str(device))
    t0 = time.perf_counter()
    for batch in batches:
        ctx = GridContext(batch, sem)
        shared: list = []
        for name in templates:
            if per_template is not None:
                sync(str(device))
                t1 = time.perf_counter()
            g = evaluate(name, batch, sem, context=ctx)
            if per_template is not None:
                sync(str(device))
                per_template[name] = per_template.get(name, 0.0) + time.perf_counter() - t1
            programs += g.real.count_nonzero()
            out_bytes += written_bytes(g, shared)
        del ctx, g, shared
    sync(str(device))
    return time.perf_counter() - t0, int(programs), out_bytes


def tensor_bytes(tensors) -> int:
    """Bytes of ``tensors`` read or written once each: a tensor at most at its storage's size (an
    expanded view is one read of its storage), the same view given twice once."""
    seen, total = set(), 0
    for t in tensors:
        st = t.untyped_storage()
        key = (st.data_ptr(), t.storage_offset(), t.dtype, tuple(t.shape), t.stride())
        if key in seen:
            continue
        seen.add(key)
        total += min(t.numel() * t.element_size(), st.nbytes())
    return total


_aten = torch.ops.aten
# ops that allocate without touching memory
_ALLOCATIONS = {_aten.empty.memory_format, _aten.empty_strided.default, _aten.empty_like.default,
                _aten.new_empty.default, _aten.new_empty_strided.default}
# views whose schema does not say so (``OpOverload.is_view`` covers the others)
_ALIASES = {_aten._unsafe_view.default, _aten.lift_fresh.default}
# reads: indices + the gathered elements (as many as the output holds), writes: the output
_GATHERS = {_aten.index.Tensor, _aten.gather.default, _aten.index_select.default, _aten.take.default,
            _aten.embedding.default}
# in-place scatters into ``self``: reads indices and values, writes as many elements as the values
_SCATTERS = {_aten.index_put_.default, _aten._index_put_impl_.default, _aten.scatter_.src, _aten.scatter_.value,
             _aten.scatter_add_.default, _aten.index_copy_.default, _aten.masked_scatter_.default}


def op_bytes(func, args, kwargs, out) -> int:
    """Bytes one dispatched torch op reads plus writes (see :class:`Traffic`)."""
    ins = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
    outs = [a for a in tree_flatten(out)[0] if isinstance(a, torch.Tensor)]
    if func in _ALLOCATIONS:
        return 0
    if func in _ALIASES or getattr(func, "is_view", False):
        # a view, unless it had to copy (``to`` another dtype, ``reshape`` of a strided tensor)
        sources = {t.untyped_storage().data_ptr() for t in ins}
        if all(t.untyped_storage().data_ptr() in sources for t in outs):
            return 0
    if func in _GATHERS:  # the source tensor is ins[0]: only the gathered elements are read
        return tensor_bytes(ins[1:]) + 2 * tensor_bytes(outs)
    if func in _SCATTERS:  # self is ins[0] (and the output): only the scattered elements are written
        values = tensor_bytes(ins[1:])
        return values + values  # indices and values read, (at most) the values' bytes written
    return tensor_bytes(ins) + tensor_bytes(outs)


class Traffic(TorchDispatchMode):
    """Counts the bytes torch ops read and write (:func:`op_bytes`) while active, and with
    :meth:`launches` those of Triton kernel launches (each tensor argument once). ``bytes``: the
    total; ``ops`` and ``launched``: how many ops and launches it counted."""

    def __init__(self):
        super().__init__()
        self.bytes = self.ops = self.launched = 0
        self.launching = False  # inside a kernel launch: its torch ops are the launcher's own

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.launching:  # Triton's interpreter copies the arguments in and out: not the GPU's traffic
            return out
        moved = op_bytes(func, args, kwargs or {}, out)
        self.bytes += moved
        self.ops += moved > 0
        return out

    @contextlib.contextmanager
    def launches(self):
        """Count Triton launches too: every bound kernel (a ``*_kernel`` name of a kernel module;
        bound at its first launch, so call this after a warm-up pass) is swapped for a proxy that
        adds its tensor arguments' bytes and launches it."""
        from tensorqa.kernels import runtime
        swapped = []
        for module in list(runtime._plain):
            namespace = sys.modules[module].__dict__
            for name, value in list(namespace.items()):
                if name.endswith("_kernel") and id(value) in runtime._origin:
                    namespace[name] = _CountedKernel(value, self)
                    swapped.append((namespace, name, value))
        try:
            yield self
        finally:
            for namespace, name, value in swapped:
                namespace[name] = value


class _CountedKernel:
    """``kernel[grid](*args)`` that first adds the launch's tensor bytes to a :class:`Traffic`."""

    def __init__(self, kernel, traffic: Traffic):
        self.kernel, self.traffic = kernel, traffic

    def __getitem__(self, grid):
        launch = self.kernel[grid]

        def run(*args, **kwargs):
            self.traffic.bytes += tensor_bytes(a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor))
            self.traffic.launched += 1
            self.traffic.launching = True
            try:
                return launch(*args, **kwargs)
            finally:
                self.traffic.launching = False

        return run


def traffic_pass(batches, templates, sem) -> tuple[int, dict[str, int]]:
    """(bytes touched, bytes per template) of one pass of every template over every block."""
    per: dict[str, int] = {}
    total = 0
    for batch in batches:
        ctx = GridContext(batch, sem)
        for name in templates:
            with Traffic() as traffic, traffic.launches():
                evaluate(name, batch, sem, context=ctx)
            per[name] = per.get(name, 0) + traffic.bytes
            total += traffic.bytes
        del ctx
    return total, per


def _device_us(event, kind: str = "") -> float:
    """Device (kernel) microseconds of a profiler event (``kind="self_"``: its own kernels only),
    across torch versions' attribute names (``device_*`` since 2.4, ``cuda_*`` before)."""
    for name in (f"{kind}device_time_total", f"{kind}cuda_time_total"):
        value = getattr(event, name, None)
        if value is not None:
            return float(value)
    return 0.0


def profile_pass(batches, templates, sem, top: int = 25) -> dict:
    """One pass of every template over every block under ``torch.profiler``, each template in a
    ``record_function`` range: {"templates": {name: {device_ms, span_ms, kernels, host_ops}}, "top_kernels":
    [(kernel, device ms, calls)]}. Kernels are counted from the device events the profiler links
    to the host ops of each range; on the CPU only host ops are counted."""
    device = batches[0].device
    cuda = device.type == "cuda"
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    with torch.profiler.profile(activities=activities) as prof:
        for batch in batches:
            ctx = GridContext(batch, sem)
            for name in templates:
                with torch.profiler.record_function("template:" + name):
                    evaluate(name, batch, sem, context=ctx)
            del ctx
        sync(str(device))
    per: dict[str, dict] = {}
    for e in prof.events():
        if not e.name.startswith("template:"):
            continue
        row = per.setdefault(e.name[len("template:"):], {"device_ms": 0.0, "span_ms": 0.0, "kernels": 0, "host_ops": 0})
        if "CPU" not in str(getattr(e, "device_type", "CPU")):  # the range as the GPU ran it (first kernel to last)
            row["span_ms"] += _device_us(e) / 1e3
            continue
        row["device_ms"] += _device_us(e) / 1e3
        stack = list(e.cpu_children)
        while stack:
            c = stack.pop()
            row["host_ops"] += c.name.startswith("aten::") and not any(k.name.startswith("aten::") for k in c.cpu_children)
            row["kernels"] += len(getattr(c, "kernels", ()) or ())
            stack.extend(c.cpu_children)
    kernels = [k for k in prof.key_averages() if _device_us(k, "self_") > 0 and not k.name.startswith("template:")]
    kernels.sort(key=lambda k: -_device_us(k, "self_"))
    return {"templates": {k: {n: round(x, 3) if isinstance(x, float) else x for n, x in v.items()} for k, v in per.items()},
            "top_kernels": [(k.key[:120], round(_device_us(k, "self_") / 1e3, 3), k.count) for k in kernels[:top]]}


def measure(store: Path, device: str, videos: int | None, batch_videos: int, templates, sem, repeats: int,
            bandwidth: float, profile: bool = False) -> dict:
    with open_store(store) as src:
        stop = len(src) if videos is None else min(videos, len(src))
        batches = list(src.blocks(batch_videos, 0, stop, device=device))
    in_bytes = sum(scene_bytes(b) for b in batches)
    grid_pass(batches, templates, sem)  # warm-up: kernel compilation, allocator growth
    runs = [grid_pass(batches, templates, sem) for _ in range(repeats)]
    seconds = statistics.median(r[0] for r in runs)
    _, programs, out_bytes = runs[0]
    per_template: dict[str, float] = {}
    grid_pass(batches, templates, sem, per_template)  # synchronized per template: where the time goes
    slowest = sorted(per_template.items(), key=lambda kv: -kv[1])
    profiled = profile_pass(batches, templates, sem) if profile else None
    touched, touched_per_template = traffic_pass(batches, templates, sem)
    floor = (in_bytes + out_bytes) / bandwidth
    floor_per_template = (len(templates) * in_bytes + out_bytes) / bandwidth
    return {"videos": stop, "batch_videos": batch_videos, "blocks": len(batches), "seconds": round(seconds, 4),
            "seconds_all": [round(r[0], 4) for r in runs], "programs": programs,
            "programs_per_s": round(programs / seconds), "scene_gb": round(in_bytes / 1e9, 3),
            "grid_output_gb": round(out_bytes / 1e9, 3), "floor_seconds": round(floor, 5),
            "vs_floor": round(seconds / floor, 1), "floor_per_template_seconds": round(floor_per_template, 5),
            "vs_floor_per_template": round(seconds / floor_per_template, 1),
            "achieved_gb_per_s": round((in_bytes + out_bytes) / seconds / 1e9, 1),
            "touched_gb": round(touched / 1e9, 3), "touched_seconds": round(touched / bandwidth, 5),
            "vs_touched": round(seconds * bandwidth / touched, 2) if touched else None,
            "touched_gb_per_template": {k: round(v / 1e9, 4) for k, v in
                                        sorted(touched_per_template.items(), key=lambda kv: -kv[1])},
            "per_template_seconds": {k: round(v, 5) for k, v in slowest},
            **({"profile": profiled} if profiled is not None else {})}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", type=Path, default=Path("default.h5"))
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--videos", type=int, help="first N videos (default: all)")
    p.add_argument("--batch-videos", type=int, nargs="+", default=[256, 1024, 4096])
    p.add_argument("--kernels", choices=kernels_mod.MODES, default="auto")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--copy-gib", type=float, default=None, help="copy size (default 4 GiB on CUDA, 0.5 on the CPU)")
    p.add_argument("--profile", action="store_true",
                   help="one more pass under torch.profiler: device time, kernels and host ops per template")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    if not a.store.exists():
        print(f"grid_bandwidth.py: no store {a.store}", file=sys.stderr)
        return 2
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"grid_bandwidth.py: --device {a.device}: CUDA is not available", file=sys.stderr)
        return 2
    sem, templates = get_semantics("agqa"), list(PROGRAM_SHAPES)
    gib = a.copy_gib if a.copy_gib is not None else (4.0 if a.device.startswith("cuda") else 0.5)
    bw = copy_bandwidth(a.device, gib, max(a.repeats, 5))
    name = torch.cuda.get_device_name(a.device) if a.device.startswith("cuda") else "cpu"
    backend = kernels_mod.backend_for(a.kernels, a.device)
    print(f"{name}: device-to-device copy {bw / 1e9:,.0f} GB/s (read + write, {gib} GiB); "
          f"{len(templates)} templates, {backend} primitives")
    rows = []
    with torch.inference_mode(), kernels_mod.configure(a.kernels, a.device):
        for bv in a.batch_videos:
            try:
                r = measure(a.store, a.device, a.videos, bv, templates, sem, a.repeats, bw, a.profile)
            except torch.OutOfMemoryError as e:
                print(f"  blocks of {bv}: out of device memory ({str(e).splitlines()[0]})")
                torch.cuda.empty_cache()
                continue
            rows.append(r)
            print(f"  blocks of {bv:5d}: {r['videos']:,} videos, {r['seconds']:.3f} s ({r['programs_per_s']:,} programs/s); "
                  f"scene {r['scene_gb']} GB + grids {r['grid_output_gb']} GB -> floor {r['floor_seconds'] * 1e3:.2f} ms, "
                  f"{r['vs_floor']}x the floor ({r['vs_floor_per_template']}x counting the scene once per template), "
                  f"{r['achieved_gb_per_s']} GB/s")
            print(f"    bytes touched (torch ops + kernel launches): {r['touched_gb']} GB, "
                  f"{r['touched_gb'] / max(r['scene_gb'] + r['grid_output_gb'], 1e-12):.1f}x the floor's; "
                  f"at copy bandwidth {r['touched_seconds'] * 1e3:.2f} ms -> the time is {r['vs_touched']}x that")
            top = list(r["per_template_seconds"].items())[:6]
            print("    slowest templates (synchronized each): " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in top))
            if "profile" in r:
                prof = r["profile"]["templates"]
                touched = r["touched_gb_per_template"]
                print("    profile (wall ms synchronized / kernel ms / GPU span ms / kernels / host ops / MB touched):")
                for k, wall in r["per_template_seconds"].items():
                    t = prof.get(k, {})
                    print(f"      {k:24s} {wall * 1e3:8.2f} {t.get('device_ms', 0):8.2f} {t.get('span_ms', 0):8.2f} "
                          f"{t.get('kernels', 0):6d} {t.get('host_ops', 0):6d} {touched.get(k, 0) * 1e3:9.1f}")
                for name, ms, calls in r["profile"]["top_kernels"][:12]:
                    print(f"      kernel {ms:8.2f} ms {calls:6d} calls  {name}")
            if a.device.startswith("cuda"):
                torch.cuda.empty_cache()
    if a.json:
        a.json.write_text(json.dumps({"device": a.device, "gpu": name, "torch": torch.__version__, "backend": backend,
                                      "copy_gb_per_s": round(bw / 1e9, 1), "date": time.strftime("%Y-%m-%d %H:%M"),
                                      "runs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
