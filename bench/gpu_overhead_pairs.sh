#!/usr/bin/env bash
# Issue 3's acceptance figure: the decode loop (bench/decode_loop.py, as in
# ../shared/bench) bare and under nb, in alternating processes, ROUNDS
# rounds, ABBA (odd rounds bare first, even rounds nb first). MODES names
# nb configurations (default "order"): order = the default join without
# stacks (what issue 3 measures), callback, none (CUPTI activity alone),
# stacksall (issue 4: NB_STACKS=all), stacksall16 (the same, 16 frames of
# each kind), stacksall_lu (the same, native frames by libunwind). EXTRA_ROUNDS: modes after the first
# run only in the first EXTRA_ROUNDS rounds (default: all rounds). Each
# process's decode_s goes to OUT/pairs.txt as it comes, then the ratios of
# each mode to the bare process of its round, and their median; the table
# footers' cost lines go to OUT/footers.txt.
#
#   bash bench/gpu_overhead_pairs.sh BUILD_DIR OUT_DIR ROUNDS "MODES" [EXTRA_ROUNDS]
set -uo pipefail
B=$(readlink -f "$1")
OUT=$2
ROUNDS=$3
MODES=${4:-order}
EXTRA=${5:-$ROUNDS}
SHIM=$B/shim/libnb_shim.so
W=$(mktemp -d)
mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
one() {  # label round
  local env=()
  case $1 in
    bare) ;;
    order) env=(LD_PRELOAD="$SHIM" NB_STACKS=none) ;;
    callback) env=(LD_PRELOAD="$SHIM" NB_STACKS=none NB_CUPTI_JOIN=callback) ;;
    none) env=(LD_PRELOAD="$SHIM" NB_STACKS=none NB_CUPTI_JOIN=none) ;;
    stacksall) env=(LD_PRELOAD="$SHIM" NB_STACKS=all) ;;
    stacksall16) env=(LD_PRELOAD="$SHIM" NB_STACKS=all NB_STACK_DEPTH=16) ;;
    stacksall_lu) env=(LD_PRELOAD="$SHIM" NB_STACKS=all NB_UNWIND=libunwind) ;;
    *) echo "unknown mode $1" >&2; return ;;
  esac
  local s
  s=$(env "${env[@]}" NB_OUT="$W/$1-$2" NB_PRINT_TABLE=0 python3 bench/decode_loop.py 2>>"$W/err.txt" | awk '/decode_s/ {print $2}')
  echo "$1 $2 ${s:-failed}" | tee -a "$OUT/pairs.txt"
  # nb's own account of its cost (the stacks' line is measured)
  [ -f "$W/$1-$2.table.txt" ] && grep -E "own cost|Stacks taken|without their stack|dropped" "$W/$1-$2.table.txt" | sed "s/^/$1 $2: /" >>"$OUT/footers.txt"
  rm -f "$W/$1-$2".*
}
first=${MODES%% *}
for i in $(seq "$ROUNDS"); do
  modes=$first
  [ "$i" -le "$EXTRA" ] && modes=$MODES
  if [ $((i % 2)) -eq 1 ]; then
    one bare "$i"
    for m in $modes; do one "$m" "$i"; done
  else
    for m in $modes; do one "$m" "$i"; done
    one bare "$i"
  fi
done
python3 - "$OUT/pairs.txt" <<'PY' | tee -a "$OUT/pairs.txt"
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 3 and f[2] != "failed":
        try:
            runs[f[0]][f[1]] = float(f[2])
        except ValueError:
            pass
bare = runs.pop("bare", {})
print("bare median s", round(statistics.median(bare.values()), 4) if bare else None)
for label, r in runs.items():
    x = [r[i] / bare[i] for i in r if i in bare]
    if x:
        print(label, "pairs", len(x), "median ratio", round(statistics.median(x), 3), "ratios", [round(v, 3) for v in x])
PY
tail -n 3 "$W/err.txt" >>"$OUT/pairs.txt"
rm -rf "$W"
