# shellcheck shell=bash disable=SC2034 # RC, TESTS_RUN and FAILED are for the scripts that source this
# The one helper library of the script tests (tests/README.md): assertions that print both sides,
# mpirun with the test settings, a scratch folder removed at exit; and for the tests over
# network-namespace hosts, the harness (netns/netns.sh) and the watchers of their jobs.
set -euo pipefail

: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
MPIEXEC="${MPIEXEC:-mpirun}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
T="$(mktemp -d /tmp/gpltest.XXXXXX)"
GPL_SCRATCH=$T # removed at exit even where a test points T elsewhere (a netns test's NETNS_DIR)
trap 'rm -rf "$T" "$GPL_SCRATCH"' EXIT
TESTS_RUN=0
FAILED=0

# fail MESSAGE: "FAIL: MESSAGE" and what explains it (fail_context) on stderr; exit 1. The only
# fail of the script tests: a script that has more to show redefines fail_context.
fail() {
  echo "FAIL: $*" >&2
  fail_context >&2 || true
  exit 1
}
# bad MESSAGE: the same report, but the test goes on to its other checks and fails at its end,
# which is `exit "$FAILED"` (the netns tests: each of their jobs takes a while).
bad() {
  echo "FAIL: $*" >&2
  fail_context >&2 || true
  FAILED=1
}
# The end of the last run's output ($T/out, $T/err: run_mpi, run_one; netns_run's in
# $NETNS_DIR), where there is one; then the files a test names in FAIL_SHOW (space-separated, a
# report the run wrote: a chance failure's evidence is gone with $T once the test ends), only
# their lines matching FAIL_SHOW_GREP where it is set.
fail_context() {
  local f
  for f in "$T"/out "$T"/err; do
    [[ -f "$f" ]] && { echo "---- ${f##*/}:"; tail -n 40 "$f"; }
  done
  for f in ${FAIL_SHOW:-}; do
    [[ -f "$f" ]] && { echo "---- $f:"; grep -E -- "${FAIL_SHOW_GREP:-.}" "$f" | tail -n 80; }
  done
  if [[ -n ${NETNS_DIR:-} && $NETNS_DIR != "$T" ]]; then
    for f in "$NETNS_DIR"/out "$NETNS_DIR"/err; do
      [[ -f "$f" ]] && { echo "---- ${f##*/}:"; tail -n 40 "$f"; }
    done
  fi
  return 0
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
# wait_cmd SECONDS CMD...: until CMD succeeds (every 0.1 s, up to SECONDS); 1 if not.
wait_cmd() {
  local s=$1 i
  shift
  for ((i = 0; i < s * 10; i++)); do "$@" && return 0; sleep 0.1; done
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
# torch_python: PY = a Python that has PyTorch with torch.distributed (Debian's python3-torch is
# for /usr/bin/python3); 1 (PY empty) where there is none.
torch_python() {
  local p
  PY=""
  for p in /usr/bin/python3 python3; do
    if "$p" -c 'import torch.distributed as d, sys; sys.exit(0 if d.is_available() else 1)' 2>/dev/null; then
      PY=$(command -v "$p")
      return 0
    fi
  done
  return 1
}
# need_torch_python: torch_python, or the test is skipped (exit 77).
need_torch_python() {
  torch_python && return 0
  echo "SKIP: no Python with PyTorch (scripts/install-deps.sh installs Debian's python3-torch)"
  exit 77
}

# ---- Tests over network-namespace hosts (tests/netns/netns.sh) ----

# netns_begin: the harness sourced and required (exit 77 = skip without network namespaces), no
# inherited NCCL_SOCKET_IFNAME. Then netns_setup N makes the hosts (and T=$NETNS_DIR, usually).
netns_begin() {
  unset NCCL_SOCKET_IFNAME
  # shellcheck source=/dev/null # the harness, beside this file
  . "$(dirname "${BASH_SOURCE[0]}")/netns/netns.sh"
  netns_require
}

# Watching a job of the test program ($PROG, the script's) and gpulaunch ($GPULAUNCH) in our
# namespaces; a script that starts its job in the background writes "$T/done" when it ends.
# ours: how many gpulaunch and test programs are still alive, by executable.
ours() {
  local h p n=0 exe
  for h in "${NETNS_HOSTS[@]}"; do
    for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do
      exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
      [ "$exe" = "$(readlink -f "$GPULAUNCH")" ] || [ "$exe" = "$(readlink -f "$PROG")" ] && n=$((n + 1))
    done
  done
  echo "$n"
}
# running_progs: how many test programs of the job run (`$PROG sleep ...`).
running_progs() {
  local h p n=0
  for h in "${NETNS_HOSTS[@]}"; do
    for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do
      grep -qa "sleep" "/proc/$p/cmdline" 2>/dev/null && [ "$(readlink "/proc/$p/exe")" = "$(readlink -f "$PROG")" ] &&
        n=$((n + 1))
    done
  done
  echo "$n"
}
# wait_gone SECONDS: prints the seconds from now until all of ours are gone (999 if not within).
wait_gone() {
  local t0 i
  t0=$(date +%s.%N)
  for ((i = 0; i < $1 * 10; i++)); do
    [ "$(ours)" = 0 ] && { echo "$(date +%s.%N) - $t0" | bc; return; }
    sleep 0.1
  done
  echo 999
}
# wait_done SECONDS: until "$T/done" exists; 1 if not within.
wait_done() { for ((i = 0; i < $1 * 10; i++)); do [ -f "$T/done" ] && return 0; sleep 0.1; done; return 1; }
