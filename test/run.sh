#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs the Debian packages it
# needs, builds in build-test/, runs `meson test`, then the libFuzzer targets
# (fuzz/run.sh, clang) and the sanitizer builds (test/sanitizers.sh; skip
# them with NB_TEST_SANITIZERS=0); ends with one line "N passed, M failed" summed over
# every test case of every test program, one per fuzz target.
set -uo pipefail
top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
build=${NB_TEST_BUILD_DIR:-$top/build-test}

bash "$top/scripts/install-deps.sh" || { echo "dependency installation failed"; echo "0 passed, 1 failed"; exit 1; }
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$top" || { echo "0 passed, 1 failed"; exit 1; }
fi
ninja -C "$build" || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }

meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
status=$?
main=$(python3 "$top/test/tools/summarize.py" "$build/meson-logs/testlog.json")
summary=$?
echo "$main"
lines=("$main")

# Then the suites with their own builds: the libFuzzer targets for
# a bounded time each (NB_FUZZ_SECONDS, default 10) and the sanitizer builds.
# NB_TEST_QUICK=1 skips both (the main suite alone, for a quick check).
extra_status=0
if [ "${NB_TEST_QUICK:-0}" != 1 ]; then
  suites=("fuzz/run.sh ${NB_FUZZ_SECONDS:-10}")
  [ "${NB_TEST_SANITIZERS:-1}" != 0 ] && suites+=("test/sanitizers.sh")
  for suite in "${suites[@]}"; do
    # Through a file, not `tee /dev/stderr`: reopening stderr truncates a log
    # that stdout and stderr share (`.ci/run > log 2>&1`).
    log=$(mktemp)
    bash "$top"/$suite >"$log" 2>&1
    cat "$log"
    out=$(tail -n 1 "$log")
    rm -f "$log"
    [[ $out =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]] || { echo "$suite: no summary line" >&2; out="0 passed, 1 failed"; }
    lines+=("$out")
  done
fi
python3 - "${lines[@]}" <<'PY'
import re, sys
p = f = 0
for line in sys.argv[1:]:
    m = re.match(r"(\d+) passed, (\d+) failed$", line)
    if m:
        p += int(m.group(1)); f += int(m.group(2))
    else:
        f += 1
print(f"{p} passed, {f} failed")
sys.exit(1 if f else 0)
PY
total=$?
[ $status -eq 0 ] && [ $summary -eq 0 ] && [ $total -eq 0 ]
