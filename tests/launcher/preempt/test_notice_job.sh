#!/bin/bash
# A cloud's interruption notice ends a real job (issue 28): mpirun -np 4 gpulaunch with [preempt]
# notice = aws|azure against mock_metadata.py on 127.0.0.1 (the notice comes at the second poll,
# 5 s in). Checked: every program gets SIGTERM once, at one moment (spread reported, under 50 ms
# here), and writes its checkpoint within the grace; the job ends 75 naming the host and the
# notice; Azure's event is acknowledged with its EventId once the node's programs are done; the
# audit log records the notice (event "notice", its host and words) and its chain holds.
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

for cloud in aws azure; do
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
