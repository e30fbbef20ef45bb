#!/usr/bin/env bash
# The main job on a fresh machine: build what the demo needs (installing
# nb's Debian packages if meson or ninja is missing), then run the bundled
# demo program under nbprof and say how to open what it wrote. With a GPU
# the demo runs on it; without one it runs on the CUDA test doubles
# (test/fake_cuda) and says so.
#
#   bash scripts/demo.sh [OUTPUT_PREFIX]      default: nb-demo (in the current directory)
#
# A new build directory (NB_BUILD_DIR, default build/) is set up without the
# test suite (-Dtests=false); an existing one is used as it is. Only the
# targets the demo runs are built.
set -euo pipefail
top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
build=${NB_BUILD_DIR:-$top/build}
out=${1:-nb-demo}

say() { echo "nb demo: $*" >&2; }
fail() { say "$*"; exit 1; }

if ! command -v meson >/dev/null || ! command -v ninja >/dev/null; then
  say "installing the Debian packages nb builds with (scripts/install-deps.sh)"
  bash "$top/scripts/install-deps.sh" || fail "installing the packages failed (see above)"
fi

gpu=""
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' && nvidia-smi -L >/dev/null 2>&1; then
  gpu=$(nvidia-smi -L | head -n 1)
fi

if [ ! -f "$build/build.ninja" ]; then
  say "configuring $build (meson setup -Dtests=false)"
  log=$(mktemp)
  if ! meson setup -Dtests=false "$build" "$top" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    fail "meson setup failed (its output is above)"
  fi
  rm -f "$log"
fi

# By meson's target names: the shim and its private libraries, nbprof and
# its helpers, the demo, and without a GPU the fake driver and CUPTI. The
# build files are brought up to date first, so that the names are current.
targets=(nb_shim nb-libs nb-options nbprof nb-stats nb-report nb-demo)
[ -n "$gpu" ] || targets+=(cuda cupti)
say "building ${targets[*]} (ninja's progress below)"
if ! regen=$(ninja -C "$build" build.ninja 2>&1); then
  echo "$regen" >&2
  fail "meson could not bring $build up to date (see above)"
fi
meson compile -C "$build" "${targets[@]}" || fail "the build failed (the error is above)"

if [ -n "$gpu" ]; then
  say "running the demo on the GPU ($gpu)"
else
  say "no GPU here: running the demo on the CUDA test doubles (test/fake_cuda), so device work is simulated"
  export LD_LIBRARY_PATH="$build/test/fake_cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
"$build/scripts/nbprof" --out "$out" --overwrite 1 -- "$build/scripts/nb-demo" || fail "the demo failed (see above)"

nbprof=$build/scripts/nbprof
[ "${nbprof#"$PWD"/}" != "$nbprof" ] && nbprof=${nbprof#"$PWD"/}
cat >&2 <<EOF

nb demo: done. Open what it wrote:
  $out.trace.json.gz: the timeline (host calls on their threads, kernels, copies
    and sets on their streams, an arrow from each call to its work)
      https://ui.perfetto.dev, "Open trace file"; or chrome://tracing, "Load"
  $out.memory.pickle: every device allocation and free, with its stack
      https://pytorch.org/memory_viz, drop the file on the page; or, with PyTorch:
      python -m torch.cuda._memory_viz trace_plot $out.memory.pickle -o $out.memory.html
      or what it says (peak, sawtooth, leak, fragmentation): $nbprof report $out
  $out.table.txt: the ranking table printed above, every row
      less $out.table.txt; or again from the trace: $nbprof stats $out
EOF
