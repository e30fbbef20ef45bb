#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang into build-fuzz/ and runs
# each for a bounded time over a copy of its seed corpus (the repository's
# corpus is never written to). Ends with one line "N passed, M failed", one
# per target: passed when libFuzzer exits 0 with no crash, leak, sanitizer
# report, broken invariant or timeout.
#
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]    default: 20 s, every target
#
# A failing input is saved as build-fuzz/artifacts/TARGET/crash-* (or leak-*,
# timeout-*); build-fuzz/TARGET_fuzzer FILE runs that one input again.
set -uo pipefail
top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
build=${NB_FUZZ_BUILD_DIR:-$top/build-fuzz}
seconds=${1:-20}
shift $(( $# > 0 ? 1 : 0 ))
all_targets=(options step_marker text_encoding chrome_trace pickle stack_text step_census)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
case $seconds in '' | 0 | *[!0-9]*) echo "usage: fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]"; exit 2 ;; esac

give_up() {
  echo "$1"
  echo "0 passed, ${#targets[@]} failed"
  exit 1
}

# Debian's clang carries libFuzzer; the JSON reader checks the trace writer.
cxx=${NB_FUZZ_CXX:-clang++}
need=()
command -v "$cxx" >/dev/null || need+=(clang)
# libFuzzer's runtime is a separate package on Debian (recommended by
# clang's, so installed with it unless recommends are off).
if command -v "$cxx" >/dev/null; then
  major=$("$cxx" -dumpversion | cut -d. -f1)
  [ -f "$("$cxx" -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] || need+=("libclang-rt-$major-dev")
else
  need+=(libclang-rt-14-dev)  # Debian 12's clang
fi
command -v ninja >/dev/null || need+=(ninja-build)
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  { $sudo apt-get update -qq && $sudo apt-get install -y -qq "${need[@]}"; } ||
    give_up "could not install ${need[*]} (needs root or sudo)"
fi

# nb's pure sources go into one archive, so each target links only what it uses.
nb_sources=(formats/text_encoding.cpp formats/chrome_trace.cpp formats/pickle_writer.cpp
            formats/memory_snapshot.cpp formats/stack_text.cpp formats/ranking_table.cpp
            core/options.cpp core/step_marker.cpp core/kernel_regex.cpp collector/step_census.cpp)
mkdir -p "$build"
{
  echo "cxx = $cxx"
  echo "flags = -std=c++17 -g -O1 -fno-omit-frame-pointer -Wall -Wextra -D_GLIBCXX_ASSERTIONS -I$top" \
       "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
  echo "rule cxx"
  echo "  command = \$cxx \$flags -fsanitize=fuzzer-no-link -MMD -MF \$out.d -c \$in -o \$out"
  echo "  depfile = \$out.d"
  echo "  deps = gcc"
  echo "  description = CXX \$out"
  echo "rule ar"
  echo "  command = rm -f \$out && ar rcs \$out \$in"
  echo "rule link"
  echo "  command = \$cxx \$flags -fsanitize=fuzzer \$in -o \$out"
  echo "  description = LINK \$out"
  objects=()
  for s in "${nb_sources[@]}"; do
    echo "build obj/${s%.cpp}.o: cxx $top/$s"
    objects+=("obj/${s%.cpp}.o")
  done
  echo "build libnb_fuzz.a: ar ${objects[*]}"
  for t in "${all_targets[@]}"; do
    echo "build obj/fuzz/${t}_fuzzer.o: cxx $top/fuzz/${t}_fuzzer.cpp"
    echo "build ${t}_fuzzer: link obj/fuzz/${t}_fuzzer.o libnb_fuzz.a"
  done
} > "$build/build.ninja.new"
mv "$build/build.ninja.new" "$build/build.ninja"
binaries=()
for t in "${targets[@]}"; do binaries+=("${t}_fuzzer"); done
ninja -C "$build" "${binaries[@]}" || give_up "build failed"

passed=0
failed=0
mkdir -p "$build/logs"
for t in "${targets[@]}"; do
  work=$(mktemp -d)
  [ -d "$top/fuzz/corpus/$t" ] && cp -r "$top/fuzz/corpus/$t/." "$work/"
  rm -rf "$build/artifacts/$t"
  mkdir -p "$build/artifacts/$t"
  log="$build/logs/$t.log"
  start=$SECONDS
  # -timeout: one input taking this long is a failure (a hang); the outer
  # timeout only guards against libFuzzer itself not stopping.
  timeout $((seconds + 120)) "$build/${t}_fuzzer" -max_total_time="$seconds" -timeout=25 \
    -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$build/artifacts/$t/" "$work" > "$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    echo "PASS $t: ${runs:-?} runs in $((SECONDS - start)) s, $(find "$work" -type f | wc -l) corpus inputs"
  else
    failed=$((failed + 1))
    echo "FAIL $t (exit $rc) after $((SECONDS - start)) s; log: $log"
    { grep -m1 -A1 "^fuzz check failed" "$log" ||
        grep -m2 -E "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|terminate called|what\(\)" "$log"; } |
      cut -c1-300 | sed 's/^/  /'
    for a in "$build/artifacts/$t"/*; do [ -e "$a" ] && echo "  input: $a (run: $build/${t}_fuzzer $a)"; done
  fi
  rm -rf "$work"
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
