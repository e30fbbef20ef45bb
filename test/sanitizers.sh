#!/usr/bin/env bash
# The test suite under sanitizers, in two builds of their own:
#
#   build-asan/  -Db_sanitize=address,undefined: the whole suite (fake CUDA
#                smoke tests, unit tests, integration tests).
#   build-tsan/  -Db_sanitize=thread: the unit tests of the transport and the
#                session (TSAN_UNIT_TAGS: rings and thread registry, frame
#                ring and stack table, the session's memory and join glue)
#                and the integration tests where the collector thread drains
#                what other threads record (TSAN_INTEGRATION_TAGS: 16 threads,
#                full rings, CUPTI's buffers, windows and SIGUSR2, exit
#                signals, fork).
#
# Ends with one line "N passed, M failed": test cases summed over both builds
# by test/tools/summarize.py; a build that fails counts as one failure.
# Usage: bash test/sanitizers.sh [asan|tsan]   (default: both)
#
# Both builds are -O0 (buildtype=debug): with the sanitizers, -O2 compiles
# several times slower (Catch2's main: 86 s against 16 s), and no test needs
# it (the programs and the Python probe set their own -O).
#
# The preloaded shim and the sanitizer's runtime: the runtime must be loaded
# before a sanitized library, and programs not built here (python3, /bin/sh)
# do not load it themselves. NB_TEST_PRELOAD_FIRST names it, and
# test/support/test_support.cpp puts it first in every child's non-empty
# LD_PRELOAD. nbprof puts its shim before what LD_PRELOAD had, hence
# verify_asan_link_order=0 (safe: the shim defines no allocator functions).
#
# Leaks: LeakSanitizer checks the unit tests and every program the
# integration tests run with the shim. Two exceptions, in lsan.supp:
# allocations made through /usr/bin/* (bash, python3: the pyenv shim and
# nbprof are bash scripts) and libpython3, which free nothing at exit on
# purpose; they are not nb's.
#
# Left out, and why:
#   ASan + UBSan: nothing.
#   TSan, unit tests: all but TSAN_UNIT_TAGS (options, formats, symbolizer,
#     census, schedule, ...): no threads there.
#   TSan, integration tests: all but TSAN_INTEGRATION_TAGS: [python] (an
#     uninstrumented interpreter; and bash, which pyenv's python3 is, crashes
#     with libtsan preloaded), [shell] (programs started through bash),
#     [no-tsan] (a signal handler that re-raises: TSan defers handlers and
#     emulates dispositions, so the re-raise is not a real process's), [nbprof] and [hygiene] (shell scripts, nm,
#     readelf), [memory] (stacks; the rest is the single-threaded snapshot),
#     and the single-threaded [lifecycle] and [hostile] cases. The ASan build
#     runs them all.
#   TSan runs with NB_STACKS=none: libunwind frees its per-thread cache from
#     a pthread key destructor that it defers to the last round, after TSan
#     has torn the thread down, and TSan crashes in the lock it takes
#     (google/sanitizers#943; libunwind's and TSan's, not nb's).
#   LeakSanitizer in spawn's forked child (no exec): turned off there by
#     spawn.cpp's __lsan_is_turned_off. GCC 12's runtime does not lock its
#     allocator around fork; a child forked while nb's collector thread was
#     allocating hung in the exit leak check (about 1 run in 40 under load).
#   No TSan suppressions: nb takes no std::timed_mutex (core/lock_within.h
#     says why).
set -uo pipefail
top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
which=${1:-all}
asan_build=$top/build-asan
tsan_build=$top/build-tsan
TSAN_UNIT_TAGS='[ring],[stacks],[memory],[join]'
TSAN_INTEGRATION_TAGS='[threads],[paths],[device]~[python],[windows]~[nbprof],[signals]~[python]~[no-tsan],[reliability]~[python]~[shell]~[no-tsan]'

passed=0
failed=0
# count DIR: adds the test cases of DIR's last `meson test` to the totals.
count() {
  local line p f
  line=$(python3 "$top/test/tools/summarize.py" "$1/meson-logs/testlog.json" | tail -n 1)
  read -r p _ f _ <<<"$line"
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-1}))
}

# build DIR SANITIZERS: configures (the first time) and builds.
build() {
  if [ ! -f "$1/build.ninja" ]; then
    meson setup "$1" "$top" -Dbuildtype=debug -Db_sanitize="$2" -Db_lundef=false || return 1
  fi
  ninja -C "$1"
}

# run_tests DIR [VAR=VALUE...] [-- MESON_TEST_ARGS...]: meson test with
# those variables, two at a time, with room for the sanitizers' slowdown.
# Kernels with more than 28 bits of mmap randomness give GCC 12's TSan
# "unexpected memory mapping": it then runs without randomization.
run_tests() {
  local dir=$1 vars=() no_aslr=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  if [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)" -gt 28 ]; then
    no_aslr=(setarch "$(uname -m)" -R)
  fi
  env "${vars[@]}" "${no_aslr[@]}" meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 \
    --timeout-multiplier 3 "$@"
}

# The shared runtimes of the compiler meson uses.
asan_runtime=$(readlink -f "$("${CXX:-c++}" -print-file-name=libasan.so)")
tsan_runtime=$(readlink -f "$("${CXX:-c++}" -print-file-name=libtsan.so)")

bash "$top/scripts/install-deps.sh" || { echo "dependency installation failed"; echo "0 passed, 1 failed"; exit 1; }

if [ "$which" = all ] || [ "$which" = asan ]; then
  echo "== ASan + UBSan: $asan_build"
  if build "$asan_build" address,undefined; then
    printf '%s\n' 'leak:/usr/bin/' 'leak:libpython3' >"$asan_build/lsan.supp"
    run_tests "$asan_build" NB_TEST_PRELOAD_FIRST="$asan_runtime" \
      ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0 \
      LSAN_OPTIONS="suppressions=$asan_build/lsan.supp:print_suppressions=0" \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    count "$asan_build"
  else
    echo "ASan build failed"
    failed=$((failed + 1))
  fi
fi

if [ "$which" = all ] || [ "$which" = tsan ]; then
  echo "== TSan: $tsan_build"
  if build "$tsan_build" thread; then
    tsan_env=(NB_TEST_PRELOAD_FIRST="$tsan_runtime"
              TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1")
    run_tests "$tsan_build" "${tsan_env[@]}" -- unit --test-args "$TSAN_UNIT_TAGS"
    count "$tsan_build"
    run_tests "$tsan_build" "${tsan_env[@]}" NB_STACKS=none -- integration --test-args "$TSAN_INTEGRATION_TAGS"
    count "$tsan_build"
  else
    echo "TSan build failed"
    failed=$((failed + 1))
  fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
