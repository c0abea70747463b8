#!/bin/bash
# A cloud's interruption notice ends a real job (issue 28): mpirun -np 4 gpulaunch with [preempt]
# notice = aws|azure|alibaba against mock_metadata.py on 127.0.0.1 (the notice comes at the second
# poll, 5 s in). Checked: every program gets SIGTERM once, at one moment (spread reported, under
# 50 ms here), and writes its checkpoint within the grace; the job ends 75 naming the host and the
# notice; Azure's event is acknowledged with its EventId once the node's programs are done.
# AWS's rebalance recommendation with [preempt] rebalance = checkpoint: every program gets [job]
# checkpoint_signal once, at one moment, and the job goes on to its own end (0). Slow, garbage and
# reset answers: the job runs to its end (0), no signal. The audit log records each notice (event
# "notice", its host and words) and its chain holds.
#   test_notice_job.sh MOCK_METADATA_PY
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../../lib.sh"
mock=${1:?mock_metadata.py}

python3 "$mock" "$T/port" "$T/requests" "$T/acks" 1 10 110 &
mock_pid=$!
trap 'kill "$mock_pid" 2>/dev/null; rm -rf "$T"' EXIT
wait_for "$T/port" 20 || fail "the mock metadata service did not start"
read -r port _ <"$T/port"

cat >"$T/prog.sh" <<PROG
#!/bin/bash
trap 'date +%s.%N >"$T/sig.\$RANK"; sleep 0.5; echo saved >"$T/ckpt.\$RANK"; exit 0' TERM
while :; do sleep 0.1; done
PROG
chmod +x "$T/prog.sh"

for cloud in aws azure alibaba; do
  rm -f "$T"/sig.* "$T"/ckpt.* "$T/audit.log"
  printf '[job]\ncommand = %s\ngrace = 20s\n[preempt]\nnotice = %s\nnotice_endpoint = http://127.0.0.1:%s/%s\n[audit]\nlog = %s\n' \
    "$T/prog.sh" "$cloud" "$port" "$cloud" "$T/audit.log" >"$T/job.conf"
  run_mpi 4 "$GPULAUNCH" "$T/job.conf"
  assert_eq "$RC" 75 "$cloud: exit status"
  assert_grep "$T/err" "job preempted: interruption notice for host [^ ]+ \\(" "$cloud: the notice named"
  n=$(find "$T" -maxdepth 1 -name 'ckpt.*' | wc -l)
  assert_eq "$n" 4 "$cloud: checkpoints written"
  spread=$(cat "$T"/sig.* | sort -n | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.1f", (b - a) * 1000 }')
  assert_le "$spread" 50 "$cloud: ms between the first and the last program's SIGTERM"
  # the audit log records the notice (issue 35), chained
  assert_grep "$T/audit.log" '"event":"notice".*"notice_host":"[^"]+","notice":"[^"]+","seconds_left":' "$cloud: the notice in the audit log"
  "$GPULAUNCH" audit verify "$T/audit.log" >/dev/null || fail "$cloud: the audit log's chain does not hold"
  pass "$cloud notice: exit 75, 4/4 checkpoints, SIGTERM to the 4 programs within ${spread} ms, in the audit log"
done
assert_grep "$T/acks" "602d9444-d2cd-49c7-8624-8643e7171297" "azure: the event acknowledged"
pass "azure: the event acknowledged once the programs were done"

# The rebalance recommendation: SIGUSR1 once to each program at one moment, no SIGTERM, the job's
# own end. The programs run 14 s: the recommendation comes at the second poll (5 s) and stays posted.
cat >"$T/prog_ckpt.sh" <<PROG
#!/bin/bash
trap 'date +%s.%N >>"$T/usr1.\$RANK"' USR1
trap 'echo term >>"$T/term.\$RANK"; exit 3' TERM
end=\$((SECONDS + 14))
while [ \$SECONDS -lt \$end ]; do sleep 0.1; done
echo done >"$T/done.\$RANK"
PROG
chmod +x "$T/prog_ckpt.sh"
printf '[job]\ncommand = %s\ncheckpoint_signal = SIGUSR1\n[preempt]\nnotice = aws\nrebalance = checkpoint\nnotice_endpoint = http://127.0.0.1:%s/aws-rebalance\n' \
  "$T/prog_ckpt.sh" "$port" >"$T/job.conf"
run_mpi 4 "$GPULAUNCH" "$T/job.conf"
assert_eq "$RC" 0 "rebalance: exit status"
assert_eq "$(cat "$T"/done.* 2>/dev/null | wc -l)" 4 "rebalance: programs that ran to their end"
assert_eq "$(cat "$T"/usr1.* 2>/dev/null | wc -l)" 4 "rebalance: SIGUSR1s received (one per program)"
assert_eq "$(cat "$T"/term.* 2>/dev/null | wc -l)" 0 "rebalance: SIGTERMs received"
cat "$T/out" "$T/err" >"$T/both"
assert_grep "$T/both" "AWS rebalance recommendation posted at 2026-12-06T08:17:00Z \\(host [^ ]+\\): every program gets SIGUSR1 now" "rebalance: said once"
assert_eq "$(grep -c 'every program gets SIGUSR1 now' "$T/both")" 1 "rebalance: lines saying it"
spread=$(cat "$T"/usr1.* | sort -n | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.1f", (b - a) * 1000 }')
assert_le "$spread" 50 "rebalance: ms between the first and the last program's SIGUSR1"
pass "rebalance = checkpoint: SIGUSR1 once to the 4 programs within ${spread} ms, no SIGTERM, exit 0"

# Bad answers (slow, garbage, reset) never stop a job: three jobs at once, each 12 s (3 polls).
cat >"$T/prog_bad.sh" <<PROG
#!/bin/bash
sleep 12
echo done >"$T/bad.\$1.\$RANK"
PROG
chmod +x "$T/prog_bad.sh"
pids=()
for bad in slow garbage reset; do
  printf '[job]\ncommand = %s\n[preempt]\nnotice = %s\nrebalance = checkpoint\nnotice_endpoint = http://127.0.0.1:%s/%s\n' \
    "$T/prog_bad.sh $bad" "$([ "$bad" = garbage ] && echo alibaba || echo aws)" "$port" "$bad" >"$T/bad_$bad.conf"
  { rc=0; "$MPIEXEC" -np 2 --oversubscribe --bind-to none "$GPULAUNCH" "$T/bad_$bad.conf" >"$T/bad_$bad.out" 2>"$T/bad_$bad.err" || rc=$?
    echo $rc >"$T/bad_$bad.rc"; } &
  pids+=($!)
done
wait "${pids[@]}"
for bad in slow garbage reset; do
  cp "$T/bad_$bad.out" "$T/out"
  cp "$T/bad_$bad.err" "$T/err"
  assert_eq "$(cat "$T/bad_$bad.rc")" 0 "$bad answers: exit status"
  assert_eq "$(cat "$T"/bad."$bad".* 2>/dev/null | wc -l)" 2 "$bad answers: programs that ran to their end"
  assert_eq "$(grep -c 'preemption notice (a[a-z]*): ' "$T/err")" 1 "$bad answers: warnings"
done
pass "slow, garbage and reset answers: each job ran to its end (0), one warning each"
