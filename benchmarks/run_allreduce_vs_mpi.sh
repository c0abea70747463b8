#!/usr/bin/env bash
# gpulaunch bench --backend cpu against a plain MPI_Allreduce loop (mpi_allreduce_loop.c): same
# sizes, ranks, iterations and timing definition, R rounds (order rotated every round); per size
# the median bus bandwidth of each, and their ratio (goal >= 0.95 from 1 MiB). gpulaunch runs as
# it is and with GPULAUNCH_COMM_SHM=0, which puts comm's cpu backend on MPI_Iallreduce: that
# second ratio is the cost of the harness and the comm layer over the same MPI collective.
#   benchmarks/run_allreduce_vs_mpi.sh [--build DIR] [--reps R] [--np N] [SIZES...]
# SIZES default to -b 1M -e 16M -f 4 -n 20 -w 5 (given to both programs).
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
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
echo "- $REPS rounds; each round runs the three in a rotating order; each cell is the median over"
echo "  the rounds (min-max in brackets); bus bandwidth as nccl-tests (2(n-1)/n), GB = 1e9 B"
echo "- gpulaunch runs twice: as it is (comm's node-local shared-memory allreduce), and with"
echo "  GPULAUNCH_COMM_SHM=0 (comm on Open MPI's MPI_Iallreduce): the second isolates what the"
echo "  harness and the comm layer cost over the same MPI collective"
echo
echo "Commands (one round):"
echo
show "${MPIRUN[@]}" -np "$NP" "$LOOP" "${SZ[@]}" --csv m.csv
show "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" bench --backend cpu "${SZ[@]}" --csv g.csv
show GPULAUNCH_COMM_SHM=0 "${MPIRUN[@]}" -np "$NP" -x GPULAUNCH_COMM_SHM "$GPULAUNCH" bench --backend cpu "${SZ[@]}" --csv s.csv
echo
run() { # run KIND ROUND
  local k=$1 r=$2 rc=0
  case "$k" in
    m) "${MPIRUN[@]}" -np "$NP" "$LOOP" "${SZ[@]}" --csv "$TMP/m.$r.csv" >"$TMP/m.$r.out" 2>&1 || rc=$? ;;
    g) "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" bench --backend cpu "${SZ[@]}" --csv "$TMP/g.$r.csv" >"$TMP/g.$r.out" 2>&1 || rc=$? ;;
    s) GPULAUNCH_COMM_SHM=0 "${MPIRUN[@]}" -np "$NP" -x GPULAUNCH_COMM_SHM "$GPULAUNCH" bench --backend cpu "${SZ[@]}" \
         --csv "$TMP/s.$r.csv" >"$TMP/s.$r.out" 2>&1 || rc=$? ;;
  esac
  if [[ $rc -ne 0 ]]; then
    echo "run $k (round $r) failed with status $rc:" >&2
    cat "$TMP/$k.$r.out" >&2
    exit 1
  fi
}
orders=("m g s" "g s m" "s m g")
for r in $(seq "$REPS"); do
  for k in ${orders[$(((r - 1) % 3))]}; do run "$k" "$r"; done
done
# col PREFIX SIZE FIELD: that CSV column over the rounds (9 = out-of-place busbw, 13 = in-place)
col() { cat "$TMP/$1".*.csv | awk -F, -v s="$2" -v f="$3" '$2 == s { print $f }'; }
sizes=$(awk -F, 'NR > 1 { print $2 }' "$TMP/g.1.csv")
wrong=$(cat "$TMP"/[gms].*.csv | awk -F, '$1 != "op" { s += $10 + $14 } END { print s + 0 }')
for place in 9:Out-of-place 13:In-place; do
  f=${place%%:*}
  echo "${place#*:} bus bandwidth (GB/s):"
  echo
  echo "| size (B) | MPI_Allreduce loop | gpulaunch bench | **ratio** | gpulaunch bench, GPULAUNCH_COMM_SHM=0 | **ratio** |"
  echo "|---:|---:|---:|---:|---:|---:|"
  for s in $sizes; do
    m=$(col m "$s" "$f" | median); g=$(col g "$s" "$f" | median); x=$(col s "$s" "$f" | median)
    printf '| %s | %.3g (%s) | %.3g (%s) | **%.2f** | %.3g (%s) | **%.2f** |\n' "$s" \
      "$m" "$(col m "$s" "$f" | range)" "$g" "$(col g "$s" "$f" | range)" \
      "$(awk -v a="$g" -v b="$m" 'BEGIN { print a / b }')" \
      "$x" "$(col s "$s" "$f" | range)" "$(awk -v a="$x" -v b="$m" 'BEGIN { print a / b }')"
  done
  echo
done
echo "Wrong elements over all runs: $wrong."
