#!/usr/bin/env bash
# Fused vs unfused gradient allreduce on many small tensors (default 1000 x 4 KiB on 4 ranks; goal
# >= 20x): the comm module's benchmark (bench_comm_fused), and the same through gpulaunch bench
# (--op unfused,fused, one tensor per 4 KiB), both in this run.
#   benchmarks/run_fused.sh [--build DIR] [--np N] [--tensors T] [--bytes B] [--reps R] [--rounds K]
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
NP=4 NT=1000 BYTES=4096 REPS=20 ROUNDS=5
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --np) NP=$2; shift 2 ;;
    --tensors) NT=$2; shift 2 ;;
    --bytes) BYTES=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
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
echo "The same through gpulaunch bench (per call the slowest rank's time, median of $REPS calls;"
echo "$ROUNDS runs per wire type, rotating the order; the median run and the min-max over runs):"
echo
for wire in float bfloat16 half; do
  show "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" bench --op unfused,fused -d "$wire" -b "$TOTAL" -e "$TOTAL" --tensor-bytes "$BYTES" -n "$REPS" --csv f.csv
done
wires=(float bfloat16 half)
for r in $(seq "$ROUNDS"); do
  for i in 0 1 2; do
    wire=${wires[$(((i + r) % 3))]}
    "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" bench --op unfused,fused -d "$wire" -b "$TOTAL" -e "$TOTAL" \
      --tensor-bytes "$BYTES" -n "$REPS" --csv "$TMP/f.$wire.$r.csv" >"$TMP/f.$wire.$r.out" 2>&1 ||
      { echo "gpulaunch bench failed:"; cat "$TMP/f.$wire.$r.out"; exit 1; } >&2
  done
done
echo
echo "| wire dtype | unfused (us) | fused (us) | **speed-up** (min-max) | #wrong |"
echo "|---|---:|---:|---:|---:|"
for wire in float bfloat16 half; do
  # per run: unfused time, fused time, their ratio (in-place column: field 11; wrong: 14)
  for r in $(seq "$ROUNDS"); do
    awk -F, '$1 == "unfused" { u = $11; w += $14 } $1 == "fused" { f = $11; w += $14 }
      END { print u, f, u / f, w }' "$TMP/f.$wire.$r.csv"
  done >"$TMP/runs.$wire"
  u=$(awk '{ print $1 }' "$TMP/runs.$wire" | median)
  f=$(awk '{ print $2 }' "$TMP/runs.$wire" | median)
  printf '| %s | %.0f | %.0f | **%.1fx** (%s) | %d |\n' "$wire" "$u" "$f" \
    "$(awk '{ print $3 }' "$TMP/runs.$wire" | median)" "$(awk '{ print $3 }' "$TMP/runs.$wire" | range)" \
    "$(awk '{ s += $4 } END { print s }' "$TMP/runs.$wire")"
done
