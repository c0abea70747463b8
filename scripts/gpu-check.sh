#!/usr/bin/env bash
# GPU check: on a machine with an NVIDIA GPU, build gpulaunch with CUDA, run the gpu tests, time the
# fused kernels against a device-to-device copy and run a one-rank NCCL allreduce. Prints Markdown
# to paste into benchmarks/RESULTS.md.
#
# usage: scripts/gpu-check.sh [--build DIR] [--mib N] [--werror]
#   --build DIR  build folder (default: <repo>/build-gpu)
#   --mib N      MiB of fp32 gradients for the kernel benchmark (default 512)
#   --werror     configure with -DGPULAUNCH_WERROR=ON, as CI does
# exit status: 0 all checks passed; 1 a build or correctness check failed; 2 no GPU here;
#              3 the tools to build are missing and could not be installed.
# Needs nothing from the network except Debian packages (through scripts/install-deps.sh, when a
# build tool is missing and that script exists).
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build-gpu"
MIB=512
WERROR=OFF
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --mib) MIB=$2; shift 2 ;;
    --werror) WERROR=ON; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
export PATH="/usr/local/cuda/bin:$PATH"
JOBS=$(nproc 2>/dev/null || echo 4)
LOG="$BUILD/gpu-check-logs"
FAILED=()   # names of failed checks: the exit status is 1 when any
declare -A RESULT

note() { printf '%s\n' "$*"; }
# Run a command, show its output in a fenced block, record pass/fail under a name.
# usage: step NAME TIMEOUT_S cmd args...
step() {
  local name=$1 limit=$2 rc
  shift 2
  note ""
  note '```'
  note "\$ $*"
  timeout "$limit" "$@" 2>&1 | tee "$LOG/$name.log"
  rc=${PIPESTATUS[0]}
  note '```'
  [ "$rc" -eq 124 ] && note "(timed out after ${limit}s)"
  return "$rc"
}
pass() { RESULT[$1]="pass${2:+ ($2)}"; }
fail() { RESULT[$1]="**FAIL**${2:+ ($2)}"; FAILED+=("$1"); }

# ---- 0. Is there a GPU at all? ----
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu-check: no GPU: nvidia-smi is not installed (no NVIDIA driver on this machine)" >&2
  exit 2
fi
if ! nvidia-smi -L >/dev/null 2>&1 || [ -z "$(nvidia-smi -L 2>/dev/null)" ]; then
  echo "gpu-check: no GPU: nvidia-smi finds no device: $(nvidia-smi -L 2>&1 | head -1)" >&2
  exit 2
fi
mkdir -p "$LOG"

note "## GPU check ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
note ""
note "- host: $(hostname), $(nproc) CPUs, $(uname -sr)"
note "- commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with local changes)')"
note "- command: scripts/gpu-check.sh --mib $MIB$([ "$WERROR" = ON ] && echo ' --werror')"
note ""
note "### nvidia-smi"
step nvidia-smi 60 nvidia-smi
step nvidia-smi-q 60 nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm,clocks.max.memory --format=csv
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
if command -v nvcc >/dev/null 2>&1; then
  step nvcc 30 nvcc --version
fi

# ---- 1. Tools, then build with CUDA ----
need_deps() {
  command -v cmake >/dev/null && command -v nvcc >/dev/null && command -v mpicc >/dev/null &&
    pkg-config --exists cmocka hwloc libuv inih libcjson 2>/dev/null
}
if ! need_deps; then
  if [ -x "$ROOT/scripts/install-deps.sh" ] || [ -f "$ROOT/scripts/install-deps.sh" ]; then
    note ""
    note "### installing build dependencies (scripts/install-deps.sh)"
    step install-deps 1200 bash "$ROOT/scripts/install-deps.sh" || true
  fi
  if ! need_deps; then
    echo "gpu-check: missing build tools (need cmake, nvcc in /usr/local/cuda/bin, mpicc, and" \
         "pkg-config modules cmocka hwloc libuv inih libcjson)" >&2
    exit 3
  fi
fi

note ""
note "### build (CUDA on)"
if step configure 600 cmake -S "$ROOT" -B "$BUILD" -DGPULAUNCH_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
     -DGPULAUNCH_WERROR="$WERROR"; then
  pass configure
else
  fail configure "see $LOG/configure.log"
fi
if [ -z "${RESULT[configure]##pass*}" ]; then
  # everything; if some other part does not build, still build what the kernel checks need
  if step build 1800 cmake --build "$BUILD" -j "$JOBS"; then
    pass build
  else
    fail build "see $LOG/build.log"
    step build-kernels 900 cmake --build "$BUILD" -j "$JOBS" --target test_kernels test_kernels_gpu \
      fatbin_list bench_kernels || true
  fi
fi

# ---- 2. The kernels really carry SASS for sm_80, sm_90 and this GPU ----
note ""
note "### GPU code in the build"
LIB="$BUILD/kernels/libgpl_kernels.a"
WANT="sm_80,sm_90"
[ -n "$CC" ] && case ",$WANT," in *",sm_$CC,"*) ;; *) WANT="$WANT,sm_$CC" ;; esac
if [ -x "$BUILD/tests/kernels/fatbin_list" ] && [ -f "$LIB" ]; then
  if step sass 60 "$BUILD/tests/kernels/fatbin_list" "$LIB" "$WANT"; then pass sass "$WANT"; else fail sass "$WANT"; fi
else
  fail sass "fatbin_list or $LIB not built"
fi
if command -v cuobjdump >/dev/null 2>&1 && [ -f "$LIB" ]; then
  step cuobjdump 60 cuobjdump --list-elf "$LIB" || true
fi

# ---- 3. Correctness: the gpu tests (a skip here means the GPU was not usable: a failure) ----
note ""
note "### gpu tests"
if [ -d "$BUILD" ] && step ctest-gpu 1200 ctest --test-dir "$BUILD" -L gpu --output-on-failure; then
  if grep -Eq 'Skipped|Not Run' "$LOG/ctest-gpu.log"; then
    fail gpu-tests "skipped: CUDA device not usable by the tests"
  elif grep -q 'No tests were found' "$LOG/ctest-gpu.log"; then
    fail gpu-tests "no gpu tests in the build"
  else
    pass gpu-tests "$(grep -Eo '[0-9]+% tests passed.*' "$LOG/ctest-gpu.log" | head -1)"
  fi
else
  fail gpu-tests "see $LOG/ctest-gpu.log"
fi
note ""
note "### unit tests of the kernels (C reference, SASS check)"
if [ -d "$BUILD" ] && step ctest-kernels 600 ctest --test-dir "$BUILD" -L unit -R 'kernels' --output-on-failure; then
  pass kernel-unit-tests
else
  fail kernel-unit-tests "see $LOG/ctest-kernels.log"
fi

# ---- 4. Performance: pack/unpack vs device-to-device copy (goal >= 0.85) ----
note ""
note "### fused pack/unpack vs cudaMemcpy device-to-device (goal: pack+unpack >= 0.85 of the copy)"
BENCH="$BUILD/benchmarks/bench_kernels"
if [ -x "$BENCH" ]; then
  if step bench-kernels 600 "$BENCH" --gpu-only --mib "$MIB" --reps 20; then
    worst=$(grep -F '**pack+unpack**' "$LOG/bench-kernels.log" | awk -F'|' '{gsub(/ /,"",$7); print $7}' | sort -n | head -1)
    pass bench-kernels "worst pack+unpack ratio ${worst:-?}"
  else
    fail bench-kernels "bench_kernels --gpu failed"
  fi
  step bench-kernels-cpu 600 "$BENCH" --mib 256 --reps 7 || true
else
  fail bench-kernels "$BENCH not built"
fi

# ---- 5. One-rank NCCL allreduce through gpulaunch bench ----
note ""
note "### one-rank NCCL allreduce (gpulaunch bench)"
GPL="$BUILD/launcher/gpulaunch"
if [ -x "$GPL" ]; then
  if step nccl-bench 600 "$GPL" bench --backend nccl -b 1M -e 256M -f 4; then
    if grep -qi 'allreduce' "$LOG/nccl-bench.log"; then
      pass nccl-allreduce
    else
      RESULT[nccl-allreduce]="ran, but printed no allreduce results"
    fi
  else
    fail nccl-allreduce "see $LOG/nccl-bench.log"
  fi
else
  note ""
  note "gpulaunch is not built ($GPL): NCCL allreduce not run."
  RESULT[nccl-allreduce]="not run (gpulaunch not built)"
fi

# ---- summary ----
note ""
note "### summary"
note ""
note "| check | result |"
note "|---|---|"
for k in configure build sass gpu-tests kernel-unit-tests bench-kernels nccl-allreduce; do
  [ -n "${RESULT[$k]:-}" ] && note "| $k | ${RESULT[$k]} |"
done
if [ ${#FAILED[@]} -gt 0 ]; then
  note ""
  note "gpu-check: FAILED: ${FAILED[*]} (logs in $LOG)"
  exit 1
fi
note ""
note "gpu-check: all checks passed (logs in $LOG)"
exit 0
