#!/usr/bin/env bash
# Issue 35, items 5 and 6, over 3 netns hosts x 2 ranks started by gpulaunch-run on h0:
# (1) gpulaunch-run --port-range: every TCP listener of gpulaunch and gpulaunch-run on every host
#     (sampled with `ss -ltnp` inside each namespace from start-up to the end: the preflight's,
#     the liveness tree's, gpulaunch-run's channel) and the program's MASTER_PORT lie in the range;
# (2) the audit log (one file for the three hosts, as on a shared file system) records the stop
#     (SIGTERM to gpulaunch-run: its own line, and rank 0's naming the gpulaunch-run channel and
#     its peer), `gpulaunch audit verify` holds on both logs and names the line after an edited
#     one (exit 79); in an elastic job (--nodes 2:3) h2's link cut is recorded as a "lost" event
#     naming h2 by rank 0 and as a "restart" event by gpulaunch-run;
# (3) a range too small (one port, which gpulaunch-run's channel takes) ends the job with an error
#     that names the range.
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_ports_audit.sh GPULAUNCH_RUN}
source "$(dirname "$0")/../lib.sh"
netns_begin

NETNS_DECOYS=0 netns_setup 3
T=$NETNS_DIR
HOSTS=h0:2,h1:2,h2:2
LO=45000 HI=45019
export GPULAUNCH_TIMEOUT=20
export MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun
chmod 700 "$T"
cat >"$T/prog.sh" <<PROG
#!/bin/bash
trap 'exit 0' TERM
echo "\$MASTER_PORT" >"$T/mp.\$RANK"
touch "$T/up.\$RANK"
while :; do sleep 0.1; done
PROG
chmod +x "$T/prog.sh"
printf '[job]\ncommand = %s\ngrace = 5s\nliveness_timeout = 4s\n[audit]\nlog = %s\n' "$T/prog.sh" \
  "$T/audit.log" >"$T/job.conf"

count() { find "$T" -maxdepth 1 -name "$1" | wc -l; }
# Every listening TCP port of gpulaunch or gpulaunch-run in every host, until "$T/done".
sample_listeners() {
  while [ ! -f "$T/done" ]; do
    for h in "${NETNS_HOSTS[@]}"; do
      ip netns exec "${NETNS_NS[$h]}" ss -ltnpH 2>/dev/null | grep -E '"gpulaunch(-run)?"' |
        awk -v h="$h" '{n = split($4, a, ":"); print h, a[n], $NF}' >>"$T/listeners" || true
    done
    sleep 0.05
  done
}
start_job() { # extra gpulaunch-run options...
  rm -f "$T"/up.* "$T"/mp.* "$T/done" "$T/listeners"
  sample_listeners &
  (netns_run 6 "$HOSTS" --mca btl_tcp_port_min_v6 43000 --mca btl_tcp_port_range_v6 100 "$@" "$GPULAUNCH" \
    "$T/job.conf"; echo "$RC" >"$T/done") &
  for _ in $(seq 1 300); do
    [ "$(count 'up.*')" -ge 6 ] && return 0
    [ -f "$T/done" ] && break
    sleep 0.1
  done
  bad "the job did not start"
  return 1
}
front_pid() { pgrep -f "^$RUN .*$T/job.conf" | head -1; }
kill_all() {
  pkill -KILL -f "^$RUN .*$T/job.conf" 2>/dev/null || true
  for h in "${NETNS_HOSTS[@]}"; do
    for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
  done
  wait 2>/dev/null || true
}

# 1 + 2. The range, the stop and the chain.
if start_job --port-range "$LO-$HI" --audit-log "$T/run-audit.log" -x GPULAUNCH_LOG=debug -x GPULAUNCH_LOG_SUBSYS=net; then
  sleep 1
  kill -TERM "$(front_pid)"
  wait_done 40 || bad "stop: gpulaunch-run did not return within 40 s"
  sleep 0.2
  read -r rc <"$T/done"
  [ "$rc" = 75 ] || bad "stop: exit $rc, expected 75"
  # Open MPI's own listeners in the ranks (its TCP BTL, v4 and v6) are in the ranges its own
  # options give (the harness's 41000-42999, 43000-43099 below): the rest are gpulaunch's.
  awk '$2 < 41000 || $2 > 43099' "$T/listeners" | sort -u >"$T/listeners.u"
  n=$(wc -l <"$T/listeners.u")
  out=$(awk -v lo=$LO -v hi=$HI '$2 < lo || $2 > hi' "$T/listeners.u")
  [ -z "$out" ] || bad "listeners outside $LO-$HI: $out"
  grep -q '"gpulaunch-run"' "$T/listeners.u" || bad "gpulaunch-run's channel was not seen listening"
  for h in h0 h1 h2; do grep -q "^$h .*\"gpulaunch\"" "$T/listeners.u" || bad "no gpulaunch listener seen on $h"; done
  # the preflight's listeners live a moment: their ports from the log (debug, subsystem net)
  pf=$(grep -o 'preflight: listening at port [0-9]*' "$T/err" | awk '{print $NF}' | sort -u | tr '\n' ' ')
  [ -n "$pf" ] || bad "no preflight listener in the log"
  for p in $pf; do [ "$p" -ge $LO ] && [ "$p" -le $HI ] || bad "preflight port $p outside $LO-$HI"; done
  mp=$(sort -u "$T"/mp.*)
  [ "$(echo "$mp" | wc -l)" = 1 ] && [ "$mp" -ge $LO ] && [ "$mp" -le $HI ] || bad "MASTER_PORT $mp not one port in $LO-$HI"
  [ "$FAILED" = 0 ] && pass "--port-range $LO-$HI: $n listeners seen on 3 hosts ($(awk '{print $1":"$2}' "$T/listeners.u" | tr '\n' ' ')) preflight ports $pf and MASTER_PORT $mp, all in the range"

  python3 - "$T/audit.log" "$T/run-audit.log" <<'PY' || bad "audit: the stop lines are not as expected"
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
run = [json.loads(l) for l in open(sys.argv[2])]
stops = [o for o in log if o["event"] == "stop" and o.get("rank") == 0]
assert stops, "rank 0 recorded no stop"
s = stops[0]
assert s["signal"] == "SIGTERM" and s["channel"] == "gpulaunch-run", s
assert s["peer"].startswith("10.77.0.1:") or s["peer"].startswith("127.0.0.1:"), s
assert [o["event"] for o in log if o["event"] in ("start", "end")] == ["start", "end"], log
rs = [o for o in run if o["event"] == "stop"]
assert rs and rs[0]["signal"] == "SIGTERM" and rs[0]["process"] == "gpulaunch-run", run
print("stop lines:", json.dumps(s), json.dumps(rs[0]))
PY
  for f in "$T/audit.log" "$T/run-audit.log"; do
    "$GPULAUNCH" audit verify "$f" >"$T/v.out" 2>&1 || bad "audit verify $f: $(cat "$T/v.out")"
  done
  # an edit of the start line (the job's user) is named at line 2
  sed -i '1s/"user":"[^"]*"/"user":"nobody"/' "$T/audit.log"
  vrc=0
  "$GPULAUNCH" audit verify "$T/audit.log" >"$T/v.out" 2>&1 || vrc=$?
  [ "$vrc" = 79 ] || bad "verify of an edited log: exit $vrc, expected 79"
  grep -q "$T/audit.log:2: the chain breaks here" "$T/v.out" || bad "verify did not name line 2: $(cat "$T/v.out")"
  [ "$FAILED" = 0 ] && pass "audit: the stop recorded by gpulaunch-run and by rank 0 (channel gpulaunch-run, its peer), both chains hold; an edited line 1 is named at line 2 (exit 79)"
fi
kill_all

# 2b. An elastic job (--nodes 2:3) loses h2: rank 0 records the loss, gpulaunch-run the restart on
# h0 and h1 (then its stop); both chains hold.
rm -f "$T/audit.log" "$T/run-audit.log" "$T/done" "$T"/up.*
printf 'h0 slots=2\nh1 slots=2\nh2 slots=2\n' >"$T/elastic.hosts"
(RC=0
 netns_mpirun --hostfile "$T/elastic.hosts" --nodes 2:3 --discovery-interval 1 --port-range "$LO-$HI" \
   --audit-log "$T/run-audit.log" "$GPULAUNCH" "$T/job.conf" >"$T/out" 2>"$T/err" || RC=$?
 echo "$RC" >"$T/done") &
for _ in $(seq 1 300); do [ "$(count 'up.*')" -ge 6 ] && break; sleep 0.1; done
[ "$(count 'up.*')" -ge 6 ] || bad "elastic: the job did not start"
rm -f "$T"/up.*
netns_link_down h2
for _ in $(seq 1 600); do [ "$(count 'up.*')" -ge 4 ] && break; sleep 0.1; done
[ "$(count 'up.*')" -ge 4 ] || bad "elastic: no relaunch on h0 and h1 within 60 s of h2's loss"
sleep 1
kill -TERM "$(front_pid)" 2>/dev/null || true
wait_done 40 || bad "elastic: gpulaunch-run did not return within 40 s of its SIGTERM"
python3 - "$T/audit.log" "$T/run-audit.log" <<'PY' || bad "elastic: the audit logs lack the loss or the restart"
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
run = [json.loads(l) for l in open(sys.argv[2])]
lost = [o for o in log if o["event"] == "lost"]
assert lost and "h2" in lost[0]["hosts"], log
rs = [o for o in run if o["event"] == "restart"]
assert rs and rs[0]["restart"] == 1 and "h2" in rs[0]["hosts_before"] and "h2" not in rs[0]["hosts_after"], run
assert any(o["event"] == "stop" for o in run), run
print("lost:", lost[0]["hosts"], "| restart:", rs[0]["cause"], rs[0]["hosts_before"], "->", rs[0]["hosts_after"])
PY
for f in "$T/audit.log" "$T/run-audit.log"; do
  "$GPULAUNCH" audit verify "$f" >"$T/v.out" 2>&1 || bad "audit verify $f: $(cat "$T/v.out")"
done
[ "$FAILED" = 0 ] && pass "elastic, h2 lost: rank 0 recorded the loss ($(grep -o '"hosts":"[^"]*"' "$T/audit.log" | head -1)), gpulaunch-run the restart ($(grep -o '"cause":"[^"]*"' "$T/run-audit.log" | head -1)); both chains hold"
kill_all
ip -n "${NETNS_NS[h2]}" link set "${NETNS_IF[h2]}" up

# 3. A range of one port: gpulaunch-run's channel takes it, the preflight then has none.
rm -f "$T/done" "$T"/up.*
netns_run 6 "$HOSTS" --port-range 45100-45100 "$GPULAUNCH" "$T/job.conf"
[ "$RC" != 0 ] || bad "a one-port range: the job succeeded"
grep -q "no free port in the port range 45100-45100" "$T/err" ||
  bad "a one-port range: no error naming the range"
[ "$FAILED" = 0 ] && pass "a one-port range: exit $RC, '$(grep -m1 -o 'no free port in the port range 45100-45100[^:]*' "$T/err")'"
exit "$FAILED"
