#!/usr/bin/env bash
# Recording windows on a real GPU (issue 5), in one batch; results into
# OUT_DIR (docs/gpu-validation.md records them):
#   1. nbprof steps on the seed's loop: which kernel ends a step
#   2. wait 4, warmup 2, active 8, repeat 1 with that kernel: marker: 8
#      ProfilerStep spans, every kernel inside one, the same count per step
#   3. the same loop emitting an NVTX range per step, NB_STEP=nvtx:step
#   4. repeat 2: two complete sets of files
#   5. NB_TRIGGER=signal, armed by SIGUSR2 mid-run: the window is written
#      while the program still runs
#   6. the decode loop bare vs dormant (NB_TRIGGER=signal, never armed) and
#      NB_STACKS=all, ABBA rounds until DEADLINE_S
#
#   bash bench/gpu_window_check.sh BUILD_DIR OUT_DIR [DEADLINE_S]
#   PARTS="1 2 4 6" MODES="dormant" to run some (part 2 and 4 need 1's marker)
set -uo pipefail
PARTS=${PARTS:-"1 2 3 4 5 6"}
MODES=${MODES:-"dormant stacksall"}
part() { [[ " $PARTS " == *" $1 "* ]]; }
marker=${MARKER:-}
B=$(readlink -f "$1")
OUT=$2
DEADLINE=${3:-240}
SHIM=$B/shim/libnb_shim.so
mkdir -p "$OUT"
S="$OUT/summary.txt"
log() { echo "== $*" | tee -a "$S"; }
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if part 1; then
log "1 nbprof steps -- python3 bench/gpu/seed_loop.py 32"
"$B/scripts/nbprof" steps -o "$OUT/census" -- python3 bench/gpu/seed_loop.py 32 2>&1 | grep -v '^end_ns' | tee -a "$S"
marker=$(sed -n "s/^suggested: NB_STEP='\(.*\)'$/\1/p" "$OUT/census.steps.txt")
fi

log "marker: $marker"

if part 2; then
log "2 NB_STEP=$marker wait 4 warmup 2 active 8 repeat 1"
LD_PRELOAD=$SHIM NB_OUT=$OUT/k NB_STEP="$marker" NB_WAIT=4 NB_WARMUP=2 NB_ACTIVE=8 NB_REPEAT=1 NB_PRINT_TABLE=0 \
  python3 bench/gpu/seed_loop.py 32 2>&1 | tail -n 2 | tee -a "$S"
ls "$OUT"/k.* | tee -a "$S"
python3 bench/gpu/window_check.py "$OUT/k.w1.trace.json" 8 | tee -a "$S"
fi

if part 3; then
log "3 NVTX range per step, NB_STEP=nvtx:step"
LD_PRELOAD=$SHIM NB_OUT=$OUT/n NB_STEP=nvtx:step NB_WAIT=4 NB_WARMUP=2 NB_ACTIVE=8 NB_PRINT_TABLE=0 \
  python3 bench/gpu/seed_loop.py 32 nvtx 2>&1 | tail -n 2 | tee -a "$S"
python3 bench/gpu/window_check.py "$OUT/n.w1.trace.json" 8 | tee -a "$S"
python3 -c "
import json,collections,sys
ev=json.load(open('$OUT/n.w1.trace.json'))['traceEvents']
print('annotations', dict(collections.Counter((e['cat'], e['name']) for e in ev if 'annotation' in e.get('cat',''))))" | tee -a "$S"
fi

if part 4; then
log "4 repeat 2"
LD_PRELOAD=$SHIM NB_OUT=$OUT/r NB_STEP="$marker" NB_WAIT=4 NB_WARMUP=2 NB_ACTIVE=8 NB_REPEAT=2 NB_PRINT_TABLE=0 \
  python3 bench/gpu/seed_loop.py 32 2>&1 | tail -n 3 | tee -a "$S"
for w in 1 2; do
  python3 bench/gpu/window_check.py "$OUT/r.w$w.trace.json" 8 | tee -a "$S"
  python3 -m torch.cuda._memory_viz stats "$OUT/r.w$w.memory.pickle" >/dev/null 2>&1 && echo "w$w snapshot loads" | tee -a "$S"
done
fi

if part 5; then
log "5 armed by SIGUSR2 mid-run (steps of 0.1 s, signal after 15 s)"
LD_PRELOAD=$SHIM NB_OUT=$OUT/t NB_TRIGGER=signal NB_STEP="$marker" NB_ACTIVE=8 NB_PRINT_TABLE=0 \
  python3 bench/gpu/seed_loop.py 200 pause=0.1 >"$OUT/t.out" 2>"$OUT/t.err" &
pid=$!
sleep 15
kill -USR2 $pid
wait $pid
cat "$OUT/t.out" "$OUT/t.err" | tail -n 3 | tee -a "$S"
end_ns=$(sed -n 's/^end_ns //p' "$OUT/t.out")
written_ns=$(stat -c %Y "$OUT/t.w1.trace.json" 2>/dev/null)000000000
echo "window written $(( (end_ns - written_ns) / 1000000000 )) s before the program ended" | tee -a "$S"
python3 bench/gpu/window_check.py "$OUT/t.w1.trace.json" 8 | tee -a "$S"
fi

if part 6; then
log "6 decode loop: bare vs dormant, NB_STACKS=all"
bash bench/gpu_overhead_probe.sh "$B" "$OUT/p" "$DEADLINE" 0 "$MODES" | tail -n 3 | tee -a "$S"
fi
rm -f "$OUT"/census.trace.json "$OUT"/*.pickle  # big; the summary has what they showed
