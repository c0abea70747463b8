#!/usr/bin/env bash
# Runs a test that may skip, and lets a skip through only where this machine lacks what the test
# declared it needs: a skip (exit 77) on a machine that has it all is a failure, and so is a skip
# that does not say why. CTest runs every test with SKIP_RETURN_CODE through here
# (tests/CMakeLists.txt: NEEDS); the needs are probed here, independently of the test's own checks.
#   needs.sh NEED[,NEED...] -- COMMAND [ARGS...]
# Needs:
#   root      uid 0
#   netns     root, and a network namespace can be made (ip netns, unshare)
#   iptables  netns, and iptables works inside a namespace
#   tc_u32    netns, and tc can attach an htb qdisc with a u32 filter inside a namespace
#   netem     netns, and tc can attach a netem qdisc (a delay) inside a namespace (sch_netem)
#   chromium  a headless Chromium (chromium, chromium-browser or google-chrome)
#   gpu       an NVIDIA GPU the driver answers for (nvidia-smi -L lists one)
#   nogpu     no such GPU (a test of what happens without one)
#   cuda      this build has CUDA (GPL_BUILD_CUDA=1, set by CMake)
#   nccl      this build has the NCCL backend (GPL_BUILD_NCCL=1, set by CMake)
#   ipv4      an interface besides lo with an IPv4 address
#   ipv6      the IPv6 loopback address ::1
#   cxx       this build found a C++ compiler (GPL_BUILD_CXX=1, set by CMake)
#   cuobjdump the CUDA toolkit's cuobjdump (on PATH or in /usr/local/cuda/bin)
#   nvdisasm  cuobjdump and the nvdisasm it needs to disassemble (on PATH or beside it)
#   torch     a Python with PyTorch's torch.distributed (/usr/bin/python3 or python3)
#   pyspy     py-spy on PATH (scripts/install-deps.sh installs it from PyPI)
#   gdb       gdb on PATH (native stacks of a hung program)
#   promclient a Python with prometheus_client, the Prometheus text parser (Debian's
#             python3-prometheus-client, for /usr/bin/python3: scripts/install-deps.sh)
#   eustack   eu-stack on PATH (elfutils: native stacks sampled for the straggler view)
#   nodeexporter root, Debian's prometheus-node-exporter (or node_exporter) and curl on PATH, and
#             useradd/runuser/setpriv (node_exporter runs as its own user, the job as another)
#   yama      root, a writable /proc/sys/kernel/yama/ptrace_scope (Yama in the kernel), useradd
#   munge     this build has MUNGE (GPL_BUILD_MUNGE=1, set by CMake) and Debian's munged, mungekey
#   slurm     netns, and Debian's Slurm and munge with the PMIx plugin (scripts/slurm/cluster
#             starts a cluster of them: munged, mungekey, slurmctld, slurmd, srun, sbatch,
#             scontrol, mpi_pmix.so)
set -uo pipefail
needs=${1:?usage: needs.sh NEED[,NEED...] -- COMMAND [ARGS...]}
shift
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { echo "needs.sh: no command" >&2; exit 2; }

NS="gplneeds$$"
# add_scratch_ns: add the namespace $NS (root, ip, unshare needed); sets why when it cannot.
add_scratch_ns() {
  [ "$(id -u)" = 0 ] || { why="not root"; return 1; }
  command -v ip >/dev/null || { why="no ip(8)"; return 1; }
  command -v unshare >/dev/null || { why="no unshare(1)"; return 1; }
  ip netns add "$NS" 2>/dev/null || { why="ip netns add fails"; return 1; }
}
probe_netns() { add_scratch_ns && ip netns del "$NS"; }
# Run "$@" inside a scratch namespace that has an interface d0 (a veth end, as the netns harness
# makes them), then remove the namespace.
in_scratch_ns() {
  add_scratch_ns || return 1
  local rc=1
  if ip -n "$NS" link add d0 type veth peer name d1 2>/dev/null && ip -n "$NS" link set d0 up; then
    ip netns exec "$NS" "$@" >/dev/null 2>&1
    rc=$?
  else
    why="cannot add a veth pair in a namespace"
  fi
  ip netns del "$NS"
  return $rc
}
have() { # have NEED: 0 when this machine has it; sets why otherwise
  why=""
  case $1 in
    root) [ "$(id -u)" = 0 ] || { why="not root"; return 1; } ;;
    netns) probe_netns ;;
    iptables)
      command -v iptables >/dev/null || { why="no iptables"; return 1; }
      in_scratch_ns iptables -A INPUT -p tcp --syn -j DROP || { why="${why:-iptables does not work in a namespace}"; return 1; } ;;
    tc_u32)
      command -v tc >/dev/null || { why="no tc"; return 1; }
      in_scratch_ns sh -c 'tc qdisc add dev d0 root handle 1: htb && tc class add dev d0 parent 1: classid 1:2 htb rate 50mbit &&
        tc filter add dev d0 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.1/32 flowid 1:2' ||
        { why="${why:-tc htb/u32 does not work in a namespace}"; return 1; } ;;
    netem)
      command -v tc >/dev/null || { why="no tc"; return 1; }
      in_scratch_ns tc qdisc add dev d0 root netem delay 5ms ||
        { why="${why:-tc netem does not work in a namespace (a kernel without sch_netem)}"; return 1; } ;;
    chromium)
      command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null ||
        { why="no chromium"; return 1; } ;;
    gpu)
      command -v nvidia-smi >/dev/null || { why="no nvidia-smi (no NVIDIA driver)"; return 1; }
      nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || { why="nvidia-smi lists no GPU"; return 1; } ;;
    cuda) [ "${GPL_BUILD_CUDA:-0}" = 1 ] || { why="this build has no CUDA"; return 1; } ;;
    nccl) [ "${GPL_BUILD_NCCL:-0}" = 1 ] || { why="this build has no NCCL backend"; return 1; } ;;
    ipv4)
      ip -o -4 addr show 2>/dev/null | awk '$2 != "lo" { f = 1 } END { exit !f }' ||
        { why="no IPv4 address besides lo"; return 1; } ;;
    ipv6) grep -q '^00000000000000000000000000000001 ' /proc/net/if_inet6 2>/dev/null || { why="no ::1"; return 1; } ;;
    cxx) [ "${GPL_BUILD_CXX:-0}" = 1 ] || { why="this build found no C++ compiler"; return 1; } ;;
    cuobjdump)
      command -v cuobjdump >/dev/null || [ -x /usr/local/cuda/bin/cuobjdump ] || { why="no cuobjdump"; return 1; } ;;
    nvdisasm)
      have cuobjdump || return 1
      command -v nvdisasm >/dev/null || [ -x /usr/local/cuda/bin/nvdisasm ] || { why="no nvdisasm"; return 1; } ;;
    nogpu)
      if have gpu; then
        why="a GPU is here"
        return 1
      fi
      why="" ;;
    torch)
      local p
      for p in /usr/bin/python3 python3; do
        "$p" -c 'import sys, torch.distributed as d; sys.exit(0 if d.is_available() else 1)' 2>/dev/null && return 0
      done
      why="no Python with torch.distributed"
      return 1 ;;
    pyspy) command -v py-spy >/dev/null || { why="no py-spy (scripts/install-deps.sh installs it)"; return 1; } ;;
    gdb) command -v gdb >/dev/null || { why="no gdb"; return 1; } ;;
    promclient)
      local q
      for q in /usr/bin/python3 python3; do
        "$q" -c 'import prometheus_client.parser' 2>/dev/null && return 0
      done
      why="no Python with prometheus_client"
      return 1 ;;
    eustack) command -v eu-stack >/dev/null || { why="no eu-stack (elfutils)"; return 1; } ;;
    nodeexporter)
      [ "$(id -u)" = 0 ] || { why="not root"; return 1; }
      command -v prometheus-node-exporter >/dev/null || command -v node_exporter >/dev/null ||
        { why="no node_exporter (scripts/install-deps.sh installs prometheus-node-exporter)"; return 1; }
      command -v curl >/dev/null || { why="no curl"; return 1; }
      command -v useradd >/dev/null && command -v runuser >/dev/null || { why="no useradd/runuser"; return 1; } ;;
    yama)
      [ "$(id -u)" = 0 ] || { why="not root"; return 1; }
      [ -w /proc/sys/kernel/yama/ptrace_scope ] || { why="no writable kernel.yama.ptrace_scope (no Yama here)"; return 1; }
      command -v useradd >/dev/null && command -v runuser >/dev/null && command -v setpriv >/dev/null ||
        { why="no useradd/runuser/setpriv"; return 1; } ;;
    munge)
      [ "${GPL_BUILD_MUNGE:-0}" = 1 ] || { why="this build has no MUNGE (libmunge-dev)"; return 1; }
      command -v munged >/dev/null && command -v mungekey >/dev/null ||
        { why="no munged/mungekey (Debian's munge)"; return 1; } ;;
    slurm)
      probe_netns || return 1
      local t
      for t in munged mungekey slurmctld slurmd srun sbatch scontrol; do
        command -v "$t" >/dev/null || { why="no $t (scripts/install-deps.sh installs Slurm)"; return 1; }
      done
      compgen -G "/usr/lib/*/slurm-wlm/mpi_pmix.so" >/dev/null || compgen -G "/usr/lib*/slurm/mpi_pmix.so" >/dev/null ||
        { why="no Slurm PMIx plugin (mpi_pmix.so)"; return 1; } ;;
    *) echo "needs.sh: unknown need '$1'" >&2; exit 2 ;;
  esac
}

log=$(mktemp /tmp/gplneeds.XXXXXX)
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" = 77 ] || exit "$rc"

reason=$(grep -iE '^(SKIP|skipped)\b' "$log" | head -n 1)
lacking=""
IFS=, read -r -a list <<<"$needs"
for n in "${list[@]}"; do
  if ! have "$n"; then lacking+="${lacking:+, }$n ($why)"; fi
done
if [ -z "$reason" ]; then
  echo "FAIL: the test skipped (exit 77) without a line saying why (\"SKIP: ...\")"
  exit 1
fi
if [ -z "$lacking" ]; then
  echo "FAIL: the test skipped, but this machine has everything it declared it needs ($needs): $reason"
  exit 1
fi
echo "skipped: this machine lacks $lacking"
exit 77
