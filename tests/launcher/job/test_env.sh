#!/usr/bin/env bash
# Every rank's program gets the torchrun-compatible environment, [env] and [nccl], and no MPI
# runtime variables; `gpulaunch env` shows the same without running anything.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"

cat >"$T/train.conf" <<CONF
[job]
command = $PROG env
[env]
FOO = bar baz
MY_SECRET_TOKEN = hunter2
[nccl]
DEBUG = WARN
NCCL_IB_DISABLE = 1
CONF

run_mpi 4 "$GPULAUNCH" "$T/train.conf"
assert_eq "$RC" 0 "exit status"
host=$(hostname -s)
ports=()
addrs=()
for r in 0 1 2 3; do
  p="^\[$host:$r\] ENV"
  assert_grep "$T/out" "$p RANK=$r\$" "rank $r RANK"
  assert_grep "$T/out" "$p LOCAL_RANK=$r\$" "rank $r LOCAL_RANK"
  assert_grep "$T/out" "$p WORLD_SIZE=4\$" "rank $r WORLD_SIZE"
  assert_grep "$T/out" "$p LOCAL_WORLD_SIZE=4\$" "rank $r LOCAL_WORLD_SIZE"
  assert_grep "$T/out" "$p GROUP_RANK=0\$" "rank $r GROUP_RANK"
  assert_grep "$T/out" "$p GROUP_WORLD_SIZE=1\$" "rank $r GROUP_WORLD_SIZE"
  assert_grep "$T/out" "$p OMP_NUM_THREADS=[1-9][0-9]*\$" "rank $r OMP_NUM_THREADS"
  assert_grep "$T/out" "$p GPULAUNCH_RESTART_COUNT=0\$" "rank $r restart count"
  assert_grep "$T/out" "$p TORCHELASTIC_RESTART_COUNT=0\$" "rank $r torchelastic restart count"
  assert_grep "$T/out" "$p FOO=bar baz\$" "rank $r [env]"
  assert_grep "$T/out" "$p NCCL_DEBUG=WARN\$" "rank $r [nccl] without prefix"
  assert_grep "$T/out" "$p NCCL_IB_DISABLE=1\$" "rank $r [nccl] with prefix"
  assert_grep "$T/out" "$p MY_SECRET_TOKEN=hunter2\$" "rank $r gets its secret (only printing redacts it)"
  ports+=("$(sed -n "s/$p MASTER_PORT=//p" "$T/out")")
  addrs+=("$(sed -n "s/$p MASTER_ADDR=//p" "$T/out")")
done
assert_nogrep "$T/out" "ENV (OMPI_|PMIX_)" "MPI runtime variables must not reach the program"
for r in 1 2 3; do
  assert_eq "${ports[$r]}" "${ports[0]}" "MASTER_PORT of rank $r"
  assert_eq "${addrs[$r]}" "${addrs[0]}" "MASTER_ADDR of rank $r"
done
[[ "${ports[0]}" =~ ^[0-9]+$ && "${ports[0]}" -gt 0 ]] || fail "MASTER_PORT '${ports[0]}' is not a port"
pass "4 ranks: torchrun environment, [env], [nccl], same MASTER_ADDR:PORT ${addrs[0]}:${ports[0]}"

# The rank's own OMP_NUM_THREADS wins over gpulaunch's choice.
OMP_NUM_THREADS=3 run_mpi 2 "$GPULAUNCH" -- "$PROG" env
assert_eq "$RC" 0 "exit status (-- PROGRAM)"
assert_grep "$T/out" "^\[$host:1\] ENV OMP_NUM_THREADS=3\$" "OMP_NUM_THREADS from the environment is kept"
assert_grep "$T/out" "^\[$host:1\] ENV WORLD_SIZE=2\$" "-- PROGRAM: WORLD_SIZE"
pass "-- PROGRAM without a config; OMP_NUM_THREADS not overridden"

# Ranks that share cores share their threads: OMP_NUM_THREADS = the binding's cores / the ranks
# sharing them (at least 1), so a node's ranks never run more threads than max(cores, ranks); one
# notice line says so. Ranks = 2x the cores forces sharing whatever this machine has.
ncores=$(lscpu -p=CORE 2>/dev/null | grep -v '^#' | sort -u | wc -l)
((ncores > 0)) || ncores=$(nproc)
nr=$((2 * ncores))
for bind in cores none; do
  printf '[topology]\nbind = %s\n' "$bind" >"$T/share.conf"
  (unset OMP_NUM_THREADS; run_mpi "$nr" "$GPULAUNCH" "$T/share.conf" -- "$PROG" env; echo "$RC" >"$T/rc")
  RC=$(cat "$T/rc")
  assert_eq "$RC" 0 "exit status ($nr ranks on $ncores cores, bind $bind)"
  sum=0
  for ((r = 0; r < nr; r++)); do
    v=$(sed -n "s/^\[$host:$r\] ENV OMP_NUM_THREADS=//p" "$T/out")
    [[ $v =~ ^[1-9][0-9]*$ ]] || fail "bind $bind: rank $r OMP_NUM_THREADS '$v'"
    sum=$((sum + v))
  done
  max=$((ncores > nr ? ncores : nr))
  ((sum <= max)) || fail "bind $bind: $nr ranks on $ncores cores run $sum threads (> $max)"
  n=$(cat "$T/out" "$T/err" | grep -c "ranks share .* OMP_NUM_THREADS=1 each" || true)
  assert_eq "$n" 1 "bind $bind: one notice line that ranks share cores"
done
pass "$nr ranks on $ncores cores (bound and unbound): OMP_NUM_THREADS sums to $sum <= $max, one notice"

# gpulaunch env: what each rank would get, nothing run, secrets redacted.
run_mpi 4 "$GPULAUNCH" env "$T/train.conf"
assert_eq "$RC" 0 "env exit status"
assert_nogrep "$T/out" "^\[" "env must not run the program"
for r in 0 1 2 3; do
  assert_grep "$T/out" "^# rank $r \(host $host, node 0, local rank $r\)" "env header of rank $r"
done
[[ $(grep -c "^RANK=" "$T/out") == 4 ]] || fail "env: expected 4 RANK= lines"
assert_grep "$T/out" "^MY_SECRET_TOKEN=<redacted>\$" "secret redacted"
assert_nogrep "$T/out" "hunter2" "secret value printed"
assert_grep "$T/out" "^NCCL_DEBUG=WARN\$" "env shows [nccl]"
pass "gpulaunch env: 4 ranks described, nothing run, secret redacted"

# Alone: a job of one.
run_one "$GPULAUNCH" -- "$PROG" env
assert_eq "$RC" 0 "alone exit status"
assert_grep "$T/out" "ENV RANK=0\$" "alone RANK"
assert_grep "$T/out" "ENV WORLD_SIZE=1\$" "alone WORLD_SIZE"
assert_grep "$T/out" "ENV MASTER_ADDR=127.0.0.1\$" "alone MASTER_ADDR"
pass "alone: a job of one"
