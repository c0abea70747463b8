# shellcheck shell=bash disable=SC2034 # RC and TESTS_RUN are for the scripts that source this
# Helpers for the script tests: assertions that print both sides, mpirun with the test settings,
# a scratch folder removed at exit.
set -euo pipefail

: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
MPIEXEC="${MPIEXEC:-mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
T="$(mktemp -d /tmp/gpltest.XXXXXX)"
trap 'rm -rf "$T"' EXIT
TESTS_RUN=0

# fail MESSAGE: "FAIL: MESSAGE" and what explains it (fail_context) on stderr; exit 1. The only
# fail of the script tests: a script that has more to show redefines fail_context.
fail() {
  echo "FAIL: $*" >&2
  fail_context >&2 || true
  exit 1
}
# The end of the last run's output ($T/out, $T/err: run_mpi, run_one), where there is one.
fail_context() {
  local f
  for f in "$T"/out "$T"/err; do
    [[ -f "$f" ]] && { echo "---- ${f##*/}:"; tail -n 40 "$f"; }
  done
}
pass() { echo "ok - $*"; TESTS_RUN=$((TESTS_RUN + 1)); }
assert_eq() { [[ "$1" == "$2" ]] || fail "$3: expected '$2', got '$1'"; }
assert_le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }' || fail "$3: expected $1 <= $2"; }
assert_grep() { grep -qE -- "$2" "$1" || fail "$3: no line matching '$2' in ${1##*/}"; }
assert_nogrep() { ! grep -qE -- "$2" "$1" || fail "$3: unexpected line matching '$2' in ${1##*/}"; }
now() { date +%s.%N; }
# elapsed T0 [END]: seconds from T0 to END (default: now), both as now prints them; 2 decimals.
elapsed() { awk -v a="$1" -v b="${2:-$(now)}" 'BEGIN { printf "%.2f", b - a }'; }
# wait_for PATH [SECONDS]: until PATH exists (every 0.1 s, up to SECONDS, default 10); 1 if not.
wait_for() {
  local i
  for ((i = 0; i < ${2:-10} * 10; i++)); do
    [[ -e $1 ]] && return 0
    sleep 0.1
  done
  return 1
}

# run_mpi NP ARGS...: mpirun -np NP ARGS; stdout in $T/out, stderr in $T/err, status in $RC.
run_mpi() {
  local np="$1"
  shift
  set +e
  "$MPIEXEC" -np "$np" --oversubscribe --bind-to none "$@" >"$T/out" 2>"$T/err"
  RC=$?
  set -e
}
# run_one ARGS...: a command without mpirun, same capture.
run_one() {
  set +e
  "$@" >"$T/out" 2>"$T/err"
  RC=$?
  set -e
}

# signal_job SIG: send SIG to the background job $JOB and wait for it; its status in $RC and the
# time the signal was sent in $t0 (for elapsed).
signal_job() {
  t0=$(now)
  kill "-$1" "$JOB"
  set +e
  wait "$JOB"
  RC=$?
  set -e
}
# need_torch_python: PY = a Python that has PyTorch with torch.distributed (Debian's python3-torch
# is for /usr/bin/python3), or the test is skipped (exit 77).
need_torch_python() {
  local p
  PY=""
  for p in /usr/bin/python3 python3; do
    if "$p" -c 'import torch.distributed as d, sys; sys.exit(0 if d.is_available() else 1)' 2>/dev/null; then
      PY=$(command -v "$p")
      return 0
    fi
  done
  echo "SKIP: no Python with PyTorch (scripts/install-deps.sh installs Debian's python3-torch)"
  exit 77
}
