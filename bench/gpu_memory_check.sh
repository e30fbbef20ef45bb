#!/usr/bin/env bash
# The memory notebook on a real GPU (issue 4), in one batch; results into
# OUT_DIR (docs/gpu-validation.md records them):
#   1. the seed's generate example unprofiled (torch's own peak), then
#      unmodified under nb with NB_TORCH_ALLOCS=1: the snapshot loads in
#      torch.cuda._memory_viz stats and trace, its active peak is within 5%,
#      the largest allocations name a Python line
#   2. a stack's cost per allocation (fake runtime, this machine's CPU)
#   3. the decode loop bare vs NB_STACKS=all, ABBA rounds until DEADLINE_S
#   4. a real-CUDA leak (bench/gpu/leak.cu, built by make_carry.sh): the
#      surviving allocation names the leaking line
#
#   bash bench/gpu_memory_check.sh BUILD_DIR OUT_DIR [DEADLINE_S]
set -uo pipefail
B=$(readlink -f "$1")
OUT=$2
DEADLINE=${3:-300}
SHIM=$B/shim/libnb_shim.so
W=$(mktemp -d)
mkdir -p "$OUT"
S="$OUT/summary.txt"
log() { echo "== $*" | tee -a "$S"; }
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

log "1 generate example: unprofiled, then NB_TORCH_ALLOCS=1"
python3 bench/gpu/generate_snapshot.py 2>&1 | tail -n 1 | tee -a "$S" | tee "$W/bare.txt"
LD_PRELOAD=$SHIM NB_TORCH_ALLOCS=1 NB_OUT=$W/gen NB_PRINT_TABLE=0 \
  python3 bench/gpu/generate_snapshot.py 2>&1 | tail -n 3 | tee -a "$S"
ls -la "$W"/gen.* | tee -a "$S"
python3 -m torch.cuda._memory_viz stats "$W/gen.memory.pickle" 2>&1 | tail -n 12 | tee -a "$S"
python3 -m torch.cuda._memory_viz trace "$W/gen.memory.pickle" >"$W/trace.txt" 2>&1
echo "memory_viz trace exit $?, $(wc -l <"$W/trace.txt") lines" | tee -a "$S"
peak=$(awk '{print $2}' "$W/bare.txt")
python3 bench/gpu/snapshot_peak.py "$W/gen.memory.pickle" "$peak" | tee -a "$S"
python3 bench/gpu/trace_sizes.py "$W/gen.trace.json" | tee -a "$S"
cp "$W/gen.memory.pickle" "$W/gen.table.txt" "$OUT/" 2>/dev/null

log "2 stack cost per allocation (fake runtime, ns per call)"
for i in 1 2 3; do
  for s in bare none memory; do
    if [ $s = bare ]; then env LD_LIBRARY_PATH="$B/test/fake_cuda" python3 bench/alloc_stack_cost.py
    else env LD_LIBRARY_PATH="$B/test/fake_cuda" LD_PRELOAD=$SHIM NB_OUT=$W/a-$s-$i NB_PRINT_TABLE=0 NB_DEVICE=0 \
           NB_STACKS=$s python3 bench/alloc_stack_cost.py; fi | sed "s/^/$s $i /" | tee -a "$S"
  done
done

log "4 leak program: the surviving allocation names its line"
LD_PRELOAD=$SHIM NB_OUT=$W/leak NB_PRINT_TABLE=0 "$B/bench/leak" 2>&1 | tail -n 2 | tee -a "$S"
python3 bench/gpu/leak_check.py "$W/leak.memory.pickle" bench/gpu/leak.cu | tee -a "$S"
cp "$W/leak.memory.pickle" "$OUT/" 2>/dev/null

log "3 decode loop, bare vs NB_STACKS=all"
bash bench/gpu_overhead_probe.sh "$B" "$OUT/p" "$DEADLINE" 0 "stacksall" | tail -n 2 | tee -a "$S"
rm -rf "$W"
