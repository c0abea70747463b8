#!/usr/bin/env bash
# gpulaunch bench --backend cpu against a plain MPI_Allreduce loop (mpi_allreduce_loop.c): same
# sizes, ranks, iterations and timing definition, run alternately R times (order swapped every
# round); per size the median bus bandwidth of each, and their ratio (goal >= 0.95 from 1 MiB).
#   benchmarks/run_allreduce_vs_mpi.sh [--build DIR] [--reps R] [--np N] [SIZES...]
# SIZES default to -b 1M -e 16M -f 4 -n 20 -w 5 (given to both programs).
# shellcheck source=benchmarks/lib.sh
source "$(dirname "$0")/lib.sh"
parse_build_arg "$@"
REPS=7 NP=4
SZ=()
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    *) SZ+=("$1"); shift ;;
  esac
done
[[ ${#SZ[@]} -gt 0 ]] || SZ=(-b 1M -e 16M -f 4 -n 20 -w 5)
LOOP="$BUILD/benchmarks/mpi_allreduce_loop"
need "$GPULAUNCH" "$LOOP"

echo "### gpulaunch bench --backend cpu vs a plain MPI_Allreduce loop ($NP ranks)"
echo
machine
echo "- $REPS rounds, alternating which program runs first; each cell is the median over the rounds"
echo "  (the spread is min-max over the rounds); bus bandwidth as nccl-tests (2(n-1)/n), GB = 1e9 B"
echo
echo "Commands (one round):"
echo
show "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" bench --backend cpu "${SZ[@]}" --csv g.csv
show "${MPIRUN[@]}" -np "$NP" "$LOOP" "${SZ[@]}" --csv m.csv
echo
run_gpl() { "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" bench --backend cpu "${SZ[@]}" --csv "$TMP/g.$1.csv" >"$TMP/g.$1.out" 2>&1 || { echo "gpulaunch bench failed:"; cat "$TMP/g.$1.out"; exit 1; } >&2; }
run_mpi() { "${MPIRUN[@]}" -np "$NP" "$LOOP" "${SZ[@]}" --csv "$TMP/m.$1.csv" >"$TMP/m.$1.out" 2>&1 || { echo "mpi_allreduce_loop failed:"; cat "$TMP/m.$1.out"; exit 1; } >&2; }
for r in $(seq "$REPS"); do
  if ((r % 2)); then run_gpl "$r"; run_mpi "$r"; else run_mpi "$r"; run_gpl "$r"; fi
done
# column of a CSV by size: col PREFIX SIZE FIELD (9 = oop busbw, 13 = in-place busbw, 10/14 wrong)
col() { cat "$TMP/$1".*.csv | awk -F, -v s="$2" -v f="$3" '$2 == s { print $f }'; }
sizes=$(awk -F, 'NR > 1 { print $2 }' "$TMP/g.1.csv")
wrong=$(cat "$TMP"/g.*.csv "$TMP"/m.*.csv | awk -F, 'NR > 1 && $1 != "op" { s += $10 + $14 } END { print s + 0 }')
echo "| size (B) | gpulaunch busbw out-of-place | MPI loop busbw out-of-place | **ratio** | gpulaunch in-place | MPI loop in-place | **ratio** |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for s in $sizes; do
  go=$(col g "$s" 9 | median); mo=$(col m "$s" 9 | median)
  gi=$(col g "$s" 13 | median); mi=$(col m "$s" 13 | median)
  printf '| %s | %.3g (%s) | %.3g (%s) | **%.2f** | %.3g (%s) | %.3g (%s) | **%.2f** |\n' "$s" \
    "$go" "$(col g "$s" 9 | range)" "$mo" "$(col m "$s" 9 | range)" "$(awk -v a="$go" -v b="$mo" 'BEGIN { print a / b }')" \
    "$gi" "$(col g "$s" 13 | range)" "$mi" "$(col m "$s" 13 | range)" "$(awk -v a="$gi" -v b="$mi" 'BEGIN { print a / b }')"
done
echo
echo "Wrong elements over all runs of both programs: $wrong."
