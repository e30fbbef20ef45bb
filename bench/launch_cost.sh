#!/usr/bin/env bash
# Added host cost per intercepted call on the fake driver: runs
# nb-bench-launch bare and under the shim, alternately, PAIRS times, and
# prints the medians and their differences (docs/performance.md quotes this).
# With BASE_SHIM, the other side runs under that shim instead of bare (a
# change to the hooks against the old shim, built in a worktree:
# git worktree add /tmp/old REV; meson setup /tmp/old/build;
# ninja -C /tmp/old/build shim/libnb_shim.so).
#
#   bash bench/launch_cost.sh [BUILD_DIR] [PAIRS] [BURSTS] [BASE_SHIM]
#   NB_TRIGGER=signal bash bench/launch_cost.sh ...   the dormant shim's cost
set -euo pipefail
top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
build=${1:-$top/build}
pairs=${2:-11}
bursts=${3:-60}
base_shim=${4:+$(readlink -f "$4")}
bin="$build/bench/nb-bench-launch"
export LD_LIBRARY_PATH="$build/test/fake_cuda"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# NB_DEVICE=0: the shim's own cost per call. (With device time on, the
# fake CUPTI's simulated callbacks and records would be measured too.)
under() {  # SHIM RUN_PREFIX OUT_FILE
  LD_PRELOAD="$1" NB_OUT="$2" NB_PRINT_TABLE=0 NB_LOG=error NB_DEVICE=0 "$bin" "$bursts" >>"$3" 2>/dev/null
  # Every timed call must have been recorded, not dropped (dormant,
  # NB_TRIGGER=signal, records nothing and writes no table).
  [ "${NB_TRIGGER:-}" = signal ] && return
  grep -q "dropped: 0$" "$2.table.txt" || { echo "records were dropped in $2" >&2; exit 1; }
}
for i in $(seq "$pairs"); do
  if [ -n "$base_shim" ]; then
    under "$base_shim" "$out/base-$i" "$out/bare"
  else
    "$bin" "$bursts" >>"$out/bare"
  fi
  under "$build/shim/libnb_shim.so" "$out/run-$i" "$out/shim"
done
python3 - "$out/bare" "$out/shim" "${base_shim:+base shim}" <<'PY'
import statistics, sys
def load(path):
    vals = {}
    for line in open(path):
        k, v = line.split()
        vals.setdefault(k, []).append(float(v))
    return vals
bare, shim = load(sys.argv[1]), load(sys.argv[2])
base = sys.argv[3] or "bare"
print(f"| call | {base} ns (median) | with shim ns (median) | added ns |")
print(f"| --- | --- | --- | --- |")
for k in ("launch_ns", "symbol_launch_ns", "alloc_free_ns"):
    b, s = statistics.median(bare[k]), statistics.median(shim[k])
    print(f"| {k} | {b:.1f} | {s:.1f} | {s - b:.1f} |")
PY
