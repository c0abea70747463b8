#!/usr/bin/env bash
# The whole test suite: install what is missing, build with warnings as errors (with CUDA when the
# toolkit is at /usr/local/cuda), run every test with CTest; then build without CUDA and run there
# the tests of the code that differs without CUDA (label cudadiff, tests/CMakeLists.txt); then
# every fuzzer for a short time (a clang build of its own). CTest runs tests side by side
# (ctest -j 4, each test taking the slots its kind needs: tests/CMakeLists.txt). At the end: the 10 slowest tests, the sum of the tests'
# times and the wall clock of each part (scripts/test-times.sh; --times-doc also writes the whole
# table into docs/testing.md), then why each failed test failed (scripts/test-failures.sh).
# Usage: scripts/test.sh [--sanitize] [--fuzz SECONDS] [--times-doc] [ctest args...]
#   --sanitize       build with AddressSanitizer + UndefinedBehaviorSanitizer instead (no fuzzers)
#   --fuzz SECONDS   only the fuzzers, each for SECONDS (libFuzzer, ASan + UBSan); any finding
#                    fails, its reproducer is kept in build-fuzz/fuzz-findings/
#   --times-doc      after a full run, the per-test times into docs/testing.md
# With ctest arguments (e.g. -R pattern) the default run leaves the fuzzers out.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/install-deps.sh" --with-browser
# shellcheck source=scripts/env.sh
source "$here/env.sh"

# Each fuzzer this long in the default run (GPL_JOBS of them at a time: each keeps a core busy).
default_fuzz_seconds=3
# Tests side by side in 4 slots: a test takes 1 (LIGHT), 2 (PARALLEL), 3 (the rest) or all
# (ALONE) of them (tests/CMakeLists.txt, "Where and how each test runs").
jobs=4
t_start=$(date +%s)
parts=()
part() { # NAME START: the wall clock of one part, for the end
  parts+=("$(printf '%-28s %5d s' "$1" $(($(date +%s) - $2)))")
}
builds=() # the build folders whose CTest runs the end sums up
summary() { # at the end, failed or not: the slowest tests, the sums, the parts' wall clocks
  [[ ${#builds[@]} -gt 0 ]] || return 0
  echo "== the 10 slowest tests (scripts/test-times.sh ${builds[*]##*/}; CTest's own times)"
  "$here/test-times.sh" --top 10 "${builds[@]}" || true
  printf '%s\n' "${parts[@]}"
  printf '%-28s %5d s\n' "scripts/test.sh in all" $(($(date +%s) - t_start))
  "$here/test-failures.sh" "${builds[@]}" || true # last: a long log's tail names each cause
}
trap summary EXIT

run_fuzzers() {
  local secs="$1" dir="$GPL_ROOT/build-fuzz"
  echo "== fuzzers (clang, libFuzzer + ASan + UBSan), ${secs}s each, in $dir"
  local t0
  t0=$(date +%s)
  "$here/build.sh" "$dir" -DCMAKE_C_COMPILER=clang-14 -DGPULAUNCH_FUZZ=ON \
    -DGPULAUNCH_FUZZ_SECONDS="$secs"
  part "build (fuzz)" "$t0"
  t0=$(date +%s)
  builds+=("$dir")
  (cd "$dir" && ctest --output-on-failure -j "$GPL_JOBS" -L fuzz)
  part "fuzzers" "$t0"
}

if [[ "${1:-}" == "--fuzz" ]]; then
  secs="${2:?--fuzz needs the seconds each fuzzer runs}"
  [[ $secs =~ ^[0-9]+$ && $secs -gt 0 ]] || { echo "test.sh: --fuzz SECONDS: a whole number > 0" >&2; exit 64; }
  run_fuzzers "$secs"
  exit 0
fi
times_doc=0
if [[ "${1:-}" == "--times-doc" ]]; then
  times_doc=1
  shift
fi

san=()
dir="$GPL_ROOT/build-test"
if [[ "${1:-}" == "--sanitize" ]]; then
  shift
  san=(-DGPULAUNCH_ASAN=ON -DGPULAUNCH_UBSAN=ON)
  dir="$GPL_ROOT/build-sanitize"
  # Open MPI's own allocations are not ours to fix.
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi

echo "== build (CUDA if available, -Werror) in $dir"
t0=$(date +%s)
"$here/build.sh" "$dir" -DGPULAUNCH_WERROR=ON "${san[@]}"
part "build" "$t0"
echo "== tests"
t0=$(date +%s)
builds+=("$dir")
(cd "$dir" && ctest --output-on-failure --timeout 600 -j "$jobs" "$@")
part "tests" "$t0"
if [[ ${#san[@]} -eq 0 ]]; then
  # A machine with no CUDA at all must build and pass too: the GPU features then say "not built
  # with CUDA". Only the tests of what differs there run again (label cudadiff: comm's NCCL
  # backend or its stub, the kernels, bench's timer, the installed library, and the tests that
  # need CUDA, NCCL or a GPU, which say why they skip); every other test ran the same code above.
  echo "== build and tests without CUDA (label cudadiff)"
  t0=$(date +%s)
  "$here/build.sh" "$GPL_ROOT/build-nocuda" -DGPULAUNCH_WERROR=ON -DGPULAUNCH_CUDA=OFF -DGPULAUNCH_TESTS=ON
  part "build without CUDA" "$t0"
  t0=$(date +%s)
  builds+=("$GPL_ROOT/build-nocuda")
  (cd "$GPL_ROOT/build-nocuda" && ctest --output-on-failure --timeout 600 -j "$jobs" -L cudadiff "$@")
  part "tests without CUDA" "$t0"
  if [[ $# -eq 0 ]]; then
    run_fuzzers "$default_fuzz_seconds"
  fi
fi
if ((times_doc)); then
  "$here/test-times.sh" --doc "${builds[@]}"
fi
