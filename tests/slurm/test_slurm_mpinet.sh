#!/usr/bin/env bash
# Issue 33 under srun --mpi=pmix: 3 nodes that run Docker (cluster --decoys: docker0 172.17.0.1/16
# with a veth port on every node, usb0 link-local on a shared segment, eno1 on management subnets
# that pairs of nodes share, all before eth0), no MCA option: gpulaunch chooses Open MPI's TCP
# interfaces over Slurm's PMIx server before MPI_Init, says so once, and the job runs.
#   test_slurm_mpinet.sh SIGREC TESTPROG
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/slurmlib.sh"
slurm_start 3 --decoys
cd "$T"
subnet=$(sx ip -4 -br addr show dev eth0 | awk '{print $3}' | sed 's|\.[0-9]*/24$|.0/24|')
sx ip -br -4 addr | awk '{print $1}' | tr '\n' ' ' | grep -q '^lo docker0 usb0@[^ ]* eno1@[^ ]* eth0@' ||
  fail "node0: not the decoy shape: $(sx ip -br -4 addr | awk '{print $1}' | tr '\n' ' ')"
set +e
sx env GPULAUNCH_LOG=info GPULAUNCH_TIMEOUT=20 srun --mpi=pmix -N3 -n6 --ntasks-per-node=2 "$GPULAUNCH" -- \
  sh -c 'echo "IF $NCCL_SOCKET_IFNAME"' >"$T/out" 2>"$T/err"
RC=$?
set -e
assert_eq "$RC" 0 "srun --mpi=pmix over decoy nodes: exit status"
assert_grep "$T/err" "MPI's TCP interfaces: btl_tcp_if_include=$subnet \(eth0: the subnet every host has; left out: docker0 172.17.0.1 \(bridge.*the same address on other hosts\), eno1 10.78.0.1 \(10.78.0.0/24 not on node2\), usb0 169.254.10.1 \(only link-local" \
  "the info line (MPI on the fabric, the decoys left out and why)"
[[ $(grep -c "MPI's TCP interfaces:" "$T/err") == 1 ]] || fail "not one info line"
# The job key: the cluster's munged (scripts/slurm/cluster exec names its socket), one credential
# decoded on each node: no key handed over, no warning.
assert_grep "$T/err" "security: TLS 1.3 PSK, job key from MUNGE" "the job key from MUNGE"
assert_nogrep "$T/err" "handed over" "no key handed over"
[[ $(grep -c "IF =eth0$" "$T/out") == 6 ]] || fail "NCCL_SOCKET_IFNAME not =eth0 on every rank"
pass "srun --mpi=pmix -N3 -n6 on Docker-like nodes, no MCA option: MPI on $subnet chosen over PMIx, 6 programs ran"

# The built-in CPU benchmark: MPI's own traffic between the nodes.
set +e
sx env GPULAUNCH_TIMEOUT=20 srun --mpi=pmix -N3 -n3 "$GPULAUNCH" bench --backend cpu -b 1K -e 64K -f 4 -n 2 -w 1 >"$T/out" 2>"$T/err"
RC=$?
set -e
assert_eq "$RC" 0 "bench --backend cpu under srun over decoy nodes: exit status"
pass "srun: gpulaunch bench --backend cpu over 3 Docker-like nodes"
