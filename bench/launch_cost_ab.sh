#!/usr/bin/env bash
# Two shims' cost per intercepted call on the fake driver, side by side:
# the same nb-bench-launch binary under shim A and shim B, alternating,
# PAIRS times (BURSTS timed bursts each), NB_DEVICE=0 as in launch_cost.sh.
# Prints each call's medians and ranges. For a change to the hooks: build
# the old shim in a worktree (git worktree add /tmp/old REV; meson setup
# /tmp/old/build; ninja -C /tmp/old/build shim/libnb_shim.so).
#
#   bash bench/launch_cost_ab.sh BUILD_DIR SHIM_A SHIM_B [PAIRS] [BURSTS]
set -euo pipefail
build=$(readlink -f "$1")
a=$(readlink -f "$2")
b=$(readlink -f "$3")
pairs=${4:-11}
bursts=${5:-40}
bin="$build/bench/nb-bench-launch"
export LD_LIBRARY_PATH="$build/test/fake_cuda"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$pairs"); do
  for v in a b; do
    so=$a; [ $v = b ] && so=$b
    LD_PRELOAD="$so" NB_OUT="$out/run" NB_PRINT_TABLE=0 NB_LOG=error NB_DEVICE=0 "$bin" "$bursts" >>"$out/$v" 2>/dev/null
    # Every timed call recorded, none dropped (a drop is cheaper than a record).
    grep -q "dropped: 0$" "$out/run.table.txt" || { echo "records were dropped (shim $v, pair $i)" >&2; exit 1; }
  done
done
python3 - "$out/a" "$out/b" <<'PY'
import statistics, sys
def load(path):
    vals = {}
    for line in open(path):
        k, v = line.split()
        vals.setdefault(k, []).append(float(v))
    return vals
a, b = load(sys.argv[1]), load(sys.argv[2])
print("| call | A ns (median) | B ns (median) | A range | B range |")
print("| --- | --- | --- | --- | --- |")
for k in a:
    print(f"| {k} | {statistics.median(a[k]):.1f} | {statistics.median(b[k]):.1f} | "
          f"{min(a[k]):.1f}–{max(a[k]):.1f} | {min(b[k]):.1f}–{max(b[k]):.1f} |")
PY
