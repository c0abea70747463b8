#!/usr/bin/env bash
# Launcher start-up across network-namespace hosts shaped like GPU nodes (fabric eth0, management
# NIC eno1, docker0, link-local usb0, a non-routable eth9): `mpirun gpulaunch -- /bin/true`
# against `mpirun mpi_minimal`, alternated R times per shape; median wall times and the ratio
# (goal <= 1.2), one row per hosts x ranks-per-host. Needs root (ip netns).
#   benchmarks/run_startup_netns.sh [--build DIR] [--reps R] [--shapes "2x2 4x2 8x2 1x8 1x16 1x32"]
#                                   [--before DIR]
# --before DIR: also another build's gpulaunch (an earlier commit), in the same alternation, with
# its own ratio column: before and after measured side by side on the same hosts.
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
REPS=7 SHAPES="2x2 4x2 8x2 1x8 1x16 1x32" BEFORE=""
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --shapes) SHAPES=$2; shift 2 ;;
    --before) BEFORE=$2/launcher/gpulaunch; shift 2 ;;
    *) echo "run_startup_netns: unknown option $1" >&2; exit 64 ;;
  esac
done
MIN="$BUILD/benchmarks/mpi_minimal"
need "$GPULAUNCH" "$MIN" ${BEFORE:+"$BEFORE"}
unset NCCL_SOCKET_IFNAME
# shellcheck source=tests/netns/netns.sh
. "$ROOT/tests/netns/netns.sh"
netns_require
maxh=1
for s in $SHAPES; do ((${s%x*} > maxh)) && maxh=${s%x*}; done
NETNS_RICH=1 NETNS_IFNAMES="eth0" netns_setup "$maxh" >/dev/null

echo "### launcher start-up on interface-rich namespace hosts"
echo
machine
echo "- hosts: network namespaces, each with fabric eth0, management eno1 (routable), docker0,"
echo "  usb0 169.254.3.1/16, non-routable eth9 (tests/netns/netns.sh, NETNS_RICH=1)"
echo "- $REPS runs of each, alternating; wall time of the whole mpirun (started on h0), median"
echo
show "benchmarks/run_startup_netns.sh --reps $REPS --shapes \"$SHAPES\""
show "mpirun <netns options> -np R --host h0:k,h1:k,... gpulaunch -- /bin/true   vs   ... mpi_minimal"
echo
if [[ -n $BEFORE ]]; then
  echo "- before: $BEFORE"
  echo
  echo "| hosts x ranks/host | ranks | gpulaunch (s) | mpi_minimal (s) | ratio | before (s) | before ratio |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
else
  echo "| hosts x ranks/host | ranks | gpulaunch (s) | mpi_minimal (s) | ratio |"
  echo "|---|---:|---:|---:|---:|"
fi
for s in $SHAPES; do
  nh=${s%x*} k=${s#*x} hl=""
  for ((i = 0; i < nh; i++)); do hl+="${hl:+,}h$i:$k"; done
  np=$((nh * k))
  rm -f "$TMP/g" "$TMP/m" "$TMP/b"
  g() { clock "$TMP/${1:-g}" netns_mpirun -np "$np" --host "$hl" "$GPULAUNCH" -- /bin/true; }
  m() { clock "$TMP/${1:-m}" netns_mpirun -np "$np" --host "$hl" "$MIN"; }
  b() { [[ -z $BEFORE ]] || clock "$TMP/${1:-b}" netns_mpirun -np "$np" --host "$hl" "$BEFORE" -- /bin/true; }
  g warm; m warm; b warm
  for r in $(seq "$REPS"); do
    if ((r % 2)); then g; m; b; else b; m; g; fi
  done
  gm=$(median <"$TMP/g") mm=$(median <"$TMP/m")
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print a / b }'; }
  if [[ -n $BEFORE ]]; then
    bm=$(median <"$TMP/b")
    printf '| %s x %s | %s | %.3f | %.3f | %.2f | %.3f | %.2f |\n' "$nh" "$k" "$np" "$gm" "$mm" "$(ratio "$gm" "$mm")" "$bm" "$(ratio "$bm" "$mm")"
  else
    printf '| %s x %s | %s | %.3f | %.3f | %.2f |\n' "$nh" "$k" "$np" "$gm" "$mm" "$(ratio "$gm" "$mm")"
  fi
done
