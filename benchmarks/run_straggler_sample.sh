#!/usr/bin/env bash
# The cost of the straggler view by stack samples ([job] straggler = sample): the mean step time of
# a synchronous job (every step ends in an all-reduce) with `straggler = off` and `sample`, run
# alternately R times; median of each and the ratio (goal: sample/off <= 1.01). Two workloads:
# PyTorch gloo DDP-style (py-spy dump --nonblocking) when a Python with torch is there, and a C
# program on the C API (eu-stack, which stops the thread it reads).
#   benchmarks/run_straggler_sample.sh [--build DIR] [--reps R] [--np N] [--steps S]
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
REPS=5 NP=4 STEPS=400
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --np) NP=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    *) echo "run_straggler_sample: unknown option $1" >&2; exit 64 ;;
  esac
done
SRC=$(cd "$(dirname "$0")/.." && pwd)
PROG="$BUILD/tests/launcher/hang/hang_prog"
need "$GPULAUNCH" "$PROG"
PY=""
for p in /usr/bin/python3 python3; do
  "$p" -c 'import torch.distributed' 2>/dev/null && { PY=$(command -v "$p"); break; }
done
export OMP_NUM_THREADS=1

echo "### straggler = sample: cost ($NP ranks, $STEPS steps)"
echo
machine
echo "- $REPS runs of each, alternating; mean step time after the first steps (the program's own"
echo "  clock), median (min-max)"
echo
# bench NAME COMMAND: the table row of one workload
bench() {
  local name=$1 cmd=$2 mode
  : >"$TMP/off" && : >"$TMP/sample"
  for ((i = 0; i < REPS; i++)); do
    for mode in off sample; do
      printf '[job]\ncommand = %s\nstraggler = %s\n' "$cmd" "$mode" >"$TMP/$mode.conf"
      "${MPIRUN[@]}" -np "$NP" "$GPULAUNCH" "$TMP/$mode.conf" >"$TMP/last" 2>&1 ||
        { echo "failed: $cmd ($mode)"; cat "$TMP/last"; exit 1; } >&2
      sed -nE 's/.*mean step ([0-9.]+) ms.*/\1/p' "$TMP/last" | tail -1 >>"$TMP/$mode"
    done
  done
  local off sample
  off=$(median <"$TMP/off")
  sample=$(median <"$TMP/sample")
  printf '| %s | %.3f (%s) | %.3f (%s) | %.4f |\n' "$name" "$off" "$(range <"$TMP/off")" "$sample" \
    "$(range <"$TMP/sample")" "$(awk -v a="$sample" -v b="$off" 'BEGIN { print a / b }')"
}
echo "| workload | off: step ms | sample: step ms | sample/off |"
echo "|---|---|---|---|"
[ -n "$PY" ] && bench "PyTorch gloo, py-spy" "$PY $SRC/tests/launcher/hang/straggle_train.py --steps $STEPS --work-ms 80"
bench "C API, eu-stack" "$PROG straggle -1 0 $((STEPS * 4))"
