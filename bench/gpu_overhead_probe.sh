#!/usr/bin/env bash
# Where the decode-loop overhead of device time comes from (issue 3), on the
# GPU machine, results into OUT_DIR:
#   1. per-launch host cost of an empty kernel (bench/gpu/launch_cupti.cu):
#      bare, host only, and each join mode, interleaved, REPS each
#   2. the decode loop, alternating processes: bare and each MODE, rounds
#      until DEADLINE seconds have passed since the start (every loop of
#      every process is kept, to tell a slow process from slow outliers)
#
#   bash bench/gpu_overhead_probe.sh BUILD_DIR OUT_DIR DEADLINE_S [REPS] [MODES]
#   (REPS 0 skips part 1; the decode rounds go bare-first, then modes-first)
#   MODES: space-separated from none callback noflush host stacksall dormant
#   PIN="taskset -c 5" runs every decode process under that prefix (one
#   core for all, to take core placement and frequency out of the pairs)
set -uo pipefail
B=$(readlink -f "$1")
OUT=$2
DEADLINE=$3
REPS=${4:-3}
MODES=${5:-"none callback noflush"}
SHIM=$B/shim/libnb_shim.so
W=$(mktemp -d)
mkdir -p "$OUT"
start=$(date +%s)
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mode_env() {  # mode tag -> env assignments
  case $1 in
    bare) ;;
    host) echo "LD_PRELOAD=$SHIM NB_OUT=$W/$2 NB_PRINT_TABLE=0 NB_DEVICE=0" ;;
    none) echo "LD_PRELOAD=$SHIM NB_OUT=$W/$2 NB_PRINT_TABLE=0 NB_CUPTI_JOIN=none" ;;
    callback) echo "LD_PRELOAD=$SHIM NB_OUT=$W/$2 NB_PRINT_TABLE=0" ;;
    noflush) echo "LD_PRELOAD=$SHIM NB_OUT=$W/$2 NB_PRINT_TABLE=0 NB_CUPTI_FLUSH_MS=0" ;;
    stacksall) echo "LD_PRELOAD=$SHIM NB_OUT=$W/$2 NB_PRINT_TABLE=0 NB_STACKS=all" ;;
    dormant) echo "LD_PRELOAD=$SHIM NB_OUT=$W/$2 NB_PRINT_TABLE=0 NB_TRIGGER=signal" ;;
  esac
}
[ "$REPS" -gt 0 ] && echo "== launch cost, empty kernel (ns per launch)" | tee -a "$OUT/probe.txt"
for r in $(seq "$REPS"); do
  for m in bare host none callback noflush; do
    echo "$m $r $(env $(mode_env $m l-$m-$r) "$B/bench/launch_cupti" 400 2>&1 | tail -n 1)" | tee -a "$OUT/probe.txt"
  done
done
echo "== decode loop" | tee -a "$OUT/probe.txt"
i=0
while [ $(( $(date +%s) - start )) -lt "$DEADLINE" ]; do
  i=$((i + 1))
  # ABBA: bare first in odd rounds, last in even ones, so a drift of the
  # machine's speed does not favour either side
  order="bare $MODES"
  [ $((i % 2)) -eq 0 ] && order="$MODES bare"
  for m in $order; do
    t0=$(date +%s.%N)
    res=$(env $(mode_env $m d-$m-$i) ${PIN:-} python3 bench/gpu/decode_loop_all.py bench/decode_loop.py 2>>"$W/err.txt" | tr '\n' ' ')
    t1=$(date +%s.%N)
    echo "$m $i wall $(awk -v a="$t0" -v b="$t1" "BEGIN{printf \"%.2f\", b-a}") $res" | tee -a "$OUT/probe.txt"
  done
done
python3 - "$OUT/probe.txt" <<'PY' | tee -a "$OUT/probe.txt"
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) > 5 and f[4] == "decode_s":
        runs[f[0]][f[1]] = float(f[5])
bare = runs.get("bare", {})
for label, r in runs.items():
    if label == "bare" or not bare: continue
    x = [r[i] / bare[i] for i in r if i in bare]
    print(label, "pairs", len(x), "median", round(statistics.median(x), 3), "ratios", [round(v, 3) for v in x])
PY
tail -n 5 "$W/err.txt" >"$OUT/err-tail.txt"
ls "$W" | head -20 >>"$OUT/err-tail.txt"
rm -rf "$W"
