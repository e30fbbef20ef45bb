#!/usr/bin/env bash
# Added host cost per intercepted call on the fake driver: runs
# nb-bench-launch bare and under the shim, alternately, PAIRS times, and
# prints the medians and their differences (docs/performance.md quotes this).
#
#   bash bench/launch_cost.sh [BUILD_DIR] [PAIRS] [BURSTS]
#   NB_TRIGGER=signal bash bench/launch_cost.sh ...   the dormant shim's cost
set -euo pipefail
top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
build=${1:-$top/build}
pairs=${2:-11}
bursts=${3:-60}
bin="$build/bench/nb-bench-launch"
export LD_LIBRARY_PATH="$build/test/fake_cuda"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$pairs"); do
  "$bin" "$bursts" >>"$out/bare"
  # NB_DEVICE=0: the shim's own cost per call. (With device time on, the
  # fake CUPTI's simulated callbacks and records would be measured too.)
  LD_PRELOAD="$build/shim/libnb_shim.so" NB_OUT="$out/run-$i" NB_PRINT_TABLE=0 NB_LOG=error NB_DEVICE=0 \
    "$bin" "$bursts" >>"$out/shim" 2>/dev/null
  # Every timed call must have been recorded, not dropped (dormant,
  # NB_TRIGGER=signal, records nothing and writes no table).
  [ "${NB_TRIGGER:-}" = signal ] && continue
  grep -q "dropped: 0$" "$out/run-$i.table.txt" || { echo "records were dropped in run $i" >&2; exit 1; }
done
python3 - "$out/bare" "$out/shim" <<'PY'
import statistics, sys
def load(path):
    vals = {}
    for line in open(path):
        k, v = line.split()
        vals.setdefault(k, []).append(float(v))
    return vals
bare, shim = load(sys.argv[1]), load(sys.argv[2])
print(f"| call | bare ns (median) | with shim ns (median) | added ns |")
print(f"| --- | --- | --- | --- |")
for k in ("launch_ns", "symbol_launch_ns", "alloc_free_ns"):
    b, s = statistics.median(bare[k]), statistics.median(shim[k])
    print(f"| {k} | {b:.1f} | {s:.1f} | {s - b:.1f} |")
PY
