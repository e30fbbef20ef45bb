#!/usr/bin/env bash
# CUPTI's per-launch cost without nb, one variation per process
# (bench/gpu/cupti_probe.cu), REPS interleaved rounds; then nb's callback
# join on the same empty-kernel loop for comparison. Results into OUT_DIR.
#
#   bash bench/gpu_cupti_probe.sh BUILD_DIR OUT_DIR [REPS]
set -uo pipefail
B=$(readlink -f "$1")
OUT=$2
REPS=${3:-8}
mkdir -p "$OUT"
W=$(mktemp -d)
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  nproc
  for c in /sys/devices/system/cpu/cpu[0-9]*; do echo "$(basename $c) siblings $(cat $c/topology/thread_siblings_list 2>/dev/null) core $(cat $c/topology/core_id 2>/dev/null)"; done
} >"$OUT/topology.txt"
for r in $(seq "$REPS"); do
  for v in bare act act,ts act,pinned act,nothread act,cb act,flush konly act,ts,cb,flush; do
    echo "$v $r $("$B/bench/cupti_probe" "$v" 400 2>&1 | tr '\n' ' ')" | tee -a "$OUT/cupti.txt"
  done
  echo "nb-callback $r $(LD_PRELOAD=$B/shim/libnb_shim.so NB_OUT=$W/l$r NB_PRINT_TABLE=0 "$B/bench/launch_cupti" 400 2>&1 | tail -n 1)" | tee -a "$OUT/cupti.txt"
done
python3 - "$OUT/cupti.txt" <<'PY' | tee -a "$OUT/cupti.txt"
import collections, statistics, sys
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if "median" in f:
        v[f[0]].append(float(f[f.index("median") + 1]))
for k, xs in v.items():
    print(f"{k:22s} n {len(xs)} median {statistics.median(xs):7.1f} min {min(xs):7.1f} max {max(xs):7.1f} all {sorted(round(x) for x in xs)}")
PY
rm -rf "$W"
