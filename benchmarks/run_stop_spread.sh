#!/usr/bin/env bash
# One stop, one moment (issue 28): SIGTERM to the user's command, under `gpulaunch-run -np 4
# gpulaunch --` and `torchrun --standalone --nproc_per_node 4`, alternated R times. Two programs:
# (1) the tests' C program (gpl_testprog signals), which stamps the clock in its signal handler:
# the spread between the first and the last program's SIGTERM as delivered, and the delay from the
# kill to the last one; (2) a 4-rank PyTorch (gloo) DDP script (tests/torch/elastic_train.py:
# every rank saves its checkpoint at the same step on SIGTERM, then exits): runs with every
# checkpoint written, and the spread as Python's handlers saw it (they run between bytecodes: a
# rank inside a collective sees its signal when the collective returns; a rank that saved on the
# others' word before its own signal came is left out of the spread).
#   benchmarks/run_stop_spread.sh [--build DIR] [--reps R] [--only gpulaunch|torchrun] [--check]
# --check: exit 1 unless every gpulaunch run wrote 4/4 checkpoints (tests/torch runs it so, 10 runs: torch_stop_many).
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
REPS=20 KINDS="gpulaunch torchrun" CHECK=0
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --only) KINDS=$2; shift 2 ;;
    --check) CHECK=1; shift ;;
    *) echo "run_stop_spread: unknown option $1" >&2; exit 64 ;;
  esac
done
RUN="$BUILD/launcher/gpulaunch-run"
PROG="$BUILD/tests/launcher/gpl_testprog"
need "$GPULAUNCH" "$RUN" "$PROG"
PY=/usr/bin/python3
"$PY" -c 'import torch.distributed' 2>/dev/null || { echo "run_stop_spread: no PyTorch for $PY" >&2; exit 69; }
TRAIN="$ROOT/tests/torch/elastic_train.py"
# Debian's torchrun 1.13 on Python 3.11 needs its log redirection set (tests/torch/test_torch.sh).
TORCHRUN=(/usr/bin/python3 -m torch.distributed.run --redirects 2 --tee 2)

# one LAUNCHER: start, wait for 15 steps, SIGTERM the launcher, wait; prints "n spread_ms delay_ms"
one() {
  local kind=$1 d="$TMP/run" pid t0 i
  rm -rf "$d" && mkdir -p "$d/ckpt"
  local args=(--ckpt-dir "$d/ckpt" --steps 100000 --step-seconds 0.05 --every 0 --timeout 60)
  if [[ $kind == gpulaunch ]]; then
    GPULAUNCH_MPIRUN=mpirun "$RUN" -np 4 --oversubscribe --bind-to none "$GPULAUNCH" -- "$PY" "$TRAIN" "${args[@]}" \
      >"$d/out" 2>"$d/err" &
  else
    "${TORCHRUN[@]}" --standalone --nproc_per_node 4 "$TRAIN" "${args[@]}" >"$d/out" 2>"$d/err" &
  fi
  pid=$!
  for ((i = 0; i < 1200; i++)); do
    grep -q "step 15 world 4" "$d/out" 2>/dev/null && break
    sleep 0.05
  done
  t0=$(date +%s.%N)
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || true
  cat "$d"/ckpt/saved-* 2>/dev/null | awk -v t0="$t0" -v n="$(find "$d/ckpt" -name 'saved-*' | wc -l)" '
    $2 > 0 && !k++ { a = $2; b = $2 } $2 > 0 { if ($2 < a) a = $2; if ($2 > b) b = $2 }
    END { if (!k) { print n, "nan", "nan"; exit } printf "%d %.2f %.1f\n", n, (b - a) * 1000, (b - t0) * 1000 }'
}

# one_c KIND: the C program; prints "n spread_ms delay_ms" as one does
one_c() {
  local kind=$1 d="$TMP/runc" pid t0 i
  rm -rf "$d" && mkdir -p "$d"
  if [[ $kind == gpulaunch ]]; then
    GPL_TEST_DIR=$d GPULAUNCH_MPIRUN=mpirun "$RUN" -np 4 --oversubscribe --bind-to none -x GPL_TEST_DIR "$GPULAUNCH" -- \
      "$PROG" signals 60 >"$d/out" 2>"$d/err" &
  else
    GPL_TEST_DIR=$d "${TORCHRUN[@]}" --standalone --nproc_per_node 4 --no_python "$PROG" signals 60 >"$d/out" 2>"$d/err" &
  fi
  pid=$!
  for ((i = 0; i < 600; i++)); do
    [[ $(find "$d" -name 'ready.*' | wc -l) -ge 4 ]] && break
    sleep 0.05
  done
  sleep 0.5
  t0=$(date +%s.%N)
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || true
  cat "$d"/SIGTERM.* 2>/dev/null | awk -v t0="$t0" -v n="$(find "$d" -name 'SIGTERM.*' | wc -l)" '
    NR == 1 { a = $1; b = $1 } { if ($1 < a) a = $1; if ($1 > b) b = $1 }
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
  for kind in $KINDS; do
    one_c "$kind" >>"$TMP/$kind.c.txt"
    one "$kind" >>"$TMP/$kind.txt"
  done
done
echo "| launcher | C program: SIGTERM spread as delivered, median (max) ms | kill to last SIGTERM, median ms |"
echo "|---|---:|---:|"
for kind in $KINDS; do
  f="$TMP/$kind.c.txt"
  label=$([[ $kind == gpulaunch ]] && echo "gpulaunch-run -np 4 gpulaunch --" || echo "torchrun --standalone --nproc_per_node 4")
  echo "| $label | $(awk '$2 != "nan" { print $2 }' "$f" | median) ($(awk '$2 != "nan" { print $2 }' "$f" | sort -g | tail -1)) | $(awk '$3 != "nan" { print $3 }' "$f" | median) |"
done
echo
echo "| launcher | DDP: runs with 4/4 checkpoints | SIGTERM spread as Python saw it, median (max) ms | kill to last SIGTERM, median ms |"
echo "|---|---:|---:|---:|"
for kind in $KINDS; do
  f="$TMP/$kind.txt"
  full=$(awk '$1 == 4' "$f" | wc -l)
  med=$(awk '$2 != "nan" { print $2 }' "$f" | median)
  mx=$(awk '$2 != "nan" { print $2 }' "$f" | sort -g | tail -1)
  del=$(awk '$3 != "nan" { print $3 }' "$f" | median)
  label=$([[ $kind == gpulaunch ]] && echo "gpulaunch-run -np 4 gpulaunch --" || echo "torchrun --standalone --nproc_per_node 4")
  echo "| $label | $full of $REPS | $med ($mx) | $del |"
done
if [[ $CHECK == 1 && $KINDS == *gpulaunch* ]]; then
  full=$(awk '$1 == 4' "$TMP/gpulaunch.txt" | wc -l)
  [[ $full == "$REPS" ]] || { echo "FAIL: every checkpoint written in $full of $REPS stops"; exit 1; }
  echo "ok - every checkpoint written in $REPS of $REPS stops"
fi
