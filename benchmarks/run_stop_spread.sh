#!/usr/bin/env bash
# One stop, one moment (issue 28): SIGTERM to the user's command while a 4-rank PyTorch (gloo) DDP
# script trains (tests/torch/elastic_train.py: every rank saves its checkpoint at the same step on
# SIGTERM, then exits), under `gpulaunch-run -np 4 gpulaunch --` and `torchrun --standalone
# --nproc-per-node 4`, alternated R times. Per launcher: runs with every checkpoint written, the
# spread between the first and the last program's SIGTERM (ms, each program's own clock stamp),
# and the delay from the kill to the last program's SIGTERM.
#   benchmarks/run_stop_spread.sh [--build DIR] [--reps R]
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
REPS=20
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    *) echo "run_stop_spread: unknown option $1" >&2; exit 64 ;;
  esac
done
RUN="$BUILD/launcher/gpulaunch-run"
need "$GPULAUNCH" "$RUN"
PY=/usr/bin/python3
"$PY" -c 'import torch.distributed' 2>/dev/null || { echo "run_stop_spread: no PyTorch for $PY" >&2; exit 69; }
TRAIN="$ROOT/tests/torch/elastic_train.py"
TORCHRUN=(/usr/bin/python3 -m torch.distributed.run)

# one LAUNCHER: start, wait for 15 steps, SIGTERM the launcher, wait; prints "n spread_ms delay_ms"
one() {
  local kind=$1 d="$TMP/run" pid t0 i
  rm -rf "$d" && mkdir -p "$d/ckpt"
  local args=(--ckpt-dir "$d/ckpt" --steps 100000 --step-seconds 0.05 --every 0 --timeout 60)
  if [[ $kind == gpulaunch ]]; then
    GPULAUNCH_MPIRUN=mpirun "$RUN" -np 4 --oversubscribe --bind-to none "$GPULAUNCH" -- "$PY" "$TRAIN" "${args[@]}" \
      >"$d/out" 2>"$d/err" &
  else
    "${TORCHRUN[@]}" --standalone --nproc-per-node 4 "$TRAIN" "${args[@]}" >"$d/out" 2>"$d/err" &
  fi
  pid=$!
  for ((i = 0; i < 1200; i++)); do
    grep -q "step 15 world 4" "$d/out" 2>/dev/null && break
    sleep 0.05
  done
  t0=$(date +%s.%N)
  kill -TERM "$pid"
  wait "$pid" || true
  cat "$d"/ckpt/saved-* 2>/dev/null | awk -v t0="$t0" -v n="$(find "$d/ckpt" -name 'saved-*' | wc -l)" '
    NR == 1 { a = $2; b = $2 } { if ($2 < a) a = $2; if ($2 > b) b = $2 }
    END { if (!NR) { print n, "nan", "nan"; exit } printf "%d %.2f %.1f\n", n, (b - a) * 1000, (b - t0) * 1000 }'
}

echo "### one stop, one moment: SIGTERM to the command, 4 DDP ranks on one host"
echo
machine
echo "- $REPS runs of each, alternating; tests/torch/elastic_train.py (gloo), SIGTERM after 15 steps"
echo
show "benchmarks/run_stop_spread.sh --reps $REPS"
echo
for ((r = 0; r < REPS; r++)); do
  for kind in gpulaunch torchrun; do one "$kind" >>"$TMP/$kind.txt"; done
done
echo "| launcher | runs with 4/4 checkpoints | SIGTERM spread, median (max) ms | kill to last SIGTERM, median ms |"
echo "|---|---:|---:|---:|"
for kind in gpulaunch torchrun; do
  f="$TMP/$kind.txt"
  full=$(awk '$1 == 4' "$f" | wc -l)
  med=$(awk '$2 != "nan" { print $2 }' "$f" | median)
  mx=$(awk '$2 != "nan" { print $2 }' "$f" | sort -g | tail -1)
  del=$(awk '$3 != "nan" { print $3 }' "$f" | median)
  label=$([[ $kind == gpulaunch ]] && echo "gpulaunch-run -np 4 gpulaunch --" || echo "torchrun --standalone --nproc-per-node 4")
  echo "| $label | $full of $REPS | $med ($mx) | $del |"
done
