#!/usr/bin/env bash
# The cost of the secured control plane (issue 35, docs/security.md), side by side in one run on
# network-namespace hosts: (1) start-up, `mpirun gpulaunch on.conf -- /bin/true` (the default:
# TLS 1.3, a key made for the job) against `... off.conf` (`[security] tls = off`), alternated R
# times per shape, medians and their ratio (goal <= 1.05); (2) the supervisors' CPU per host while a
# program sleeps (heartbeats only): the CPU time of every gpulaunch thread of a host (the
# scheduler's nanoseconds, not 10 ms ticks) over a window of W seconds, TLS against off (goal
# within 5 %). Needs root (ip netns).
#   benchmarks/run_security_netns.sh [--build DIR] [--reps R] [--shapes "4x2 16x1"] [--window W]
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
REPS=7 SHAPES="4x2 16x1" WINDOW=10
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --shapes) SHAPES=$2; shift 2 ;;
    --window) WINDOW=$2; shift 2 ;;
    *) echo "run_security_netns: unknown option $1" >&2; exit 64 ;;
  esac
done
need "$GPULAUNCH"
unset NCCL_SOCKET_IFNAME
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck source=tests/netns/netns.sh
. "$ROOT/tests/netns/netns.sh"
netns_require
maxh=1
for s in $SHAPES; do ((${s%x*} > maxh)) && maxh=${s%x*}; done
NETNS_DECOYS=0 netns_setup "$maxh" >/dev/null
printf '[job]\nliveness_timeout = 5s\n' >"$TMP/on.conf"
printf '[job]\nliveness_timeout = 5s\n[security]\ntls = off\n' >"$TMP/off.conf"

echo "### the secured control plane: TLS 1.3 (default) against [security] tls = off"
echo
machine
echo "- hosts: network namespaces on one bridge (tests/netns/netns.sh); mpirun started on h0"
echo "- start-up: $REPS runs of each, alternating; wall time of the whole mpirun, median"
echo "- heartbeat CPU: every gpulaunch thread's CPU time (schedstat, ns) per host over ${WINDOW} s of"
echo "  a sleeping program (heartbeat interval 1 s), mean over hosts, one run each, alternating"
echo
show "benchmarks/run_security_netns.sh --reps $REPS --shapes \"$SHAPES\" --window $WINDOW"
show "mpirun <netns options> -np R --host h0:k,... gpulaunch on.conf -- /bin/true   vs   ... off.conf ..."
echo
# cpu_ns HOSTS...: CPU time (ns, the scheduler's count: /proc/PID/task/TID/schedstat, not 10 ms
# ticks) of every thread of every gpulaunch process in those hosts
cpu_ns() {
  local h p t=0 v
  for h in "$@"; do
    for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do
      [[ $(cat "/proc/$p/comm" 2>/dev/null) == gpulaunch ]] || continue
      v=$(cat /proc/"$p"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s }') || continue
      t=$((t + ${v:-0}))
    done
  done
  echo "$t"
}
# cpu CONF NP HOSTLIST NH: ms of CPU per host per second of the window
cpu() {
  local conf=$1 np=$2 hl=$3 nh=$4 a b i
  local -a hs=()
  for ((i = 0; i < nh; i++)); do hs+=("h$i"); done
  netns_mpirun -np "$np" --host "$hl" "$GPULAUNCH" "$conf" -- /bin/sleep $((WINDOW + 8)) >"$TMP/cpu.log" 2>&1 &
  local job=$!
  sleep 4
  a=$(cpu_ns "${hs[@]}")
  sleep "$WINDOW"
  b=$(cpu_ns "${hs[@]}")
  wait "$job" || { echo "failed: the sleeping job"; tail -n 20 "$TMP/cpu.log"; exit 1; } >&2
  awk -v a="$a" -v b="$b" -v n="$nh" -v w="$WINDOW" 'BEGIN { printf "%.2f\n", (b - a) / 1e6 / n / w }'
}

notes=()
echo "| hosts x ranks/host | ranks | TLS on (s) | tls = off (s) | ratio | CPU/host TLS on (ms/s) | CPU/host off (ms/s) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for s in $SHAPES; do
  nh=${s%x*} k=${s#*x} hl=""
  for ((i = 0; i < nh; i++)); do hl+="${hl:+,}h$i:$k"; done
  np=$((nh * k))
  rm -f "$TMP/on" "$TMP/off"
  on() { clock "$TMP/${1:-on}" netns_mpirun -np "$np" --host "$hl" "$GPULAUNCH" "$TMP/on.conf" -- /bin/true; }
  off() { clock "$TMP/${1:-off}" netns_mpirun -np "$np" --host "$hl" "$GPULAUNCH" "$TMP/off.conf" -- /bin/true; }
  on warm; off warm
  for r in $(seq "$REPS"); do
    if ((r % 2)); then on; off; else off; on; fi
  done
  onm=$(median <"$TMP/on") offm=$(median <"$TMP/off")
  c_on=$(cpu "$TMP/on.conf" "$np" "$hl" "$nh")
  c_off=$(cpu "$TMP/off.conf" "$np" "$hl" "$nh")
  printf '| %s x %s | %s | %.3f | %.3f | %.3f | %s | %s |\n' "$nh" "$k" "$np" "$onm" "$offm" \
    "$(awk -v a="$onm" -v b="$offm" 'BEGIN { print a / b }')" "$c_on" "$c_off"
  # On a loaded machine the medians move with the load: the fastest runs, and the median of the
  # ratios of each pair (its two runs back to back), say it another way.
  pr=$(paste "$TMP/on" "$TMP/off" | awk '{ print $1 / $2 }' | median)
  notes+=("$(awk -v s="$nh x $k" -v a="$(sort -g "$TMP/on" | head -1)" -v b="$(sort -g "$TMP/off" | head -1)" \
    -v n="$REPS" -v p="$pr" 'BEGIN { printf "- %s: fastest runs %.3f s against %.3f s (%.3f); median ratio of the %d pairs %.3f", s, a, b, a / b, n, p }')")
done
echo
printf '%s\n' "${notes[@]}"
