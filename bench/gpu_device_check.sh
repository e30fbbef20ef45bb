#!/usr/bin/env bash
# Device time on a real GPU (issue 3), in one batch; results into $OUT
# (docs/gpu-validation.md records them):
#   1. an nvcc-built binary (static CUDA runtime) using cuBLAS: every kernel
#      joined to its launch
#   2. GPT-2 decode steps under nb and, in a separate process, under
#      torch.profiler: kernels per step, device time per step, kernel names
#   3. CuPy and JAX: every device record joined
#   4. threads (also 16 on one core), graphs (nvcc, and PyTorch's CUDA
#      graphs): every record joined to its own call; calls captured into a
#      graph marked, and no work joined to them
#   5. overhead of the decode loop: bare vs nb (its default join, no stacks,
#      as issue 3 measures), alternating, ABBA; the first EXTRA rounds also
#      run join callback and join none
#
#   JOIN=callback bash bench/gpu_device_check.sh BUILD_DIR OUT_DIR [ROUNDS] [EXTRA]
#   (JOIN: the NB_CUPTI_JOIN of every nb run but the EXTRA ones; default order)
set -uo pipefail
B=$(readlink -f "$1")
OUT=$2
ROUNDS=${3:-10}
EXTRA=${4:-4}
SHIM=$B/shim/libnb_shim.so
export NB_CUPTI_JOIN=${JOIN:-order}
W=$(mktemp -d)
mkdir -p "$OUT"
S="$OUT/summary.txt"
log() { echo "== $*" | tee -a "$S"; }
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

nvidia-smi -L | tee -a "$S"
echo "NB_CUPTI_JOIN=$NB_CUPTI_JOIN" | tee -a "$S"

log "1 nvcc static runtime + cuBLAS"
LD_PRELOAD=$SHIM NB_OUT=$W/cublas NB_TABLE_ROWS=6 "$B/bench/cublas_static" >"$W/cublas.txt" 2>&1
echo "exit $?" >>"$W/cublas.txt"
grep -E "own_kernels|exit|nvjet|gemm|Self Device time|Device records|No device" "$W/cublas.txt" | tee -a "$S"
python3 bench/gpu/joined.py "$W/cublas.trace.json" 22 | tee -a "$S"

log "2 decode steps: nb vs torch.profiler (separate processes)"
LD_PRELOAD=$SHIM NB_OUT=$W/nb NB_PRINT_TABLE=0 python3 bench/gpu/decode_steps.py nb "$W" 2>&1 | tail -n 3 | tee -a "$S"
python3 bench/gpu/decode_steps.py torch "$W" 2>&1 | tail -n 1 | tee -a "$S"
python3 bench/gpu/steps_compare.py "$W" 2>&1 | tee -a "$S"
grep -E "Device records|cost" "$W/nb.table.txt" | tee -a "$S"

log "3 cupy / jax"
for fw in cupy jax; do
  XLA_PYTHON_CLIENT_PREALLOCATE=false LD_PRELOAD=$SHIM NB_OUT=$W/$fw NB_PRINT_TABLE=0 \
    python3 bench/gpu/frameworks_smoke.py $fw 2>&1 | tail -n 2 | tee -a "$S"
  python3 bench/gpu/joined.py "$W/$fw.trace.json" 1 | tee -a "$S"
done

log "4 threads and graphs"
LD_PRELOAD=$SHIM NB_OUT=$W/threads NB_PRINT_TABLE=0 NB_STACKS=none "$B/bench/threads_join" 8 200 2>&1 | tail -n 1 | tee -a "$S"
python3 bench/gpu/threads_joined.py "$W/threads.trace.json" 8 200 | tee -a "$S"
# 16 threads on one core: threads taken off the CPU inside their calls,
# after the work was submitted and before the hook returned.
LD_PRELOAD=$SHIM NB_OUT=$W/threads1 NB_PRINT_TABLE=0 NB_STACKS=none taskset -c 0 "$B/bench/threads_join" 16 100 2>&1 | tail -n 1 | tee -a "$S"
python3 bench/gpu/threads_joined.py "$W/threads1.trace.json" 16 100 | tee -a "$S"
LD_PRELOAD=$SHIM NB_OUT=$W/graph NB_PRINT_TABLE=0 "$B/bench/graph_join" 100 2>&1 | tail -n 1 | tee -a "$S"
python3 bench/gpu/graph_joined.py "$W/graph.trace.json" 100 | tee -a "$S"
python3 bench/gpu/capture_joined.py "$W/graph.trace.json" | tee -a "$S"
LD_PRELOAD=$SHIM NB_OUT=$W/tgraph NB_PRINT_TABLE=0 python3 bench/gpu/torch_graph.py 5 3 2>&1 | tail -n 2 | tee -a "$S"
python3 bench/gpu/capture_joined.py "$W/tgraph.trace.json" | tee -a "$S"
grep -E "Device records|no device record" "$W/tgraph.table.txt" | tee -a "$S"

[ "$ROUNDS" -gt 0 ] || { rm -rf "$W"; exit 0; }
log "5 overhead: $ROUNDS rounds (bare, nb), first $EXTRA also callback and none"
run_loop() {  # label env...
  local label=$1; shift
  env "$@" python3 bench/decode_loop.py 2>>"$W/overhead.err" | awk -v l="$label" -v i="$i" '{print l, i, $2}' >>"$OUT/overhead.txt"
}
for i in $(seq "$ROUNDS"); do
  [ $((i % 2)) -eq 1 ] && run_loop bare
  run_loop nb LD_PRELOAD=$SHIM NB_OUT=$W/o-nb-$i NB_PRINT_TABLE=0 NB_STACKS=none
  if [ "$i" -le "$EXTRA" ]; then
    run_loop callback LD_PRELOAD=$SHIM NB_OUT=$W/o-cb-$i NB_PRINT_TABLE=0 NB_STACKS=none NB_CUPTI_JOIN=callback
    run_loop none LD_PRELOAD=$SHIM NB_OUT=$W/o-no-$i NB_PRINT_TABLE=0 NB_STACKS=none NB_CUPTI_JOIN=none
  fi
  [ $((i % 2)) -eq 0 ] && run_loop bare
done
python3 - "$OUT/overhead.txt" <<'PY' | tee -a "$S"
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    label, i, s = line.split()
    runs[label][i] = float(s)
bare = runs["bare"]
print("bare median s", round(statistics.median(bare.values()), 4))
for label in ("nb", "callback", "none"):
    r = [runs[label][i] / bare[i] for i in runs[label] if i in bare]
    if r:
        print(label, "pairs", len(r), "ratios", [round(x, 3) for x in r], "median", round(statistics.median(r), 3))
PY
grep -E "Device records|dropped|joined" "$W/o-nb-1.table.txt" | tee -a "$S"
tail -n 3 "$W/overhead.err" >>"$S"
rm -rf "$W"
