#!/usr/bin/env bash
# The monitor, OOM root cause and audit log through gpulaunch itself: a replayed sample stream
# with one rank under 80% warns once and names it; a CUDA OOM in the output is the root cause
# with the peak memory seen; the audit log holds one line per start and end, mode 0600.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
DATA="$(cd "$(dirname "$0")/data" && pwd)"
export GPL_TEST_DIR="$T"

cat >"$T/mon.conf" <<CONF
[job]
command = $PROG sleep 2.5
[monitor]
replay = $DATA/four_ranks_one_low.jsonl
interval = 50ms
window = 60s
metrics = $T/metrics.jsonl
[audit]
log = $T/audit.log
CONF
run_mpi 4 "$GPULAUNCH" "$T/mon.conf" --summary "$T/s.json"
assert_eq "$RC" 0 "exit status"
n=$(grep -c "GPU busy stayed under 80%" "$T/err" || true)
assert_eq "$n" 1 "one low-utilisation warning"
assert_grep "$T/err" "under 80% for 60 s on rank 2 \(host [^)]*\) GPU 2" "the warning names rank 2"
assert_grep "$T/out" "^slowest rank: 2 " "summary names the slowest rank"
python3 - "$T/s.json" <<'PY' || fail "summary JSON: straggler"
import json, sys
m = json.load(open(sys.argv[1]))["monitor"]
assert m["straggler"]["rank"] == 2 and m["straggler"]["clear"], m["straggler"]
assert len(m["ranks"]) == 4
PY
[[ $(wc -l <"$T/metrics.jsonl") -gt 10 ]] || fail "metrics lines written"
pass "replayed stream: one warning naming rank 2, rank 2 named slowest in table and JSON"

# A program much shorter than the recording, at the default interval: the rest plays at the end.
cat >"$T/short.conf" <<CONF
[job]
command = $PROG sleep 0
[monitor]
replay = $DATA/four_ranks_one_low.jsonl
CONF
run_mpi 4 "$GPULAUNCH" "$T/short.conf"
assert_eq "$RC" 0 "short program: exit status"
n=$(grep -c "GPU busy stayed under 80%" "$T/err" || true)
assert_eq "$n" 1 "short program: one low-utilisation warning"
assert_grep "$T/out" "^slowest rank: 2 " "short program: summary names the slowest rank"
pass "a program shorter than the recording: the whole recording is judged"

mode=$(stat -c %a "$T/audit.log")
assert_eq "$mode" 600 "audit log mode"
assert_eq "$(wc -l <"$T/audit.log")" 2 "audit lines (start + end)"
python3 - "$T/audit.log" <<'PY' || fail "audit lines parse"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0].get("event") == "start" and lines[1].get("event") == "end", lines
assert lines[1].get("exit_status") == 0
PY
pass "audit log: one start and one end line, 0600"

# A CUDA out-of-memory error in the output: the root cause says so, with the peak memory.
cat >"$T/oom.sh" <<'SH'
#!/bin/sh
if [ "$RANK" = 1 ]; then
  sleep 0.6
  echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 79.15 GiB total capacity)" >&2
  exit 1
fi
sleep 30
SH
chmod +x "$T/oom.sh"
sed -e "s|^command = .*|command = $T/oom.sh|" "$T/mon.conf" >"$T/oom.conf"
run_mpi 4 "$GPULAUNCH" "$T/oom.conf"
assert_eq "$RC" 1 "exit status of the OOM job"
assert_grep "$T/err" "^gpulaunch: rank 1 \(host [^)]*\) exited with status 1: CUDA out of memory \(peak GPU memory seen [0-9]+ MiB\)" "OOM root cause"
[[ $(wc -l <"$T/audit.log") == 4 ]] || fail "audit: 2 more lines"
assert_grep "$T/audit.log" "CUDA out of memory" "audit end line has the root cause"
pass "CUDA OOM named in the root cause with the monitor's peak memory; audited"

# Every job is audited: a bench job, and a run that fails at start-up (no program to run).
cat >"$T/abench.conf" <<CONF
[bench]
minbytes = 64K
maxbytes = 64K
[audit]
log = $T/audit2.log
CONF
run_mpi 2 "$GPULAUNCH" bench "$T/abench.conf"
assert_eq "$RC" 0 "audited bench: exit status"
cat >"$T/anoprog.conf" <<CONF
[job]
command = $T/no-such-program
[audit]
log = $T/audit2.log
CONF
run_mpi 2 "$GPULAUNCH" "$T/anoprog.conf"
assert_eq "$RC" 71 "audited start-up failure: exit status"
python3 - "$T/audit2.log" <<'PY' || fail "audit of bench and of a start-up failure"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [(l["event"], l["mode"]) for l in lines] == [("start", "bench"), ("end", "bench"), ("start", "run"), ("end", "run")], lines
assert lines[1]["exit_status"] == 0 and lines[3]["exit_status"] == 71 and lines[3]["root_cause"], lines
PY
pass "bench jobs and start-up failures are audited too"

# gpulaunch's own reports carry no credential: the stderr lines quoted in the root cause, and
# `gpulaunch env` (by name, URL password, and a secret's value wherever it appears).
cat >"$T/leak.sh" <<'SH'
#!/bin/sh
if [ "$RANK" = 1 ]; then
  echo "HF_TOKEN=$HF_TOKEN" >&2
  echo "connecting to postgres://admin:pw-in-url-42@db:5432/x" >&2
  echo "token is $HF_TOKEN" >&2
  exit 3
fi
sleep 30
SH
chmod +x "$T/leak.sh"
export HF_TOKEN=hf_testSECRETvalue123
run_mpi 2 -x HF_TOKEN "$GPULAUNCH" -- "$T/leak.sh"
assert_eq "$RC" 3 "leaking rank: exit status"
sed -n '/last lines of rank 1/,$p' "$T/err" >"$T/tail"
assert_grep "$T/tail" "HF_TOKEN=<redacted>" "root cause: secret by name redacted"
assert_grep "$T/tail" "postgres://admin:<redacted>@db" "root cause: URL password redacted"
! grep -q "hf_testSECRETvalue123\|pw-in-url-42" "$T/tail" || fail "a credential in the root-cause report"
cat >"$T/sec.conf" <<CONF
[job]
command = /bin/echo --db postgres://u:pw-in-arg-42@h/x
[env]
MY_DB_URL = postgres://admin:pw-in-env-42@db/x
CONF
run_one "$GPULAUNCH" env "$T/sec.conf"
assert_eq "$RC" 0 "env of a config with credentials"
! grep -q "pw-in-arg-42\|pw-in-env-42\|hf_testSECRETvalue123" "$T/out" || fail "a credential in gpulaunch env's output"
assert_grep "$T/out" "MY_DB_URL=postgres://admin:<redacted>@db/x" "env: URL password redacted"
unset HF_TOKEN
pass "credentials redacted from the root-cause report and gpulaunch env"
