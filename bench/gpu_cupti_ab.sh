#!/usr/bin/env bash
# CUPTI's per-launch cost measured inside each process
# (bench/gpu/cupti_probe.cu with "ab": activity off and on every 10 bursts
# of 500 empty-kernel launches), one CUPTI configuration per process,
# REPS interleaved rounds. The figure per process is the added ns per
# launch (median with activity on minus median with it off), which the
# machine's changes of speed between processes do not reach. Each round
# also runs nb itself the same way (bench/gpu/launch_cupti.cu "ab": nb
# recording and dormant by turns, NB_TRIGGER=signal) with each join mode in
# NB_JOINS (default "order callback none"), NB_STACKS=none. VARIATIONS "" runs nb
# only. The default variations compare the joins' costs without nb:
# activity alone, nb's callback setup, API records for the launch ids (an
# API-record join; nb's joined nothing, removed 2026-12-01), external ids (which
# joined nothing in nb, 2026-11-30).
#
#   bash bench/gpu_cupti_ab.sh BUILD_DIR OUT_DIR [REPS] [VARIATIONS]
set -uo pipefail
B=$(readlink -f "$1")
OUT=$2
REPS=${3:-6}
NB_JOINS=${NB_JOINS:-"order callback none"}
VARS=${4-"act act,ts,cb,flush act,api act,ext"}
mkdir -p "$OUT"
W=$(mktemp -d)
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for r in $(seq "$REPS"); do
  for v in $VARS; do
    echo "$v $r $("$B/bench/cupti_probe" "$v,ab" 400 2>&1 | tail -n 1)" | tee -a "$OUT/cupti-ab.txt"
  done
  for j in $NB_JOINS; do
    tag=nb-$j
    echo "$tag $r $(LD_PRELOAD=$B/shim/libnb_shim.so NB_TRIGGER=signal NB_OUT=$W/l$r-$j NB_PRINT_TABLE=0 NB_STACKS=none \
      NB_CUPTI_JOIN=$j "$B/bench/launch_cupti" 400 ab 2>&1 | tail -n 1)" | tee -a "$OUT/cupti-ab.txt"
  done
done
python3 - "$OUT/cupti-ab.txt" <<'PY' | tee -a "$OUT/cupti-ab.txt"
import collections, statistics, sys
v = collections.defaultdict(list)
off = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if "added" in f:
        v[f[0]].append(float(f[f.index("added") + 1]))
        off[f[0]].append(float(f[f.index("off") + 1]))
print("variation              n  added ns: median  min  max     (launch ns with activity off: median)")
for k, xs in v.items():
    print(f"{k:22s} {len(xs):2d}  {statistics.median(xs):7.1f} {min(xs):7.1f} {max(xs):7.1f}   ({statistics.median(off[k]):.0f})  all {sorted(round(x) for x in xs)}")
PY
rm -rf "$W"
