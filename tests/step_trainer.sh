#!/bin/bash
# The elastic tests' trainer: a step every 0.2 s up to STEPS (the environment's, else the second
# argument, else 100); rank 0 keeps the last step in DIR/ckpt and every rank resumes from it; on
# SIGTERM every rank writes its step to DIR/saved.RANK and leaves with 0. Its first line says who
# it is (the tests grep it): start rank R world W restart N run ID host H step S at SECONDS
#   step_trainer.sh DIR [STEPS]
dir=${1:?usage: step_trainer.sh DIR [STEPS]}
steps=${STEPS:-${2:-100}}
step=$(cat "$dir/ckpt" 2>/dev/null || echo 0)
echo "start rank $RANK world $WORLD_SIZE restart ${TORCHELASTIC_RESTART_COUNT:-} run ${TORCHELASTIC_RUN_ID:-} host $(hostname) step $step at $(date +%s.%N)"
trap 'echo "$step" >"$dir/saved.$RANK"; exit 0' TERM
while [ "$step" -lt "$steps" ]; do
  sleep 0.2 &
  wait $!
  step=$((step + 1))
  [ "$RANK" = 0 ] && echo "$step" >"$dir/ckpt"
done
echo "done rank $RANK step $step"
