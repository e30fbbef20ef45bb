#!/usr/bin/env bash
# Checks on a real GPU (the device machine), in one batch, each result into
# $OUT (docs/gpu-results.md records what came back):
#   1. nb-demo under nbprof: right result, outputs load (nbread, memory_viz)
#   2. PyTorch decode steps: launches/memsets recorded by nb vs kernels/memsets
#      torch.profiler saw in the same region
#   3. CuPy and JAX: their launches and allocations are recorded
#   4. the seed's generate example: snapshot loads in torch's memory_viz
#   5. overhead: decode_loop.py bare vs under the shim, alternating pairs
#   6. added host cost per call on the fake driver, on that machine's CPU
#
#   bash bench/gpu_check.sh BUILD_DIR OUT_DIR [PAIRS]
set -uo pipefail
B=$(readlink -f "$1")
OUT=$2
PAIRS=${3:-5}
SHIM=$B/shim/libnb_shim.so
W=$(mktemp -d)
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

nvidia-smi -L | tee "$OUT/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" | tee -a "$OUT/gpu.txt"

log "1 nb-demo"
"$B/scripts/nbprof" -o "$W/demo" -- "$B/scripts/nb-demo" 200 >"$OUT/demo.txt" 2>&1
echo "exit $?" >>"$OUT/demo.txt"
python3 test/tools/nbread.py trace "$W/demo.trace.json" >"$W/demo.json" && echo "trace ok" >>"$OUT/demo.txt"
python3 test/tools/nbread.py snapshot "$W/demo.memory.pickle" >/dev/null && echo "snapshot ok" >>"$OUT/demo.txt"
python3 -m torch.cuda._memory_viz stats "$W/demo.memory.pickle" >>"$OUT/demo.txt" 2>&1
python3 - "$W/demo.json" >>"$OUT/demo.txt" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
c = collections.Counter((e["name"], e.get("args", {}).get("kernel", "-")) for e in d["traceEvents"] if e.get("ph") == "X")
for k, v in sorted(c.items()): print(v, *k)
PY
tail -n 25 "$OUT/demo.txt" | tee -a "$OUT/summary.txt"

log "2 launch counts vs torch.profiler"
mkdir -p "$W/lc"
LD_PRELOAD=$SHIM NB_OUT=$W/lc/decode NB_PRINT_TABLE=0 python3 bench/gpu/launch_count.py "$W/lc" >"$OUT/launch_count.txt" 2>&1
python3 bench/gpu/compare_counts.py "$W/lc/region.json" "$W/lc/profiler.json" "$W/lc/decode.trace.json" \
  >>"$OUT/launch_count.txt" 2>&1
tail -n 40 "$OUT/launch_count.txt" | tee -a "$OUT/summary.txt"

log "3 cupy / jax"
for fw in cupy jax; do
  XLA_PYTHON_CLIENT_PREALLOCATE=false LD_PRELOAD=$SHIM NB_OUT=$W/$fw NB_TABLE_ROWS=8 \
    python3 bench/gpu/frameworks_smoke.py $fw >"$OUT/$fw.txt" 2>&1
  echo "exit $?" >>"$OUT/$fw.txt"
  python3 test/tools/nbread.py trace "$W/$fw.trace.json" >/dev/null && echo "trace ok" >>"$OUT/$fw.txt"
  python3 test/tools/nbread.py snapshot "$W/$fw.memory.pickle" >/dev/null && echo "snapshot ok" >>"$OUT/$fw.txt"
  grep -v "^ *$" "$OUT/$fw.txt" | tail -n 22 | tee -a "$OUT/summary.txt"
done

log "4 generate snapshot"
LD_PRELOAD=$SHIM NB_OUT=$W/gen NB_TABLE_ROWS=8 python3 bench/gpu/generate_snapshot.py >"$OUT/generate.txt" 2>&1
python3 -m torch.cuda._memory_viz stats "$W/gen.memory.pickle" >>"$OUT/generate.txt" 2>&1
python3 -m torch.cuda._memory_viz trace "$W/gen.memory.pickle" 2>&1 | tail -n 5 >>"$OUT/generate.txt"

tail -n 30 "$OUT/generate.txt" | tee -a "$OUT/summary.txt"

log "5 overhead, $PAIRS pairs"
for i in $(seq "$PAIRS"); do
  python3 bench/decode_loop.py 2>/dev/null | awk -v i=$i '{print "bare", i, $2}' >>"$OUT/overhead.txt"
  LD_PRELOAD=$SHIM NB_OUT=$W/ovh-$i NB_PRINT_TABLE=0 python3 bench/decode_loop.py 2>>"$W/overhead.err" \
    | awk -v i=$i '{print "shim", i, $2}' >>"$OUT/overhead.txt"
done
python3 - "$OUT/overhead.txt" <<'PY' | tee -a "$OUT/summary.txt"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
bare = {r[1]: float(r[2]) for r in rows if r[0] == "bare"}
shim = {r[1]: float(r[2]) for r in rows if r[0] == "shim"}
ratios = [shim[k] / bare[k] for k in bare if k in shim]
print("bare median s", statistics.median(bare.values()), "shim median s", statistics.median(shim.values()))
print("pairwise ratios", [round(r, 3) for r in ratios], "median", round(statistics.median(ratios), 3))
PY
ls -la "$W"/ovh-1.* >>"$OUT/overhead.txt" 2>&1

log "6 added cost per call on the fake driver"
bash bench/launch_cost.sh "$B" 11 40 2>&1 | tee -a "$OUT/summary.txt"
[ -x "$B/bench/nb-bench-clock" ] && "$B/bench/nb-bench-clock" | tee -a "$OUT/summary.txt"
rm -rf "$W"
