#!/usr/bin/env bash
# Elastic membership with a real PyTorch (gloo) DDP script (issue 28): 4 netns hosts x 2 ranks,
# gpulaunch-run --nodes 2:4 on h0 with a hostfile, tests/torch/elastic_train.py, which saves its
# checkpoint every 10 steps and on SIGTERM and resumes from it. (a) h2's link cut mid-run: the job
# goes on with 3 hosts from the checkpoint and completes; (b) a mock AWS metadata service in h3
# announces h3's interruption: every rank's checkpoint is written, the job goes on with the other
# hosts from that step (no step lost) and completes. Prints the times from the cut / the notice to
# the first step at the new size.
#   test_elastic_torch.sh GPULAUNCH_RUN MOCK_METADATA_PY
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_elastic_torch.sh GPULAUNCH_RUN MOCK_METADATA_PY}
MOCK=${2:?usage: test_elastic_torch.sh GPULAUNCH_RUN MOCK_METADATA_PY}
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../lib.sh"
netns_begin
need_torch_python
TRAIN="$HERE/../torch/elastic_train.py"

NH=4 K=2
NETNS_DECOYS=0 netns_setup "$NH"
T=$NETNS_DIR
export GPULAUNCH_TIMEOUT=60 MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun
for h in h0 h1 h2 h3; do echo "$h slots=$K"; done >"$T/elastic.hosts"
mkdir -p "$T/ckpt"

# shellcheck disable=SC2317 # called through wait_cmd
steps_at() { grep -c "^\[[^]]*\] step [0-9]* world $1 " "$T/out" 2>/dev/null || true; }
# shellcheck disable=SC2317 # called through wait_cmd
stepping() { [ "$(steps_at "$1")" -ge "$2" ]; } # stepping WORLD N: rank 0 took N steps at WORLD
first_step_time() { grep -m1 "\] step [0-9]* world $1 " "$T/out" | sed 's/.* at //'; }
run_job() { # run_job CONF: gpulaunch-run in the background; "$T/done" gets its status
  rm -rf "$T/done" "$T/ckpt" && mkdir -p "$T/ckpt"
  (RC=0
   netns_mpirun --hostfile "$T/elastic.hosts" --nodes 2:4 --discovery-interval 1 "$GPULAUNCH" "$1" \
     >"$T/out" 2>"$T/err" || RC=$?
   echo "$RC" >"$T/done") &
}
conf() { # conf NAME STEPS [EXTRA]: the job's config
  printf '[job]\ncommand = %s %s --ckpt-dir %s --steps %s --step-seconds 0.1 --every 10 --timeout 20\ngrace = 20s\nliveness_timeout = 5s\n%s' \
    "$PY" "$TRAIN" "$T/ckpt" "$2" "${3:-}" >"$T/$1.conf"
}

# (a) a host's link cut.
conf cut 100
run_job "$T/cut.conf"
if wait_cmd 120 stepping 8 25; then
  t0=$(date +%s.%N)
  netns_link_down h2
  if wait_cmd 240 test -f "$T/done"; then
    rc=$(cat "$T/done")
    [ "$rc" = 0 ] || bad "cut: exit $rc, expected 0"
    grep -q "done rank 5 step 100 world 6" "$T/out" || bad "cut: the job did not complete at world 6"
    grep -q "restart 1: host h2 lost" "$T/err" || bad "cut: the restart's cause not said"
    t1=$(first_step_time 6)
    last8=$(grep "\] step [0-9]* world 8 " "$T/out" | tail -1 | sed 's/.*step \([0-9]*\) .*/\1/')
    from=$(grep -m1 "start rank 0 world 6" "$T/out" | sed 's/.* step \([0-9]*\) at .*/\1/')
    [ "$FAILED" = 0 ] && pass "torch, h2's link cut: first step at world 6 $(echo "$t1 - $t0" | bc)s after the cut; resumed from step $from, $((last8 - from)) steps redone; completed"
  else
    bad "cut: gpulaunch-run still runs 240 s after the cut"
  fi
else
  bad "cut: the job did not reach 25 steps at world 8"
fi
wait || true

# (b) a notice for h3 from a mock AWS metadata service inside h3 (its loopback: the other hosts'
# polls are refused, one warning each), given once the job steps at world 8 (MOCK_NOTICE_FILE: the
# notice's time is then 2 minutes ahead, as AWS gives; a fixed time went by and left 1 s of grace).
ip -n "${NETNS_NS[h2]}" link set "${NETNS_IF[h2]}" up
MOCK_NOTICE_FILE="$T/notice-now" netns_exec h3 python3 "$MOCK" "$T/mport" "$T/mreq" "$T/macks" 3 10 400 &
mock=$!
wait_cmd 20 test -s "$T/mport" || bad "notice: the mock did not start"
read -r mport _ <"$T/mport"
conf notice 150 "[preempt]
notice = aws
notice_endpoint = http://127.0.0.1:$mport/aws
"
run_job "$T/notice.conf"
wait_cmd 120 stepping 8 3 || bad "notice: the job did not reach 3 steps at world 8"
touch "$T/notice-now"
if wait_cmd 240 test -f "$T/done"; then
  rc=$(cat "$T/done")
  [ "$rc" = 0 ] || bad "notice: exit $rc, expected 0"
  n=$(find "$T/ckpt" -name 'saved-*' | wc -l)
  [ "$n" = 8 ] || bad "notice: $n of 8 ranks saved their checkpoint"
  read -r saved tsig <"$T/ckpt/saved-0" || saved=-1
  from=$(grep -m1 "start rank 0 world 6" "$T/out" | sed 's/.* step \([0-9]*\) at .*/\1/')
  [ "$from" = "$saved" ] || bad "notice: resumed from step $from, the checkpoint was at step $saved"
  grep -q "restart 1: host h3 announced its interruption" "$T/err" || bad "notice: the restart's cause not said"
  grep -q "done rank 5 step 150 world 6" "$T/out" || bad "notice: the job did not complete at world 6"
  t1=$(first_step_time 6)
  spread=$(cat "$T"/ckpt/saved-* | awk 'NR == 1 { a = $2; b = $2 } { if ($2 < a) a = $2; if ($2 > b) b = $2 } END { printf "%.1f", (b - a) * 1000 }')
  [ "$FAILED" = 0 ] && pass "torch, AWS notice for h3: SIGTERM to the 8 programs on 4 hosts within ${spread} ms, 8/8 checkpoints at step $saved, first step at world 6 from it (no step lost) $(echo "$t1 - $tsig" | bc)s after the SIGTERM, completed"
else
  bad "notice: gpulaunch-run still runs after 240 s"
fi
# The mock's lifetime (400 s) bounds it should the job hang; once the job ended it is not waited for.
kill "$mock" 2>/dev/null || true
wait || true
exit "$FAILED"
