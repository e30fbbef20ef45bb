#!/usr/bin/env bash
# The main job on a fresh machine: build nb (installing its Debian packages if
# needed), then run the bundled demo program under nbprof. With a GPU the demo
# runs on it; without one it runs on the CUDA test doubles and says so.
#
#   bash scripts/demo.sh [OUTPUT_PREFIX]      default: nb-demo (in the current directory)
set -euo pipefail
top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
build=${NB_BUILD_DIR:-$top/build}
out=${1:-nb-demo}

if ! command -v meson >/dev/null || ! command -v ninja >/dev/null; then
  bash "$top/scripts/install-deps.sh"
fi
[ -f "$build/build.ninja" ] || meson setup "$build" "$top" >/dev/null
ninja -C "$build" >/dev/null

if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' && nvidia-smi -L >/dev/null 2>&1; then
  echo "nb demo: running on the GPU ($(nvidia-smi -L | head -n 1))" >&2
else
  echo "nb demo: no GPU here: running on the CUDA test doubles (test/fake_cuda), so device work is simulated" >&2
  export LD_LIBRARY_PATH="$build/test/fake_cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
exec "$build/scripts/nbprof" --out "$out" --overwrite 1 -- "$build/scripts/nb-demo"
