#!/usr/bin/env bash
# The cost of the secured control plane (issue 35, docs/security.md), side by side in one run on
# network-namespace hosts: (1) start-up, `mpirun gpulaunch on.conf -- /bin/true` (the default:
# TLS 1.3, a key made for the job) against `... off.conf` (`[security] tls = off`), alternated R
# times per shape, medians and their ratio (goal <= 1.05); (2) the supervisors' CPU per host while a
# program sleeps (heartbeats only): the CPU time of every gpulaunch thread of a host (the
# scheduler's nanoseconds, not 10 ms ticks), a TLS-on and a tls = off job at once on hosts of their
# own, read at the same moments over N windows of W seconds (goal within 5 %). Needs root (ip netns).
#   benchmarks/run_security_netns.sh [--build DIR] [--reps R] [--shapes "4x2 16x1"] [--window W]
#                                    [--windows N]
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
REPS=7 SHAPES="4x2 16x1" WINDOW=10 WINDOWS=5
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --shapes) SHAPES=$2; shift 2 ;;
    --window) WINDOW=$2; shift 2 ;;
    --windows) WINDOWS=$2; shift 2 ;;
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
NETNS_DECOYS=0 netns_setup $((2 * maxh)) >/dev/null # the CPU's two jobs at once: twice the hosts
printf '[job]\nliveness_timeout = 5s\n' >"$TMP/on.conf"
printf '[job]\nliveness_timeout = 5s\n[security]\ntls = off\n' >"$TMP/off.conf"

echo "### the secured control plane: TLS 1.3 (default) against [security] tls = off"
echo
machine
echo "- hosts: network namespaces on one bridge (tests/netns/netns.sh); mpirun started on h0"
echo "- start-up: $REPS runs of each, alternating; wall time of the whole mpirun, median"
echo "- heartbeat CPU: a TLS-on and a tls = off job of the same shape at once on hosts of their own,"
echo "  each sleeping (heartbeat interval 1 s); every gpulaunch thread's CPU time (schedstat, ns) per"
echo "  host, read on both at the same moments over $WINDOWS windows of ${WINDOW} s; medians over the"
echo "  windows (the ratio: of each window's on/off), and the liveness thread (gpl-live) alone"
echo
show "benchmarks/run_security_netns.sh --reps $REPS --shapes \"$SHAPES\" --window $WINDOW --windows $WINDOWS"
show "mpirun <netns options> -np R --host h0:k,... gpulaunch on.conf -- /bin/true   vs   ... off.conf ..."
echo
# cpu_ns THREAD HOSTS...: CPU time (ns, the scheduler's count: /proc/PID/task/TID/schedstat, not
# 10 ms ticks) of the threads of every gpulaunch process in those hosts; THREAD "" for every
# thread, else only the threads of that name (gpl-live: the liveness tree's, util_thread_name)
cpu_ns() {
  local name=$1 h p t=0 v
  shift
  for h in "$@"; do
    for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do
      [[ $(cat "/proc/$p/comm" 2>/dev/null) == gpulaunch ]] || continue
      v=$(for d in /proc/"$p"/task/*; do
        if [[ -z $name || $(cat "$d/comm" 2>/dev/null) == "$name" ]]; then cat "$d/schedstat" 2>/dev/null || :; fi
      done | awk '{ s += $1 } END { printf "%d", s }') || continue
      t=$((t + ${v:-0}))
    done
  done
  echo "$t"
}
# cpu NP NH K: the TLS-on job on hosts h0..h(NH-1) and the tls = off job on hNH..h(2NH-1), both
# sleeping at once (the same load on both), K ranks a host; WINDOWS windows of W s, each read on
# both jobs at the same moments. Prints "on off ratio live_on live_off": medians over the windows
# of ms of CPU per host per second (every gpulaunch thread; the ratio is the median of each
# window's on/off), and of the liveness thread's alone.
cpu() {
  local np=$1 nh=$2 k=$3 i w hl_on="" hl_off=""
  local -a hs_on=() hs_off=()
  for ((i = 0; i < nh; i++)); do
    hs_on+=("h$i") hs_off+=("h$((nh + i))")
    hl_on+="${hl_on:+,}h$i:$k" hl_off+="${hl_off:+,}h$((nh + i)):$k"
  done
  local secs=$((6 + WINDOWS * WINDOW + 4))
  netns_mpirun -np "$np" --host "$hl_on" "$GPULAUNCH" "$TMP/on.conf" -- /bin/sleep "$secs" >"$TMP/cpu_on.log" 2>&1 &
  local job_on=$!
  netns_mpirun -np "$np" --host "$hl_off" "$GPULAUNCH" "$TMP/off.conf" -- /bin/sleep "$secs" >"$TMP/cpu_off.log" 2>&1 &
  local job_off=$!
  sleep 6
  : >"$TMP/win"
  for ((w = 0; w < WINDOWS; w++)); do
    local a1 a2 a3 a4 b1 b2 b3 b4
    a1=$(cpu_ns "" "${hs_on[@]}") a2=$(cpu_ns "" "${hs_off[@]}")
    a3=$(cpu_ns gpl-live "${hs_on[@]}") a4=$(cpu_ns gpl-live "${hs_off[@]}")
    sleep "$WINDOW"
    b1=$(cpu_ns "" "${hs_on[@]}") b2=$(cpu_ns "" "${hs_off[@]}")
    b3=$(cpu_ns gpl-live "${hs_on[@]}") b4=$(cpu_ns gpl-live "${hs_off[@]}")
    awk -v n="$nh" -v w="$WINDOW" -v a1="$a1" -v a2="$a2" -v a3="$a3" -v a4="$a4" \
      -v b1="$b1" -v b2="$b2" -v b3="$b3" -v b4="$b4" 'BEGIN {
        f = 1e6 * n * w; on = (b1 - a1) / f; off = (b2 - a2) / f
        printf "%.4f %.4f %.4f %.4f %.4f\n", on, off, on / off, (b3 - a3) / f, (b4 - a4) / f }' >>"$TMP/win"
  done
  wait "$job_on" || { echo "failed: the sleeping job, TLS on"; tail -n 20 "$TMP/cpu_on.log"; exit 1; } >&2
  wait "$job_off" || { echo "failed: the sleeping job, tls = off"; tail -n 20 "$TMP/cpu_off.log"; exit 1; } >&2
  local c out=""
  for c in 1 2 3 4 5; do out+="$(cut -d' ' -f"$c" "$TMP/win" | median) "; done
  echo "$out"
}

notes=()
echo "| hosts x ranks/host | ranks | TLS on (s) | tls = off (s) | ratio | CPU/host TLS on (ms/s) | CPU/host off (ms/s) | CPU ratio | liveness thread on / off (ms/s) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
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
  read -r c_on c_off c_ratio l_on l_off < <(cpu "$np" "$nh" "$k")
  printf '| %s x %s | %s | %.3f | %.3f | %.3f | %.2f | %.2f | %.3f | %.3f / %.3f |\n' "$nh" "$k" "$np" "$onm" "$offm" \
    "$(awk -v a="$onm" -v b="$offm" 'BEGIN { print a / b }')" "$c_on" "$c_off" "$c_ratio" "$l_on" "$l_off"
  # On a loaded machine the medians move with the load: the fastest runs, and the median of the
  # ratios of each pair (its two runs back to back), say it another way.
  pr=$(paste "$TMP/on" "$TMP/off" | awk '{ print $1 / $2 }' | median)
  notes+=("$(awk -v s="$nh x $k" -v a="$(sort -g "$TMP/on" | head -1)" -v b="$(sort -g "$TMP/off" | head -1)" \
    -v n="$REPS" -v p="$pr" 'BEGIN { printf "- %s: fastest runs %.3f s against %.3f s (%.3f); median ratio of the %d pairs %.3f", s, a, b, a / b, n, p }')")
done
echo
printf '%s\n' "${notes[@]}"
