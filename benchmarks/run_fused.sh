#!/usr/bin/env bash
# Fused vs unfused gradient allreduce on many small tensors (default 1000 x 4 KiB on 4 ranks; goal
# >= 20x): the comm module's benchmark (bench_comm_fused), and the same through gpulaunch bench
# (--op unfused,fused, one tensor per 4 KiB), both in this run.
#   benchmarks/run_fused.sh [--build DIR] [--np N] [--tensors T] [--bytes B] [--reps R]
# shellcheck source=benchmarks/lib.sh
source "$(dirname "$0")/lib.sh"
parse_build_arg "$@"
NP=4 NT=1000 BYTES=4096 REPS=20
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --np) NP=$2; shift 2 ;;
    --tensors) NT=$2; shift 2 ;;
    --bytes) BYTES=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    *) echo "run_fused: unknown option $1" >&2; exit 64 ;;
  esac
done
CF="$BUILD/benchmarks/bench_comm_fused"
need "$GPULAUNCH" "$CF"
TOTAL=$((NT * BYTES))
echo "### fused vs unfused allreduce, $NT tensors x $BYTES B on $NP ranks"
echo
machine
echo
echo "The comm module's benchmark (median of $REPS, between barriers):"
echo
show "${MPIRUN[@]}" -np "$NP" "$CF" --tensors "$NT" --bytes "$BYTES" --reps "$REPS"
echo
echo '```'
"${MPIRUN[@]}" -np "$NP" "$CF" --tensors "$NT" --bytes "$BYTES" --reps "$REPS"
echo '```'
echo
echo "The same through gpulaunch bench (time per call: the slowest rank's, median of $REPS):"
echo
for wire in float bfloat16 half; do
  show "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" bench --op unfused,fused -d "$wire" -b "$TOTAL" -e "$TOTAL" --tensor-bytes "$BYTES" -n "$REPS" --csv f.csv
  "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" bench --op unfused,fused -d "$wire" -b "$TOTAL" -e "$TOTAL" \
    --tensor-bytes "$BYTES" -n "$REPS" --csv "$TMP/f.$wire.csv" >"$TMP/f.$wire.out" 2>&1 ||
    { echo "gpulaunch bench failed:"; cat "$TMP/f.$wire.out"; exit 1; } >&2
done
echo
echo "| wire dtype | unfused (us) | fused (us) | **speed-up** | #wrong |"
echo "|---|---:|---:|---:|---:|"
for wire in float bfloat16 half; do
  awk -F, -v w="$wire" '$1 == "unfused" { u = $11; wu = $14 } $1 == "fused" { f = $11; wf = $14 }
    END { printf "| %s | %.0f | %.0f | **%.1fx** | %d |\n", w, u, f, u / f, wu + wf }' "$TMP/f.$wire.csv"
done
