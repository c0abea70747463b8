#!/usr/bin/env bash
# Launcher start-up: `mpirun -np N gpulaunch -- /bin/true` against `mpirun -np N mpi_minimal`
# (init, barrier, finalize), run alternately R times; median wall time of each and the ratio
# (goal <= 1.2).
#   benchmarks/run_startup.sh [--build DIR] [--reps R] [--np N]
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
REPS=21 NP=4
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    *) echo "run_startup: unknown option $1" >&2; exit 64 ;;
  esac
done
MIN="$BUILD/benchmarks/mpi_minimal"
need "$GPULAUNCH" "$MIN"
TRUE=/bin/true

echo "### launcher start-up ($NP ranks)"
echo
machine
echo "- $REPS runs of each, alternating; wall time of the whole mpirun, median (min-max)"
echo
show "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" -- "$TRUE"
show "${MPIRUN[@]}" -np "$NP" "$MIN"
echo
# one of each first, not counted (file cache)
clock "$TMP/warm" "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" -- "$TRUE"
clock "$TMP/warm" "${MPIRUN[@]}" -np "$NP" "$MIN"
for r in $(seq "$REPS"); do
  if ((r % 2)); then
    clock "$TMP/g" "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" -- "$TRUE"
    clock "$TMP/m" "${MPIRUN[@]}" -np "$NP" "$MIN"
  else
    clock "$TMP/m" "${MPIRUN[@]}" -np "$NP" "$MIN"
    clock "$TMP/g" "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" -- "$TRUE"
  fi
done
g=$(median <"$TMP/g"); m=$(median <"$TMP/m")
echo "| program | median (s) | min-max (s) |"
echo "|---|---:|---:|"
printf '| gpulaunch -- %s | %.3f | %s |\n' "$TRUE" "$g" "$(range <"$TMP/g")"
printf '| mpi_minimal | %.3f | %s |\n' "$m" "$(range <"$TMP/m")"
echo
printf '**ratio gpulaunch / minimal MPI program: %.2f** (goal <= 1.2)\n' "$(awk -v a="$g" -v b="$m" 'BEGIN { print a / b }')"
