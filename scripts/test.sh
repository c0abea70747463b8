#!/usr/bin/env bash
# The whole test suite: install what is missing, build with warnings as errors (with CUDA when the
# toolkit is at /usr/local/cuda), run every test with CTest; then build without CUDA and run the
# tests again there (all but the multi-host ones, whose code is the same in both builds); then
# every fuzzer for a short time (a clang build of its own).
# Usage: scripts/test.sh [--sanitize] [--fuzz SECONDS] [ctest args...]
#   --sanitize       build with AddressSanitizer + UndefinedBehaviorSanitizer instead (no fuzzers)
#   --fuzz SECONDS   only the fuzzers, each for SECONDS (libFuzzer, ASan + UBSan); any finding
#                    fails, its reproducer is kept in build-fuzz/fuzz-findings/
# With ctest arguments (e.g. -R pattern) the default run leaves the fuzzers out.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/install-deps.sh" --with-browser
# shellcheck source=scripts/env.sh
source "$here/env.sh"

# Each fuzzer this long in the default run: 11 harnesses in about 170 s.
default_fuzz_seconds=15

run_fuzzers() {
  local secs="$1" dir="$GPL_ROOT/build-fuzz"
  echo "== fuzzers (clang, libFuzzer + ASan + UBSan), ${secs}s each, in $dir"
  "$here/build.sh" "$dir" -DCMAKE_C_COMPILER=clang-14 -DGPULAUNCH_FUZZ=ON \
    -DGPULAUNCH_FUZZ_SECONDS="$secs"
  (cd "$dir" && ctest --output-on-failure -L fuzz)
}

if [[ "${1:-}" == "--fuzz" ]]; then
  secs="${2:?--fuzz needs the seconds each fuzzer runs}"
  [[ $secs =~ ^[0-9]+$ && $secs -gt 0 ]] || { echo "test.sh: --fuzz SECONDS: a whole number > 0" >&2; exit 64; }
  run_fuzzers "$secs"
  exit 0
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
"$here/build.sh" "$dir" -DGPULAUNCH_WERROR=ON "${san[@]}"
echo "== tests"
(cd "$dir" && ctest --output-on-failure --timeout 600 "$@")
if [[ ${#san[@]} -eq 0 ]]; then
  # A machine with no CUDA at all must build and pass too: the GPU features then say "not built
  # with CUDA". The multi-host (network namespace) tests and the PyTorch ones (gloo on the CPU,
  # minutes each) run the same code in both builds and are not repeated.
  echo "== build and tests without CUDA"
  "$here/build.sh" "$GPL_ROOT/build-nocuda" -DGPULAUNCH_WERROR=ON -DGPULAUNCH_CUDA=OFF -DGPULAUNCH_TESTS=ON
  (cd "$GPL_ROOT/build-nocuda" && ctest --output-on-failure --timeout 600 -LE 'multinode|torch' "$@")
  if [[ $# -eq 0 ]]; then
    run_fuzzers "$default_fuzz_seconds"
  fi
fi
