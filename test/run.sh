#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs the Debian packages it
# needs, builds in build-test/, runs `meson test`, and ends with one line
# "N passed, M failed" summed over every test case of every test program.
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
python3 "$top/test/tools/summarize.py" "$build/meson-logs/testlog.json"
summary=$?
[ $status -eq 0 ] && [ $summary -eq 0 ]
