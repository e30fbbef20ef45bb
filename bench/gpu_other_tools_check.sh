#!/usr/bin/env bash
# nb beside other profilers on a real GPU (issue 6), results into OUT_DIR:
#   1. a program that runs torch.profiler itself, bare and with nb preloaded:
#      torch.profiler's kernel count in both, and what nb says
#   2. nsys profiling a program with nb preloaded (when nsys is installed)
#
#   bash bench/gpu_other_tools_check.sh BUILD_DIR OUT_DIR
set -uo pipefail
B=$(readlink -f "$1")
OUT=$2
SHIM=$B/shim/libnb_shim.so
mkdir -p "$OUT"
S="$OUT/summary.txt"
log() { echo "== $*" | tee -a "$S"; }
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

log "0 the seed's loop with nb, no profiler of its own: device time all along, no hand-over"
LD_PRELOAD=$SHIM NB_OUT=$OUT/plain NB_PRINT_TABLE=0 python3 bench/gpu/seed_loop.py 8 2>&1 | grep -E "^nb:" | tee -a "$S"
grep -E "Device records|no device record|Device time stops" "$OUT/plain.table.txt" | tee -a "$S"

log "1a torch.profiler inside the program, bare"
python3 bench/gpu/torch_profiler_inside.py "$OUT/bare.json" 2>&1 | grep -v Warning | tail -n 3 | tee -a "$S"
log "1b the same with nb preloaded"
LD_PRELOAD=$SHIM NB_OUT=$OUT/tp NB_PRINT_TABLE=0 python3 bench/gpu/torch_profiler_inside.py "$OUT/nb.json" 2>&1 |
  grep -v Warning | tail -n 6 | tee -a "$S"
grep -E "Device records|no device record|Device time stops" "$OUT/tp.table.txt" | tee -a "$S"
rm -f "$OUT"/*.json "$OUT"/*.pickle

NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -n 1)
if [ -n "$NSYS" ]; then
  log "2 nsys profile with nb preloaded ($NSYS)"
  "$NSYS" profile -o "$OUT/nsys" --force-overwrite true -t cuda \
    env LD_PRELOAD=$SHIM NB_OUT=$OUT/ns NB_PRINT_TABLE=0 python3 bench/gpu/seed_loop.py 8 2>&1 | tail -n 8 | tee -a "$S"
  ls -la "$OUT"/nsys* | tee -a "$S"
  "$NSYS" stats -r cuda_gpu_kern_sum "$OUT/nsys.nsys-rep" 2>&1 | head -n 8 | tee -a "$S"
  grep -E "Device records|No device time" "$OUT/ns.table.txt" | tee -a "$S"
  rm -f "$OUT"/*.pickle "$OUT"/*.json "$OUT"/*.sqlite
else
  log "2 nsys: not installed on this machine"
fi
