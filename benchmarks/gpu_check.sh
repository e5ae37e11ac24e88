#!/usr/bin/env bash
# The GPU check: one prepared script for a lent device machine (issue 7 item 5).
#
#   bash benchmarks/gpu_check.sh                 # on the device machine, from the repository root
#
# From a session: pack here first (`tensorqa pack --out default.h5`, 5 MiB, gitignored) and carry
# it, which saves step 2: device run with command "bash benchmarks/gpu_check.sh",
# carry ["default.h5"], timeout_s 540. On a CPU, to try the script itself:
#   OUT=/tmp/out TENSORQA_PYTHON=.venv/bin/python TENSORQA_GPU_CHECK_DEVICE=cpu \
#   TENSORQA_GPU_CHECK_STORE=/tmp/s.h5 TENSORQA_GPU_CHECK_VIDEOS=30 TENSORQA_GPU_CHECK_PROBE=10 \
#   TENSORQA_GPU_CHECK_RANKS=2 bash benchmarks/gpu_check.sh
#
# Installs nothing (the device machine reaches no network): it runs under the machine's own
# python3, which holds torch, numpy, h5py, pyarrow, einops, tqdm, pytest and pytest-benchmark,
# with this checkout on PYTHONPATH. Every step has a time cap inside one overall budget
# (default 460 s, so the whole check ends within 8 minutes); a step that fails or times out is
# reported and the next one still runs; the exit status is non-zero if any step failed.
#
# Steps, all output tee'd into $OUT/log.txt:
#   1. nvidia-smi -> $OUT/nvidia-smi.txt; python, torch and CUDA versions; stop if CUDA is missing
#   2. pack the default dataset (9,601 videos) into default.h5 unless it exists (carry it to skip)
#   3. the CUDA tests (pytest -k cuda: every test that needs a GPU has "cuda" in its name)
#      -> $OUT/junit_cuda.xml
#   4. benchmarks/run.py, one process, on the first 500 videos (per stage, grid vs reference ratio,
#      peak RSS and CUDA memory) -> $OUT/run_<dev>_probe.json
#   5. the whole store: benchmarks/run.py in one process -> $OUT/run_<dev>.json if the probe says it
#      fits the time left; else `torchrun -m tensorqa generate` on RANKS processes sharing the GPU
#      (the videos that fit, all if they do) -> $OUT/torchrun_<dev>.txt
#   6. benchmarks/bench_kernels.py (pytest-benchmark), if present -> $OUT/bench_kernels.json
#   7. if step 5 ran one process and time is left: the whole store on RANKS processes as well
#
# Environment (all optional):
#   TENSORQA_PYTHON               interpreter (default: python3)
#   TENSORQA_GPU_CHECK_DEVICE     cuda (default) or cpu: cpu runs the same steps without a GPU
#   TENSORQA_GPU_CHECK_STORE      scene store (default default.h5)
#   TENSORQA_GPU_CHECK_VIDEOS     videos to pack when the store is absent, and the whole-store run's
#                                 --videos (default: all; 9,601 packed)
#   TENSORQA_GPU_CHECK_PROBE      videos of the probe run (default 500)
#   TENSORQA_GPU_CHECK_BUDGET     seconds for the whole check (default 460)
#   TENSORQA_GPU_CHECK_RANKS      torchrun ranks (default: 3/4 of the CPUs, 12 on the H200 machine;
#                                 0 or 1: one process only)
#   TENSORQA_GPU_CHECK_KERNELS    run.py --kernels (default auto)
#   TENSORQA_GPU_CHECK_PYTEST     pytest selection of step 3 (default: -k cuda)
#   TENSORQA_GPU_CHECK_BENCH_KERNELS  0 skips step 6
set -euo pipefail

: "${OUT:?set OUT to the folder for the results (the device machine sets it)}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
TEE_PID=$!

PY=${TENSORQA_PYTHON:-python3}
DEV=${TENSORQA_GPU_CHECK_DEVICE:-cuda}
STORE=${TENSORQA_GPU_CHECK_STORE:-default.h5}
VIDEOS=${TENSORQA_GPU_CHECK_VIDEOS:-}
PROBE=${TENSORQA_GPU_CHECK_PROBE:-500}
BUDGET=${TENSORQA_GPU_CHECK_BUDGET:-460}
RANKS=${TENSORQA_GPU_CHECK_RANKS:-$(($(nproc) * 3 / 4))}
KERNELS=${TENSORQA_GPU_CHECK_KERNELS:-auto}
BENCH_KERNELS=${TENSORQA_GPU_CHECK_BENCH_KERNELS:-1}
[[ -f benchmarks/bench_kernels.py ]] || BENCH_KERNELS=0
KERNEL_RESERVE=$((BENCH_KERNELS ? 70 : 0))  # seconds kept back for step 6 while steps 4-5 run
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tensorqa-gpu-check-XXXXXX")
finish() {  # remove the pools; let tee write the last lines into log.txt before the results are taken
    local rc=$?
    rm -rf "$WORK"
    exec 1>&- 2>&-
    wait "$TEE_PID" 2>/dev/null || true
    exit $rc
}
trap finish EXIT
START=$SECONDS
FAILED=()

left() { echo $((BUDGET - (SECONDS - START))); }

# step NAME CAP [RESERVE] -- CMD...: run CMD under `timeout`, capped by CAP and by the budget left
# minus RESERVE; log the outcome; never abort the script. ALLOW_RC=n: exit status n counts as ok.
step() {
    local name=$1 want=$2 reserve=0
    shift 2
    if [[ $1 != -- ]]; then reserve=$1; shift; fi
    shift
    local cap=$(($(left) - reserve))
    ((cap > want)) && cap=$want
    echo
    echo "=== $name (cap ${cap} s; $(left) s of the budget left) ==="
    if ((cap < 5)); then
        echo "--- $name: SKIPPED, no time left"
        FAILED+=("$name (no time)")
        return 0
    fi
    local t0=$SECONDS rc=0
    timeout -k 10 "$cap" "$@" || rc=$?
    if ((rc == 0 || rc == ${ALLOW_RC:-0})); then
        echo "--- $name: ok in $((SECONDS - t0)) s"
    elif ((rc == 124 || rc == 137)); then
        echo "--- $name: TIMED OUT after $((SECONDS - t0)) s"
        FAILED+=("$name (timeout)")
    else
        echo "--- $name: FAILED with exit status $rc after $((SECONDS - t0)) s"
        FAILED+=("$name (exit $rc)")
    fi
    return 0
}

echo "tensorqa GPU check, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), device $DEV, budget $BUDGET s, in $PWD"
echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git status --porcelain 2>/dev/null | wc -l | tr -d ' ') changed files"

# 1. the machine ------------------------------------------------------------------------------
if command -v nvidia-smi >/dev/null; then
    nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || true
    head -n 15 "$OUT/nvidia-smi.txt"
elif [[ $DEV == cuda* ]]; then
    echo "no nvidia-smi on this machine"
fi
echo "CPUs: $(nproc); python: $(command -v "$PY" || echo "$PY not found")"
if ! "$PY" - "$DEV" <<'EOF'; then
import importlib, sys
missing = [m for m in ("torch", "numpy", "h5py", "pyarrow", "einops", "tqdm", "pytest") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"gpu_check: {sys.executable} lacks {', '.join(missing)}; set TENSORQA_PYTHON to an interpreter "
             "that has them, or carry them as wheels (device README)")
import torch
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, CUDA build {torch.version.cuda}, "
      f"cuda available: {torch.cuda.is_available()}")
if sys.argv[1].startswith("cuda"):
    if not torch.cuda.is_available():
        sys.exit(f"gpu_check: torch {torch.__version__} sees no CUDA device (build CUDA {torch.version.cuda}); "
                 "nothing to check here (TENSORQA_GPU_CHECK_DEVICE=cpu runs the same steps on the CPU)")
    p = torch.cuda.get_device_properties(0)
    print(f"GPU 0 of {torch.cuda.device_count()}: {p.name}, {p.total_memory / 2**30:.0f} GiB, "
          f"compute capability {p.major}.{p.minor}, {p.multi_processor_count} SMs")
EOF
    echo "gpu_check: stopping: the Python environment cannot run the check"
    exit 3
fi

# 2. the store --------------------------------------------------------------------------------
if [[ -f $STORE ]]; then
    echo
    echo "=== store: $STORE exists ($(du -h "$STORE" | cut -f1)), not packed again ==="
else
    step "pack ${VIDEOS:-9601} default videos into $STORE" 150 -- \
        "$PY" -m tensorqa pack --out "$STORE" --videos "${VIDEOS:-9601}" --quiet
    if [[ ! -f $STORE ]]; then
        echo "gpu_check: stopping: no store"
        exit 1
    fi
fi
STORE_VIDEOS=$("$PY" -c 'import sys; from tensorqa.store import open_store; print(len(open_store(sys.argv[1])))' "$STORE")
FULL=${VIDEOS:-$STORE_VIDEOS}
((FULL > STORE_VIDEOS)) && FULL=$STORE_VIDEOS
echo "store: $STORE_VIDEOS videos; whole-store runs use $FULL"

# 3. the CUDA tests ---------------------------------------------------------------------------
if [[ -n ${TENSORQA_GPU_CHECK_PYTEST:-} ]]; then
    read -r -a SELECT <<<"$TENSORQA_GPU_CHECK_PYTEST"
else
    SELECT=(-k cuda)
fi
# pytest's exit status 5: no test selected, not a failure
ALLOW_RC=5 step "CUDA tests" 120 -- "$PY" -m pytest tests "${SELECT[@]}" -rs -p no:cacheprovider \
    --junitxml="$OUT/junit_cuda.xml"

# 4. the probe: one process, the first PROBE videos (per stage, reference ratio, peak memory) --
RUN=("$PY" benchmarks/run.py --store "$STORE" --device "$DEV" --kernels "$KERNELS")
PROBE_JSON="$OUT/run_${DEV%%:*}_probe.json"
((PROBE > FULL)) && PROBE=$FULL
step "run.py, first $PROBE videos" 150 "$KERNEL_RESERVE" -- "${RUN[@]}" --videos "$PROBE" --json "$PROBE_JSON"

# estimate VIDEOS RANKS: seconds to generate VIDEOS videos on RANKS processes, from the probe (cost
# grows linearly with the videos: benchmarks/scaling.py); ranks share the GPU and the disk, so
# count each at 2/3 of a lone process, plus 30 s of start-up
estimate() {
    "$PY" - "$PROBE_JSON" "$1" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
per_video, videos, ranks = r["seconds"] / r["videos"], int(sys.argv[2]), int(sys.argv[3])
print(int(per_video * videos + 20) if ranks == 1 else int(1.5 * per_video * videos / ranks + 30))
EOF
}
# fitting RANKS SECONDS: how many videos RANKS processes generate in SECONDS, by the same rule
fitting() {
    "$PY" - "$PROBE_JSON" "$1" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
per_video, ranks, secs = r["seconds"] / r["videos"], int(sys.argv[2]), int(sys.argv[3])
print(max(0, int((secs - 30) * ranks / (1.5 * per_video))))
EOF
}

# torchrun_generate VIDEOS: the first VIDEOS videos on RANKS processes -> $OUT/torchrun_<dev>.txt
TORCHRUN_DONE=0
torchrun_generate() {
    local videos=$1 t0=$SECONDS
    rm -rf "$WORK/pool-ranks"
    step "torchrun, $RANKS ranks, $videos videos" 600 "$2" -- "$PY" -m torch.distributed.run --standalone \
        --nproc-per-node="$RANKS" -m tensorqa generate "$STORE" --out "$WORK/pool-ranks" --device "$DEV" \
        --max-videos "$videos" --quiet
    TORCHRUN_DONE=1
    [[ -d $WORK/pool-ranks/data ]] || return 0
    "$PY" - "$WORK/pool-ranks" $((SECONDS - t0)) "$RANKS" "$videos" "$STORE_VIDEOS" <<'EOF' | tee "$OUT/torchrun_${DEV%%:*}.txt"
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tensorqa.writers import shard_complete

pool, secs, ranks, videos, store = Path(sys.argv[1]), *map(int, sys.argv[2:])
q = sum(pq.ParquetFile(f).metadata.num_rows for f in (pool / "data").glob("*.parquet"))
done = sum(shard_complete(pool, i, ranks) for i in range(ranks))
print(f"torchrun, {ranks} ranks, {done} of {ranks} shards complete: {q:,} questions for {videos:,} of the store's "
      f"{store:,} videos in {secs} s, start-up included ({q / max(secs, 1):,.0f} questions/s, "
      f"{videos / max(secs, 1):,.1f} videos/s)")
EOF
}

# 5. the whole store: one process when the probe says it fits, else RANKS processes -----------
if ((FULL > PROBE)); then
    if [[ ! -f $PROBE_JSON ]]; then
        echo
        echo "=== whole store: SKIPPED, the probe gave no figures ==="
        FAILED+=("whole store (no probe)")
    else
        ONE=$(estimate "$FULL" 1)
        if ((ONE <= $(left) - KERNEL_RESERVE)); then
            echo "whole store, one process: about $ONE s expected"
            step "run.py, all $FULL videos" 600 "$KERNEL_RESERVE" -- "${RUN[@]}" --videos "$FULL" \
                --json "$OUT/run_${DEV%%:*}.json"
        elif ((RANKS > 1)); then
            MANY=$(estimate "$FULL" "$RANKS")
            N=$FULL
            if ((MANY > $(left) - KERNEL_RESERVE)); then
                N=$(fitting "$RANKS" $(($(left) - KERNEL_RESERVE - 10)))
                ((N > FULL)) && N=$FULL
            fi
            echo
            echo "whole store: about $ONE s in one process, $(($(left) - KERNEL_RESERVE)) s left;" \
                "$RANKS ranks instead, on $N videos (about $MANY s for all $FULL)"
            if ((N >= PROBE)); then
                torchrun_generate "$N" "$KERNEL_RESERVE"
                ((N < FULL)) && FAILED+=("whole store: only $N of $FULL videos fitted")
            else
                FAILED+=("whole store (about $ONE s in one process, $MANY s on $RANKS ranks: too long)")
            fi
        else
            echo
            echo "=== run.py, all $FULL videos: SKIPPED: about $ONE s expected, $(($(left) - KERNEL_RESERVE)) s left ==="
            FAILED+=("run.py whole store (estimated $ONE s, too long)")
        fi
    fi
fi

# 6. kernel benchmarks ------------------------------------------------------------------------
if ((BENCH_KERNELS)); then
    step "bench_kernels.py" 90 -- "$PY" -m pytest benchmarks/bench_kernels.py -o addopts="" -q -p no:cacheprovider \
        --benchmark-only --benchmark-json="$OUT/bench_kernels.json"
else
    echo
    echo "=== bench_kernels.py: not in this checkout (or TENSORQA_GPU_CHECK_BENCH_KERNELS=0), skipped ==="
fi

# 7. several ranks on the whole store, with the time left (if step 5 did not already) ---------
if ((RANKS > 1 && !TORCHRUN_DONE)) && [[ -f $PROBE_JSON ]]; then
    if (($(estimate "$FULL" "$RANKS") <= $(left) - 5)); then
        torchrun_generate "$FULL" 5
    else
        echo
        echo "=== torchrun, $RANKS ranks: skipped, about $(estimate "$FULL" "$RANKS") s expected, $(left) s left ==="
    fi
fi

# summary -------------------------------------------------------------------------------------
echo
echo "=== summary ($((SECONDS - START)) s) ==="
for f in "$OUT"/run_*.json; do
    [[ -f $f ]] || continue
    "$PY" - "$f" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
mem = f", peak CUDA {r['peak_cuda_gib']} GiB" if r.get("peak_cuda_gib") is not None else ""
ratio = f", grid vs reference {r['grid_vs_reference']['ratio']:,}x" if "grid_vs_reference" in r else ""
stages = ", ".join(f"{k} {s['seconds']:.1f} s" for k, s in r["stages"].items())
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: {r['videos']:,} videos, {r['questions']:,} questions in {r['seconds']} s "
      f"({r['questions_per_s']:,} questions/s, {r['videos_per_s']} videos/s), peak RSS {r['peak_rss_gib']} GiB{mem}{ratio}; "
      f"{stages}")
EOF
done
if ((${#FAILED[@]})); then
    printf 'not done: %s\n' "${FAILED[@]}"
    exit 1
fi
echo "all steps done"
