#!/usr/bin/env bash
# 16 interface-rich netns hosts x 2 ranks (NETNS_RICH=1: fabric eth0 beside a routable management
# eno1, docker0, link-local usb0, a non-routable eth9): `gpulaunch -- sh -c 'echo env'` starts
# every rank's program, and each sees NCCL_SOCKET_IFNAME==eth0 (the fabric, which MPI is pinned
# to) and its RANK; the start-up time is printed.
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
source "$(dirname "$0")/../lib.sh"
netns_begin

NH=16 K=2
NETNS_RICH=1 netns_setup "$NH"
T=$NETNS_DIR
hosts=""
for ((i = 0; i < NH; i++)); do hosts+="${hosts:+,}h$i:$K"; done
export GPULAUNCH_TIMEOUT=30
# shellcheck disable=SC2016 # expanded by the program's shell
netns_run $((NH * K)) "$hosts" "$GPULAUNCH" -- sh -c 'echo "RICHENV rank=$RANK ifname=$NCCL_SOCKET_IFNAME"'
if [ "$RC" != 0 ]; then bad "16x2: exit $RC (${SECS}s)"; else
  n=$(grep -c 'RICHENV' "$T/out" || true)
  [ "$n" = $((NH * K)) ] || bad "16x2: $n of $((NH * K)) programs printed their environment"
  for ((r = 0; r < NH * K; r++)); do
    h=h$((r / K))
    line=$(grep "^\[$h:$r\] RICHENV " "$T/out" || true)
    [ "$line" = "[$h:$r] RICHENV rank=$r ifname==eth0" ] || bad "rank $r on $h: '${line:-no output}', expected rank=$r ifname==eth0"
  done
  if grep -E 'RICHENV.*ifname=.*(eno1|docker0|usb0|eth9)' "$T/out"; then bad "16x2: a decoy was agreed"; fi
  [ "$FAILED" = 0 ] && pass "16 hosts x 2 ranks, interface-rich: all 32 programs ran with NCCL_SOCKET_IFNAME==eth0 (not eno1, docker0, usb0, eth9); mpirun ${SECS}s"
fi
exit "$FAILED"
