#!/usr/bin/env bash
# Collects what the GPU machine needs from a build here into .carry/ (git-
# ignored; name it in the device tool's `carry`), in the build tree's layout
# so nbprof finds the shim next to it. Also builds the nvcc test binary.
#
#   bash bench/make_carry.sh [BUILD_DIR]
set -euo pipefail
top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
build=${1:-$top/build}
c=$top/.carry
rm -rf "$c"
mkdir -p "$c/shim" "$c/collector" "$c/scripts" "$c/bench" "$c/test/fake_cuda" "$c/test/programs"
cp "$build/shim/libnb_shim.so" "$c/shim/"
cp -a "$build/shim/nb-libs" "$c/shim/"
cp "$build/collector/nb-options" "$c/collector/"
cp "$build/scripts/nbprof" "$build/scripts/nb-demo" "$c/scripts/"
cp "$build/bench/nb-bench-launch" "$build/bench/nb-bench-clock" "$c/bench/"
cp -a "$build"/test/fake_cuda/lib*.so* "$c/test/fake_cuda/"
cp "$build/test/programs/libpy_frames_probe.so" "$c/test/programs/"  # py_frames_check.py, bench/workloads/stack_cold.py
nvcc -O2 -arch=sm_90 -o "$c/bench/cublas_static" "$top/bench/workloads/cublas_static.cu" -lcublas
gcc -O2 -shared -fPIC -I/usr/local/cuda/include -o "$c/bench/libnbb_cupti_floor.so" "$top/bench/workloads/cupti_floor.c" -L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64
nvcc -O2 -arch=sm_90 -o "$c/bench/launch_loop" "$top/bench/workloads/launch_loop.cu" -L"$c/bench" -lnbb_cupti_floor -Xlinker -rpath,'$ORIGIN:/usr/local/cuda/lib64' -L/usr/local/cuda/lib64 -lcupti
nvcc -g -O1 -arch=sm_90 -o "$c/bench/leak" "$top/bench/workloads/leak.cu"
nvcc -O2 -arch=sm_90 -o "$c/bench/threads_join" "$top/bench/workloads/threads_join.cu"
nvcc -O2 -arch=sm_90 -o "$c/bench/graph_join" "$top/bench/workloads/graph_join.cu"
grep -qx '/.carry/' "$top/.git/info/exclude" 2>/dev/null || echo '/.carry/' >>"$top/.git/info/exclude"
du -sh "$c"
