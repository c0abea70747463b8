#!/usr/bin/env bash
# Every mode of a job of one started alone (no mpirun) runs without MPI: MPI_Init is trapped
# (tests/launcher/modes/mpi_init_trap.c, LD_PRELOAD: status 99 and a message if it is ever
# called), no launcher variable is set, and each mode must still do its job within a bounded time.
# usage: test_alone.sh TRAP.so TESTPROG MPI_PROGRAM
source "$(dirname "$0")/../../lib.sh"
TRAP="$1"
PROG="$2"
MPI_MINIMAL="$3"
SRC="${GPULAUNCH_SOURCE_DIR:?}"
unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMIX_RANK PMI_RANK PMI_SIZE SLURM_PROCID
export GPULAUNCH_TIMEOUT=20
# Under ASan (scripts/test.sh --sanitize) the trap is preloaded ahead of the ASan runtime: allowed.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# alone MAXSECONDS ARGS...: run gpulaunch alone with MPI_Init trapped.
alone() {
  local limit="$1"
  shift
  set +e
  LD_PRELOAD="$TRAP" timeout "$limit" "$GPULAUNCH" "$@" >"$T/out" 2>"$T/err"
  RC=$?
  set -e
  assert_nogrep "$T/err" "mpi_init_trap" "gpulaunch $* called MPI_Init"
  [[ $RC -ne 124 ]] || fail "gpulaunch $* did not end within ${limit}s"
}

# The trap itself works: a program that calls MPI_Init is stopped with its message.
set +e
LD_PRELOAD="$TRAP" "$MPI_MINIMAL" >"$T/out" 2>"$T/err"
RC=$?
set -e
assert_eq "$RC" 99 "the trap stops a program that calls MPI_Init"
assert_grep "$T/err" "mpi_init_trap: MPI_Init" "the trap's message"
pass "the MPI_Init trap catches a call"

alone 60 "$SRC/examples/train.conf" --summary "$T/sum.json"
assert_eq "$RC" 0 "built-in trainer alone"
assert_grep "$T/sum.json" '"final_loss"' "trainer summary"
assert_grep "$T/sum.json" '"ranks":[[:space:]]*1' "one rank"
pass "run (built-in trainer) alone, no MPI_Init"

alone 60 -- sh -c 'echo hello-alone'
assert_eq "$RC" 0 "wrapped program alone"
assert_grep "$T/out" "hello-alone" "the program's output"
pass "run (wrapped program) alone"

alone 60 -- "$PROG" fail 0 7 0
assert_eq "$RC" 7 "the program's own status"
assert_grep "$T/err" "exited with status 7" "root cause line"
pass "run alone passes the program's exit status on"

alone 60 -- sh -c 'echo "R=$RANK W=$WORLD_SIZE L=$LOCAL_RANK M=$MASTER_ADDR:$MASTER_PORT"'
assert_eq "$RC" 0 "env of the wrapped program"
assert_grep "$T/out" "R=0 W=1 L=0 M=[^:]+:[0-9]+" "torchrun variables, with a master address and port"
pass "the wrapped program of a job of one gets RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT"

alone 60 env "$SRC/examples/train.conf"
assert_eq "$RC" 0 "env mode alone"
assert_grep "$T/out" "WORLD_SIZE=1" "env mode prints the program's environment"
pass "env alone"

alone 60 check "$SRC/examples/train.conf"
assert_eq "$RC" 0 "check alone"
pass "check alone"

xmls=("${GPULAUNCH_TOPOLOGY_DIR:?}"/*.xml)
alone 60 topo --topology "${xmls[0]}"
assert_eq "$RC" 0 "topo alone"
pass "topo alone"

alone 120 bench --backend cpu -b 1K -e 64K -f 4 -n 2 -w 1
assert_eq "$RC" 0 "bench alone"
assert_grep "$T/out" "allreduce" "bench table"
pass "bench alone"

alone 120 accept "$SRC/examples/accept.conf"
case "$RC" in 0 | 73) ;; *) fail "accept alone: status $RC (want 0 or 73)" ;; esac
pass "accept alone (status $RC)"

alone 60 diag --out "$T/diag"
assert_eq "$RC" 0 "diag alone"
pass "diag alone"

# The PyTorch client, torchrun-style, on gloo: a job of one needs MASTER_ADDR/PORT too.
# (Debian's python3-torch is for /usr/bin/python3, which may not be the python3 on PATH.)
PY=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import torch' 2>/dev/null; then PY="$p"; break; fi
done
if [[ -n "$PY" ]]; then
  alone 300 -- "$PY" "$SRC/tests/torch/ddp_train.py" --backend gloo --steps 5
  assert_eq "$RC" 0 "ddp_train.py alone"
  assert_grep "$T/out" "final_loss=[0-9.e+-]+ world=1 backend=gloo" "ddp_train.py result"
  pass "tests/torch/ddp_train.py (gloo) alone"
else
  echo "ok - skipped: tests/torch/ddp_train.py alone (no PyTorch for python3 here)"
fi
echo "all $TESTS_RUN checks passed"
