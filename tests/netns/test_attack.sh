#!/usr/bin/env bash
# Issue 35: a fabric attacker against an elastic job. gpulaunch-run --nodes 3:3 on a head node h0,
# ranks on h1..h3 (2 each, rank 0 on h1), [security] key_file; h4 is on the job's bridge (put in
# hub mode: it sees every frame) and not in the job (tests/netns/attacker.py):
#  - it captures the whole job: no key, no token (this job's or an earlier one's), no readable
#    control frame; every gpulaunch connection is TLS records from its first byte;
#  - it replays each captured connection to its listener, forges HELLO/LOST/ABORT frames and
#    `tell`+`lost h2`, `hello`+`exit 0` lines with a guessed token and an earlier job's, holds
#    1,000 idle connections to each listener (each dropped within 2 s), runs `openssl s_client`
#    with -tls1_2 and with TLS 1.3 and no PSK; an unprivileged "other user" on h1 listens on the
#    loopback ports gpulaunch-run's port may take (rank 0 must never try them: gpulaunch-run is on
#    another host).
# Each time the job completes with rc 0, no restart. Then a wrong key_file on h2 alone: the job
# does not start, h2 named, exit 79.
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_attack.sh GPULAUNCH_RUN}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
netns_begin
ATT="python3 $HERE/attacker.py"

NETNS_DECOYS=0 netns_setup 5
T=$NETNS_DIR
export GPULAUNCH_TIMEOUT=30 MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun
# The bridge floods every frame to every port (a hub): the attacker sees the whole job.
ip -n "$NETNS_ID-sw" link set sw type bridge ageing_time 0
# gpulaunch-run's port comes from h0's ephemeral range, narrowed so that the "other user" on h1
# can listen on all of it.
netns_exec h0 sysctl -qw net.ipv4.ip_local_port_range="50000 50063"

head -c 48 /dev/urandom >"$T/job.key"
chmod 600 "$T/job.key"
cat >"$T/prog.sh" <<PROG
#!/bin/bash
touch "$T/up.\$RANK"
while [ ! -f "$T/finish" ]; do sleep 0.2; done
exit 0
PROG
chmod +x "$T/prog.sh"
printf '[job]\ncommand = %s\ngrace = 10s\nliveness_timeout = 5s\n[security]\nkey_file = %s\n[audit]\nlog = %s\n' \
  "$T/prog.sh" "$T/job.key" "$T/audit.log" >"$T/job.conf"
for h in h1 h2 h3; do echo "$h slots=2"; done >"$T/job.hosts"

count() { find "$T" -maxdepth 1 -name "$1" | wc -l; }
up6() { [ "$(count 'up.*')" -ge 6 ]; }
# mpirun's own listeners on h0 (Open MPI's out-of-band channel: Open MPI's traffic, out of scope
# in docs/security.md; its daemons' ports are 41000-42999), as "PORT-PORT," for --skip-ports.
mpirun_ports() {
  ip netns exec "${NETNS_NS[h0]}" ss -Hltnp | awk '/"mpirun"/ { n = split($4, a, ":"); printf "%s-%s,", a[n], a[n] }'
}
start_job() { # start_job RUN_ID: the elastic job in the background; "$T/done" gets its status
  rm -f "$T"/up.* "$T/finish" "$T/done" "$T/audit.log" "$T/front-audit.log"
  (RC=0
   GPULAUNCH_RUN_ID=$1 netns_mpirun --nodes 3:3 --hostfile "$T/job.hosts" --audit-log "$T/front-audit.log" \
     "$GPULAUNCH" "$T/job.conf" \
     >"$T/out" 2>"$T/err" || RC=$?
   echo "$RC" >"$T/done") &
}
finish_job() { # finish_job WHAT: the programs end; the job must complete with 0 and no restart
  touch "$T/finish"
  if ! wait_cmd 60 test -f "$T/done"; then
    bad "$1: the job did not end within 60 s"
    return
  fi
  local rc
  rc=$(cat "$T/done")
  [ "$rc" = 0 ] || { bad "$1: exit $rc, expected 0"; tail -20 "$T/err" >&2; }
  if grep -qi "restart\|lost" "$T/err"; then bad "$1: the job restarted or lost a host"; grep -i "restart\|lost" "$T/err" >&2; fi
}

# 1. Capture a whole job (the attacker sniffs from before the start to after the end).
netns_exec h4 $ATT sniff "${NETNS_IF[h4]}" "$T/cap.json" 40 >"$T/sniff.log" 2>&1 &
SNIFF=$!
sleep 1
start_job run-attack-1
if wait_cmd 60 up6; then
  SKIP1=$(mpirun_ports)
  sleep 3
  finish_job "captured job"
else
  bad "captured job: did not start"; tail -20 "$T/err" >&2
fi
wait "$SNIFF" || true
cat "$T/sniff.log"
if netns_exec h4 $ATT analyze "$T/cap.json" --key-file "$T/job.key" --run-id run-attack-1 \
  --old-run-id run-attack-0 --skip-ports "${SKIP1:-}41000-42999,22-22" >"$T/analyze.log" 2>&1; then
  pass "capture of a whole job: $(tail -1 "$T/analyze.log")"
else
  cat "$T/analyze.log" >&2
  bad "capture of a whole job: $(tail -1 "$T/analyze.log")"
fi

# 2. The attacks, against a running job (a second one: the listeners have new ports).
netns_exec h4 $ATT sniff "${NETNS_IF[h4]}" "$T/cap2.json" 12 >/dev/null 2>&1 &
SNIFF=$!
netns_exec h1 setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$HERE/attacker.py" fakefront 50000 50063 70 \
  >"$T/fake.log" 2>&1 &
FAKE=$!
sleep 1
start_job run-attack-2
if wait_cmd 60 up6; then
  wait "$SNIFF" || true
  # The listeners: those the capture shows, and (what a port scan finds) every TCP listener of
  # gpulaunch's on the job's hosts' fabric addresses (a leader's local children never cross the
  # bridge), outside Open MPI's ports.
  SKIP2=$(mpirun_ports)
  skip=" $(echo "$SKIP2" | tr ',' '\n' | cut -d- -f1 | tr '\n' ' ') "
  { netns_exec h4 $ATT listeners "$T/cap2.json" --skip-ports "${SKIP2}41000-42999,22-22"
    for h in h0 h1 h2 h3; do
      ip netns exec "${NETNS_NS[$h]}" ss -Hltn | awk '{print $4}' | grep "^${NETNS_ADDR[$h]}:" |
        awk -F: '$2 < 41000 || $2 > 42999' || true
    done; } | sort -u | while read -r l; do [[ $skip == *" ${l##*:} "* ]] || echo "$l"; done >"$T/listeners" || true
  front=$(grep "^${NETNS_ADDR[h0]}:" "$T/listeners" | head -1 || true)
  echo "listeners: $(tr '\n' ' ' <"$T/listeners")"
  [ -n "$front" ] || bad "attack: gpulaunch-run's listener not seen in the capture"
  [ "$(wc -l <"$T/listeners")" -ge 2 ] || bad "attack: fewer than 2 listeners seen"
  netns_exec h4 $ATT replay "$T/cap2.json" --skip-ports "${SKIP2}41000-42999,22-22" >"$T/replay.log" 2>&1 || true
  grep -q "replayed [1-9]" "$T/replay.log" || bad "attack: nothing replayed"
  while read -r l; do
    netns_exec h4 $ATT forge "$l" --key-file "$T/job.key" --old-run-id run-attack-1 >>"$T/forge.log" 2>&1 ||
      bad "attack: a forgery to $l was not refused"
    netns_exec h4 $ATT flood "$l" 1000 4 >>"$T/flood.log" 2>&1 || true
  done <"$T/listeners"
  cat "$T/replay.log" "$T/forge.log" "$T/flood.log"
  # Every idle connection closed by the listener, the last within 2 s (+ 0.5 s for this loaded
  # 2-core machine: the times count from before the attacker opened the first of its 1,000).
  while read -r line; do
    n=$(echo "$line" | awk '{print $1}')
    closed=$(echo "$line" | sed -n 's/.*: \([0-9]*\) closed.*/\1/p')
    last=$(echo "$line" | sed -n 's/.*the last after \([0-9.]*\) s.*/\1/p')
    [ "$closed" = "$n" ] || bad "flood: $line"
    [ -n "$last" ] && [ "$(echo "$last < 2.5" | bc)" = 1 ] || bad "flood: not all dropped within 2 s: $line"
  done < <(grep "idle connections" "$T/flood.log")
  if [ -n "$front" ]; then
    fip=${front%:*} fport=${front#*:}
    if netns_exec h4 sh -c "openssl s_client -connect $fip:$fport -tls1_2 </dev/null" >"$T/s12.log" 2>&1; then
      bad "openssl s_client -tls1_2 was accepted"
    fi
    if netns_exec h4 sh -c "openssl s_client -connect $fip:$fport -tls1_3 </dev/null" >"$T/s13.log" 2>&1 &&
      ! grep -q "alert\|error" "$T/s13.log"; then
      bad "openssl s_client -tls1_3 without the PSK was accepted"
    fi
    wrongpsk=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
    if netns_exec h4 sh -c "openssl s_client -connect $fip:$fport -tls1_3 -psk $wrongpsk -psk_identity gpulaunch/front </dev/null" \
      >"$T/spsk.log" 2>&1 && ! grep -q "alert\|error" "$T/spsk.log"; then
      bad "openssl s_client with a wrong PSK was accepted"
    fi
    grep -q "protocol version\|unsupported protocol\|no protocols available" "$T/s12.log" || bad "s_client -tls1_2: $(tail -2 "$T/s12.log")"
  fi
  sleep 2
  finish_job "attacked job"
  grep -q "failed authentication" "$T/err" || bad "attack: no authentication failure logged"
  grep "failed authentication" "$T/err" | head -5
  # The audit logs (the ranks' and gpulaunch-run's) record the attempts, a few lines per source
  # (not one per connection), and their chains hold.
  for f in "$T/audit.log" "$T/front-audit.log"; do
    n=$(grep -c '"auth_failure"' "$f" 2>/dev/null || true)
    [ "${n:-0}" -ge 1 ] || bad "audit: no auth_failure event in $(basename "$f")"
    [ "${n:-0}" -le 100 ] || bad "audit: $n auth_failure events in $(basename "$f"): one per connection?"
    "$GPULAUNCH" audit verify "$f" >/dev/null || bad "audit: $(basename "$f")'s chain does not hold"
  done
  grep -h '"auth_failure"' "$T/audit.log" "$T/front-audit.log" 2>/dev/null | head -3
else
  bad "attacked job: did not start"; tail -20 "$T/err" >&2
fi
kill "$FAKE" 2>/dev/null || true
wait "$FAKE" 2>/dev/null || true
cat "$T/fake.log"
grep -q "listening on [1-9]" "$T/fake.log" || bad "the fake gpulaunch-run could not listen"
if grep -q CONNECTION "$T/fake.log"; then bad "rank 0 connected to the fake gpulaunch-run on its loopback"; fi
[ "$FAILED" = 0 ] && pass "replay, forged HELLO/LOST/ABORT and lost/exit lines, 1000 idle connections per listener, TLS 1.2 and no-PSK handshakes, a fake gpulaunch-run on rank 0's loopback: refused, the job completed with 0"

# 3. A wrong key_file on h2 alone (ip netns exec binds /etc/netns/NS/FILE over /etc/FILE).
KF=/etc/gpl-attack-$NETNS_ID.key
cp "$T/job.key" "$KF"
chmod 600 "$KF"
mkdir -p "/etc/netns/${NETNS_NS[h2]}"
head -c 48 /dev/urandom >"/etc/netns/${NETNS_NS[h2]}/$(basename "$KF")"
chmod 600 "/etc/netns/${NETNS_NS[h2]}/$(basename "$KF")"
sed -i "s|^key_file = .*|key_file = $KF|" "$T/job.conf"
RC=0
netns_mpirun -np 6 --host h1:2,h2:2,h3:2 "$GPULAUNCH" "$T/job.conf" >"$T/out" 2>"$T/err" || RC=$?
rm -f "$KF"
rm -rf "/etc/netns/${NETNS_NS[h2]}"
[ "$RC" = 79 ] || bad "wrong key_file on h2: exit $RC, expected 79"
grep -q "job key of host(s) h2 differs" "$T/err" || { bad "wrong key_file on h2: h2 not named"; tail -5 "$T/err" >&2; }
[ "$FAILED" = 0 ] && pass "a wrong key_file on h2: $(grep -m1 'differs' "$T/err" | cut -c1-120)"

# 4. require = strict with a key handed over MPI (no key_file, two hosts): refused, exit 79; and
# tls = off: the job runs, one warning line says so.
printf '[job]\ncommand = /bin/true\n[security]\nrequire = strict\n' >"$T/strict.conf"
RC=0
netns_mpirun -np 2 --host h1:1,h2:1 "$GPULAUNCH" "$T/strict.conf" >"$T/out" 2>"$T/err" || RC=$?
[ "$RC" = 79 ] || bad "require = strict without key_file: exit $RC, expected 79"
grep -q "require = strict: the job key was handed over" "$T/err" || bad "require = strict: no clear error"
printf '[job]\ncommand = /bin/true\n[security]\ntls = off\n' >"$T/off.conf"
RC=0
netns_mpirun -np 2 --host h1:1,h2:1 "$GPULAUNCH" "$T/off.conf" >"$T/out" 2>"$T/err" || RC=$?
[ "$RC" = 0 ] || bad "tls = off: exit $RC"
[ "$(grep -c "tls = off" "$T/err")" = 1 ] || bad "tls = off: $(grep -c "tls = off" "$T/err") warning lines, expected 1"
[ "$FAILED" = 0 ] && pass "require = strict refused a handed-over key (79); tls = off ran with one warning line"

exit "$FAILED"
