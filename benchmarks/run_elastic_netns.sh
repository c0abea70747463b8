#!/usr/bin/env bash
# Elastic training across network-namespace hosts (issue 28), gpulaunch against torchrun's elastic
# mode on the same hosts and the same PyTorch (gloo) DDP script (tests/torch/elastic_train.py:
# resumes from its checkpoint, saves one every 10 steps and on SIGTERM; process-group timeout
# --timeout, 30 s): N hosts x 2 ranks, the last host's link cut once rank 0 took 30 steps; the
# time from the cut to the first step at the smaller size, and the steps redone. gpulaunch:
# `gpulaunch-run --nodes 2:N --hostfile` on h0 with the default liveness_timeout (10 s); torchrun:
# one agent per host, `--nnodes 2:N --rdzv_backend c10d --rdzv_endpoint h0:29400 --max-restarts 10`.
# --event notice instead: a mock GCP metadata service in the last host (tests/launcher/preempt/
# mock_metadata.py, the real payload: instance/preempted TRUE) starts announcing its preemption
# once rank 0 took 30 steps, and the host's link is cut at the notice's deadline, 30 s later, as
# GCP ends the machine; gpulaunch polls it (`[preempt] notice = gcp`, notice_endpoint: the mock),
# torchrun has no such poll. The time from the notice to the first step at the smaller size, the
# steps redone, and (gpulaunch) from the notice to every rank's checkpoint written.
# Needs root (ip netns) and PyTorch for /usr/bin/python3. Alternated R times.
#   benchmarks/run_elastic_netns.sh [--build DIR] [--hosts N] [--reps R] [--timeout S]
#                                   [--event cut|notice] [--only gpulaunch|torchrun] [--keep DIR]
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
NH=4 REPS=2 PGTIMEOUT=30 LIMIT=${LIMIT:-200} KINDS="gpulaunch torchrun" KEEP="" EVENT=cut
DEADLINE=30 # GCP: the machine goes 30 s after the notice
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --hosts) NH=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --timeout) PGTIMEOUT=$2; shift 2 ;;
    --only) KINDS=$2; shift 2 ;;
    --event) EVENT=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;; # copy each run's output there
    *) echo "run_elastic_netns: unknown option $1" >&2; exit 64 ;;
  esac
done
[[ $EVENT == cut || $EVENT == notice ]] || { echo "run_elastic_netns: --event cut or notice" >&2; exit 64; }
RUN="$BUILD/launcher/gpulaunch-run"
MOCK="$ROOT/tests/launcher/preempt/mock_metadata.py"
need "$GPULAUNCH" "$RUN"
PY=/usr/bin/python3
"$PY" -c 'import torch.distributed' 2>/dev/null || { echo "run_elastic_netns: no PyTorch for $PY" >&2; exit 69; }
TRAIN="$ROOT/tests/torch/elastic_train.py"
unset NCCL_SOCKET_IFNAME
# shellcheck source=tests/netns/netns.sh
. "$ROOT/tests/netns/netns.sh"
netns_require
# mpirun's options as a user's (no short OOB keepalive of the harness): gpulaunch-run's own apply
NETNS_KEEPALIVE=0 NETNS_DECOYS=0 netns_setup "$NH" >/dev/null
# torchrun's rendezvous names hosts: each namespace gets an /etc/hosts of the test hosts (ip netns
# exec mounts /etc/netns/NS/hosts over /etc/hosts), removed at the end.
for h in "${NETNS_HOSTS[@]}"; do
  mkdir -p "/etc/netns/${NETNS_NS[$h]}"
  { echo "127.0.0.1 localhost"; for g in "${NETNS_HOSTS[@]}"; do echo "${NETNS_ADDR[$g]} $g"; done; } \
    >"/etc/netns/${NETNS_NS[$h]}/hosts"
done
cleanup() {
  netns_teardown
  for h in "${NETNS_HOSTS[@]}"; do rm -rf "/etc/netns/${NETNS_NS[$h]:-none}"; done
  rm -rf "$TMP"
}
trap cleanup EXIT
D=$NETNS_DIR
LAST=h$((NH - 1))
W=$((NH * 2)) W2=$(((NH - 1) * 2))
export GPULAUNCH_TIMEOUT=60 GLOO_SOCKET_IFNAME=eth0

steps_at() { cat "$D"/out.* 2>/dev/null | grep -c "^\(\[[^]]*\] \)\?step [0-9]* world $1 " || true; }
first_at() { { cat "$D"/out.* 2>/dev/null | grep -m1 "^\(\[[^]]*\] \)\?step [0-9]* world $1 " || true; } | sed 's/.* at //'; }
last_step_at() { { cat "$D"/out.* 2>/dev/null | grep "^\(\[[^]]*\] \)\?step [0-9]* world $1 " || true; } | sed 's/.*step \([0-9]*\) .*/\1/' | sort -n | tail -1; }
resumed_at() { { cat "$D"/out.* 2>/dev/null | grep -m1 "start rank 0 world $1 " || true; } | sed 's/.* step \([0-9]*\) at .*/\1/'; }
kill_all() { local h p; for h in "${NETNS_HOSTS[@]}"; do for p in $(ip netns pids "${NETNS_NS[$h]}"); do kill -KILL "$p" 2>/dev/null; done; done; sleep 1; }

# one KIND: prints "seconds_to_resume steps_redone seconds_to_all_checkpoints" (nan when it did not
# resume within LIMIT s; "-" when no checkpoint was written on a stop)
one() {
  local kind=$1 i t0 t1 args hosts="" cutter="" mport saved
  rm -rf "$D/ckpt" "$D"/out.* "$D/notice.trigger" "$D/mport" && mkdir -p "$D/ckpt"
  ip -n "${NETNS_NS[$LAST]}" link set "${NETNS_IF[$LAST]}" up
  args=(--ckpt-dir "$D/ckpt" --steps 100000 --step-seconds 0.1 --every 10 --timeout "$PGTIMEOUT")
  if [[ $EVENT == notice ]]; then
    # the mock on the last host's loopback (the other hosts' polls are refused: one warning each)
    netns_exec "$LAST" env MOCK_NOTICE_FILE="$D/notice.trigger" "$PY" "$MOCK" "$D/mport" "$D/mreq" "$D/macks" \
      0 10 100000 >/dev/null 2>&1 &
    for ((i = 0; i < 100; i++)); do [[ -s $D/mport ]] && break; sleep 0.1; done
    read -r mport _ <"$D/mport"
  fi
  if [[ $kind == gpulaunch ]]; then
    for h in "${NETNS_HOSTS[@]}"; do hosts+="$h slots=2"$'\n'; done
    printf '%s' "$hosts" >"$D/elastic.hosts"
    local cmd=("$PY" "$TRAIN" "${args[@]}")
    printf '[job]\ncommand = %s\n' "${cmd[*]}" >"$D/job.conf"
    [[ $EVENT == notice ]] && printf '[preempt]\nnotice = gcp\nnotice_endpoint = http://127.0.0.1:%s/gcp\n' "$mport" >>"$D/job.conf"
    MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun netns_mpirun --hostfile "$D/elastic.hosts" --nodes "2:$NH" \
      "$GPULAUNCH" "$D/job.conf" >"$D/out.h0" 2>"$D/err.h0" &
  else
    for h in "${NETNS_HOSTS[@]}"; do
      netns_exec "$h" env GLOO_SOCKET_IFNAME="${NETNS_IF[$h]}" "$PY" -m torch.distributed.run --redirects 2 --tee 2 --nnodes "2:$NH" \
        --nproc_per_node 2 --rdzv_backend c10d --rdzv_endpoint "${NETNS_ADDR[h0]}:29400" --rdzv_id bench \
        --max_restarts 10 --monitor_interval 1 "$TRAIN" "${args[@]}" >"$D/out.$h" 2>"$D/err.$h" &
    done
  fi
  for ((i = 0; i < 1800; i++)); do [[ $(steps_at "$W") -ge 30 ]] && break; sleep 0.1; done
  t0=$(date +%s.%N)
  if [[ $EVENT == notice ]]; then
    touch "$D/notice.trigger"
    (sleep "$DEADLINE" && netns_link_down "$LAST") &
    cutter=$!
  else
    netns_link_down "$LAST"
  fi
  for ((i = 0; i < LIMIT * 10; i++)); do [[ -n $(first_at "$W2") ]] && break; sleep 0.1; done
  t1=$(first_at "$W2")
  if [[ -n $t1 ]]; then
    local last from
    last=$(last_step_at "$W")
    from=$(resumed_at "$W2")
    # the last rank's checkpoint on the stop (elastic_train.py's saved-RANK: the step, SIGTERM's time)
    saved=0
    [[ $EVENT == notice ]] && saved=$(find "$D/ckpt" -name 'saved-*' -newer "$D/notice.trigger" | wc -l)
    if [[ $saved -ge $W ]]; then
      saved=$(echo "$(stat -c %.9Y "$D"/ckpt/saved-* | sort -n | tail -1) - $t0" | bc)
    else
      saved=-
    fi
    [[ $saved == - ]] || saved=$(printf '%.1f' "$saved")
    echo "$(printf '%.1f' "$(echo "$t1 - $t0" | bc)") $((${last:-0} - ${from:-0})) $saved"
  else
    echo "nan nan -"
  fi
  if [[ -n $cutter ]]; then
    kill "$cutter" 2>/dev/null || true
    wait "$cutter" 2>/dev/null || true
  fi
  kill_all
  if [[ -n $KEEP ]]; then mkdir -p "$KEEP/$kind.$r" && cp "$D"/out.* "$D"/err.* "$KEEP/$kind.$r/" 2>/dev/null || true; fi
}

what=$([[ $EVENT == cut ]] && echo "a host's link cut" || echo "a GCP preemption notice")
echo "### elastic training: $what, gpulaunch-run --nodes against torchrun --nnodes"
echo
machine
echo "- $NH namespace hosts x 2 ranks, tests/torch/elastic_train.py (gloo, 0.1 s steps, checkpoint"
if [[ $EVENT == cut ]]; then
  echo "  every 10 steps, process-group timeout ${PGTIMEOUT} s); the link of $LAST cut after 30 steps;"
else
  echo "  every 10 steps and on SIGTERM, process-group timeout ${PGTIMEOUT} s); after 30 steps the mock"
  echo "  metadata of $LAST announces its preemption, its link is cut ${DEADLINE} s later (the deadline);"
fi
echo "  $REPS runs of each, alternating; \"nan\": no step at the new size within $LIMIT s"
echo
show "benchmarks/run_elastic_netns.sh --hosts $NH --reps $REPS --timeout $PGTIMEOUT --event $EVENT"
echo
for ((r = 0; r < REPS; r++)); do
  for kind in $KINDS; do one "$kind" >>"$TMP/$kind.txt"; done
done
from=$([[ $EVENT == cut ]] && echo cut || echo notice)
echo "| launcher | $from to first step at $W2 ranks, s (each run) | median | steps redone (each run) | $from to every checkpoint written, s |"
echo "|---|---|---:|---|---|"
for kind in $KINDS; do
  f="$TMP/$kind.txt"
  label=$([[ $kind == gpulaunch ]] && echo "gpulaunch-run --nodes 2:$NH" || echo "torchrun --nnodes 2:$NH (c10d)")
  echo "| $label | $(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $1 }' "$f") | $(awk '$1 != "nan" { print $1 }' "$f" | median) | $(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $2 }' "$f") | $(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $3 }' "$f") |"
done
