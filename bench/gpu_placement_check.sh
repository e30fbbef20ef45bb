#!/usr/bin/env bash
# Does thread placement explain the decode loop's slowdown under CUPTI?
# Runs bench/gpu/thread_placement.py in alternating processes, ROUNDS
# rounds of the given RUNS (each "bare:MODE" or "nb:MODE", MODE one of
# free apart sibling; nb = the shim recording with its default join and
# NB_STACKS=none, as issue 3 measures), ABBA order; also prints the
# machine's CPU topology. Results into OUT_DIR/placement.txt.
#
#   bash bench/gpu_placement_check.sh BUILD_DIR OUT_DIR ROUNDS "bare:free nb:free nb:apart nb:sibling"
set -uo pipefail
B=$(readlink -f "$1")
OUT=$2
ROUNDS=$3
RUNS=$4
W=$(mktemp -d)
mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ lscpu | grep -E '^(CPU\(s\)|Thread|Core|Socket|NUMA|Model name)'; echo "siblings of cpu0: $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)"; } | tee "$OUT/placement.txt"
for i in $(seq "$ROUNDS"); do
  order=$RUNS
  [ $((i % 2)) -eq 0 ] && order=$(echo "$RUNS" | tr ' ' '\n' | tac | tr '\n' ' ')
  for run in $order; do
    who=${run%%:*}; mode=${run#*:}
    envs=()
    [ "$who" = nb ] && envs=(LD_PRELOAD="$B/shim/libnb_shim.so" NB_OUT="$W/$i-$mode" NB_PRINT_TABLE=0 NB_STACKS=none)
    res=$(env "${envs[@]}" python3 bench/gpu/thread_placement.py bench/decode_loop.py "$mode" 2>>"$W/err.txt" | tr '\n' ' ')
    echo "$run $i $res" | tee -a "$OUT/placement.txt"
  done
done
tail -n 5 "$W/err.txt" >"$OUT/stderr-tail.txt"
