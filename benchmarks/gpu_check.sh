#!/usr/bin/env bash
# The GPU check: one prepared script for a lent device machine (issue 7 item 5).
#
#   bash benchmarks/gpu_check.sh                 # on the device machine, from the repository root
#
# From a session: pack here first (`tensorqa pack --out default.h5`, 5 MiB, gitignored) and carry
# it, which saves step 2: device run with command "bash benchmarks/gpu_check.sh",
# carry ["default.h5"], timeout_s 560. On a CPU, to try the script itself:
#   OUT=/tmp/out TENSORQA_PYTHON=.venv/bin/python TENSORQA_GPU_CHECK_DEVICE=cpu \
#   TENSORQA_GPU_CHECK_STORE=/tmp/s.h5 TENSORQA_GPU_CHECK_VIDEOS=30 TENSORQA_GPU_CHECK_PROBE=10 \
#   TENSORQA_GPU_CHECK_RANKS=2 bash benchmarks/gpu_check.sh
#
# Installs nothing (the device machine reaches no network): it runs under the machine's own
# python3, which holds torch, numpy, h5py, pyarrow, einops, tqdm, pytest and pytest-benchmark,
# with this checkout on PYTHONPATH. Every step has a time cap inside one overall budget
# (default 480 s, so the whole check ends within 8 minutes); a step that fails or times out is
# reported and the next one still runs; the exit status is non-zero if any step failed.
#
# Steps, all output tee'd into $OUT/log.txt, most valuable first:
#   1. nvidia-smi -> $OUT/nvidia-smi.txt; python, torch and CUDA versions; stop if CUDA is missing
#   2. pack the default dataset (9,601 videos) into default.h5 unless it exists (carry it to skip)
#   3. the CUDA tests (pytest -k cuda: every test that needs a GPU has "cuda" in its name; they
#      include GPU pools byte-identical to CPU pools) -> $OUT/junit_cuda.xml
#   4. the headline: `tensorqa generate STORE --device cuda --jobs RANKS`, the whole store, timed
#      from the command's start -> $OUT/pool_jobs<RANKS>.txt (questions, seconds, SHA-256 per file,
#      content digests per file, checked against benchmarks/digests/ where a reference exists:
#      the records a CPU wrote for the same store and shard count)
#   5. benchmarks/grid_bandwidth.py --profile: grid evaluation against the device's copy bandwidth,
#      for the least bytes it must move and for the bytes its ops and kernels do touch, and per
#      template its kernel time, GPU span, kernels, host ops and bytes touched
#      -> $OUT/grid_bandwidth_<dev>.json
#   6. benchmarks/run.py, one process, the first PROBE videos: per stage, grid vs the scalar
#      executor, re-derivation, peak RSS and CUDA memory -> $OUT/run_<dev>_probe.json
#   7. benchmarks/bench_kernels.py (pytest-benchmark) -> $OUT/bench_kernels.json
#   7b. benchmarks/clevr_throughput.py on the device (CLEVR questions/s, 1,000 and 10,000 scenes)
#      -> $OUT/clevr_throughput_<dev>.json
#   8. the same RANKS shards under torchrun -> $OUT/pool_torchrun<RANKS>.txt, checked
#      byte-identical to step 4's files
#
# Environment (all optional):
#   TENSORQA_PYTHON               interpreter (default: python3)
#   TENSORQA_GPU_CHECK_DEVICE     cuda (default) or cpu: cpu runs the same steps without a GPU
#   TENSORQA_GPU_CHECK_STORE      scene store (default default.h5)
#   TENSORQA_GPU_CHECK_VIDEOS     videos to pack when the store is absent, and the whole-store runs'
#                                 --max-videos (default: all; 9,601 packed)
#   TENSORQA_GPU_CHECK_PROBE      videos of step 6 (default 1000)
#   TENSORQA_GPU_CHECK_BUDGET     seconds for the whole check (default 480)
#   TENSORQA_GPU_CHECK_RANKS      processes of steps 4 and 8 (default: the CPUs, 16 on the H200
#                                 machine: rendering and writing take one core each; 0 or 1: one
#                                 process, and no step 8)
#   TENSORQA_GPU_CHECK_GRID_BLOCKS  block sizes of step 5 (default "4096 9601": 9,601 is the whole
#                                 default store in one block, one set of launches for all of it)
#   TENSORQA_GPU_CHECK_KERNELS    --kernels of every step (default auto)
#   TENSORQA_GPU_CHECK_PYTEST     pytest selection of step 3 (default: -k cuda)
#   TENSORQA_GPU_CHECK_BENCH_KERNELS  0 skips step 7
set -euo pipefail

: "${OUT:?set OUT to the folder for the results (the device machine sets it)}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
TEE_PID=$!

PY=${TENSORQA_PYTHON:-python3}
DEV=${TENSORQA_GPU_CHECK_DEVICE:-cuda}
STORE=${TENSORQA_GPU_CHECK_STORE:-default.h5}
VIDEOS=${TENSORQA_GPU_CHECK_VIDEOS:-}
PROBE=${TENSORQA_GPU_CHECK_PROBE:-1000}
BUDGET=${TENSORQA_GPU_CHECK_BUDGET:-480}
RANKS=${TENSORQA_GPU_CHECK_RANKS:-$(nproc)}
GRID_BLOCKS=${TENSORQA_GPU_CHECK_GRID_BLOCKS:-4096 9601}
KERNELS=${TENSORQA_GPU_CHECK_KERNELS:-auto}
BENCH_KERNELS=${TENSORQA_GPU_CHECK_BENCH_KERNELS:-1}
[[ -f benchmarks/bench_kernels.py ]] || BENCH_KERNELS=0
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
STORE_VIDEOS=$("$PY" -c 'import sys; from tensorqa.scenes.store import open_store; print(len(open_store(sys.argv[1])))' "$STORE")
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
ALLOW_RC=5 step "CUDA tests" 150 -- "$PY" -m pytest tests "${SELECT[@]}" -rs -p no:cacheprovider \
    --junitxml="$OUT/junit_cuda.xml"

# pool_summary DIR SECONDS NAME: questions, size, and each file's SHA-256 (pools compared across
# devices and process counts) -> $OUT/NAME.txt
pool_summary() {
    "$PY" - "$1" "$2" "$3" "$STORE_VIDEOS" "$FULL" <<'EOF' | tee "$OUT/$3.txt"
import hashlib, sys
from pathlib import Path

import pyarrow.parquet as pq

pool, secs, name, store, videos = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3], *map(int, sys.argv[4:])
files = sorted((pool / "data").glob("*.parquet"))
q = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
print(f"{name}: {q:,} questions for {videos:,} of the store's {store:,} videos in {secs:.1f} s, start-up included "
      f"({q / max(secs, 1e-9):,.0f} questions/s), {len(files)} files, "
      f"{sum(f.stat().st_size for f in files) / 2**30:.2f} GiB")
for f in files:
    print(hashlib.sha256(f.read_bytes()).hexdigest(), f.name)
EOF
}

# timed_generate NAME CAP -- CMD...: CMD --out $WORK/NAME under `step`, timed, then summarized;
# with DIGESTS=1, also the records' content digests, compared with benchmarks/digests/ when a
# reference for this store and shard count is there (the same records as on the machine that wrote it)
timed_generate() {
    local name=$1 cap=$2 t0 secs
    shift 3
    rm -rf "${WORK:?}/$name"
    t0=$(date +%s%N)
    step "$name" "$cap" -- "$@" --out "$WORK/$name"
    secs=$(( ($(date +%s%N) - t0) / 1000000 ))
    [[ -d $WORK/$name/data ]] && pool_summary "$WORK/$name" "$((secs / 1000)).$(printf '%03d' $((secs % 1000)))" "$name"
    if [[ ${DIGESTS:-0} == 1 && -d $WORK/$name/data ]]; then
        local ref shards
        shards=$(find "$WORK/$name/data" -name 'train-*.parquet' | wc -l)
        ref=benchmarks/digests/default_${FULL}videos_${shards}shards.txt
        step "content digests of $name" 60 -- "$PY" benchmarks/pool_digest.py "$WORK/$name" --jobs "$(nproc)" \
            --out "$WORK/digests.txt"
        if [[ -f $WORK/digests.txt ]]; then
            { echo "content digests:"; cat "$WORK/digests.txt"; } >>"$OUT/$name.txt"
            if [[ -f $ref && $STORE_VIDEOS == 9601 ]]; then
                if diff -q "$ref" "$WORK/digests.txt" >/dev/null; then
                    echo "$name: the same records as $ref" | tee -a "$OUT/$name.txt"
                else
                    echo "$name: records DIFFER from $ref" | tee -a "$OUT/$name.txt"
                    FAILED+=("$name: records differ from $ref")
                fi
            fi
        fi
    fi
    rm -rf "${WORK:?}/$name"
}

# 4. the headline: the whole pool, every core rendering and writing, the GPU evaluating grids --
GEN=("$PY" -m tensorqa generate "$STORE" --device "$DEV" --kernels "$KERNELS" --quiet)
((FULL < STORE_VIDEOS)) && GEN+=(--max-videos "$FULL")
if ((RANKS > 1)); then
    DIGESTS=1 timed_generate "pool_jobs$RANKS" 200 -- "${GEN[@]}" --jobs "$RANKS"
else
    timed_generate "pool_1process" 300 -- "${GEN[@]}"
fi

# 5. grid evaluation against the device's copy bandwidth --------------------------------------
step "grid_bandwidth.py" 150 -- "$PY" benchmarks/grid_bandwidth.py --store "$STORE" --device "$DEV" \
    --kernels "$KERNELS" --batch-videos $GRID_BLOCKS --profile --json "$OUT/grid_bandwidth_${DEV%%:*}.json"

# 6. per stage in one process, grid vs the scalar executor, re-derivation: the first PROBE videos
step "run.py, first $PROBE videos" 100 -- "$PY" benchmarks/run.py --store "$STORE" --device "$DEV" \
    --kernels "$KERNELS" --videos "$PROBE" --json "$OUT/run_${DEV%%:*}_probe.json"

# 7. kernel benchmarks ------------------------------------------------------------------------
if ((BENCH_KERNELS)); then
    step "bench_kernels.py" 60 -- "$PY" -m pytest benchmarks/bench_kernels.py -o addopts="" -q -p no:cacheprovider \
        --benchmark-only --benchmark-json="$OUT/bench_kernels.json"
else
    echo
    echo "=== bench_kernels.py: not in this checkout (or TENSORQA_GPU_CHECK_BENCH_KERNELS=0), skipped ==="
fi

# 7b. CLEVR on the device: questions/s on 1,000 and 10,000 sampled scenes (issue 22) -----------
step "clevr_throughput.py" 90 -- "$PY" benchmarks/clevr_throughput.py --device "$DEV" --scenes 1000 10000 --repeat 1 \
    --format parquet --batch-scenes 10000 --json "$OUT/clevr_throughput_${DEV%%:*}.json"

# 8. the same shards under torchrun (issue 7 item 6) with the time left: the files of step 4 ---
if ((RANKS > 1)); then
    TR=("$PY" -m torch.distributed.run --standalone --nproc-per-node="$RANKS" -m tensorqa generate "$STORE"
        --device "$DEV" --kernels "$KERNELS" --quiet --threads 1)
    ((FULL < STORE_VIDEOS)) && TR+=(--max-videos "$FULL")
    timed_generate "pool_torchrun$RANKS" 200 -- "${TR[@]}"
    if [[ -f $OUT/pool_jobs$RANKS.txt && -f $OUT/pool_torchrun$RANKS.txt ]]; then
        file_hashes() { sed -n '2,/^content digests:/p' "$1" | grep -v '^content digests:'; }
        if diff <(file_hashes "$OUT/pool_jobs$RANKS.txt") <(file_hashes "$OUT/pool_torchrun$RANKS.txt") >/dev/null; then
            echo "torchrun and --jobs wrote byte-identical files"
        else
            echo "torchrun and --jobs files DIFFER"
            FAILED+=("torchrun vs --jobs: files differ")
        fi
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
