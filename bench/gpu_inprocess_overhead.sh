#!/usr/bin/env bash
# nb's overhead on the decode loop, paired inside one process (issue 3's
# ≤ 1.15x and issue 4's ≤ 1.30x with NB_STACKS=all), results into OUT_DIR.
# One process per MODE (default: "default stacksall"; also stacksall16,
# stacksall_lu, nostacks, callback and nojoin: see the case below); see
# bench/gpu/decode_inprocess_ab.py for the method.
#
#   bash bench/gpu_inprocess_overhead.sh BUILD_DIR OUT_DIR [PAIRS] [MODES]
set -uo pipefail
B=$(readlink -f "$1")
OUT=$2
PAIRS=${3:-10}
MODES=${4:-"default stacksall"}
SHIM=$B/shim/libnb_shim.so
W=$(mktemp -d)
mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for m in $MODES; do
  case $m in
    default) extra="" ;;
    stacksall) extra="NB_STACKS=all" ;;
    stacksall16) extra="NB_STACKS=all NB_STACK_DEPTH=16" ;;            # the same, 16 frames of each kind
    stacksall_lu) extra="NB_STACKS=all NB_UNWIND=libunwind" ;;         # the same, native frames by libunwind
    nostacks) extra="NB_STACKS=none" ;;                          # issue 3's "without stacks" (default join: order)
    callback) extra="NB_STACKS=none NB_CUPTI_JOIN=callback" ;;   # the callback join
    nojoin) extra="NB_STACKS=none NB_CUPTI_JOIN=none" ;;         # CUPTI activity, no join: the floor
    *) echo "unknown mode $m"; exit 2 ;;
  esac
  echo "== $m" | tee -a "$OUT/inprocess.txt"
  env LD_PRELOAD="$SHIM" NB_TRIGGER=signal NB_OUT="$W/$m" NB_PRINT_TABLE=0 $extra \
    python3 bench/gpu/decode_inprocess_ab.py bench/decode_loop.py "$PAIRS" 2>"$W/$m.err" | tee -a "$OUT/inprocess.txt"
  grep -v "^nb: wrote" "$W/$m.err" | tail -n 5 >>"$OUT/inprocess.txt"
done
rm -rf "$W"
