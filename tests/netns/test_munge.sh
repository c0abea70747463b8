#!/usr/bin/env bash
# Issue 35, the job key's MUNGE source across hosts: gpulaunch-run on a head node h0, ranks on h1
# and h2 (2 each), one munged of the test's own whose socket every namespace host sees (the file
# system is shared: the hosts share one munged, so the second host's decode is munged's
# "replayed", which gpulaunch accepts: docs/security.md). [security] require = strict starts the
# job with the key from MUNGE (no warning: nothing of the key crossed the fabric), and refuses
# (exit 79) with munge = off, where the key would be handed over to the other hosts. A capture on
# the job's bridge holds the credential, never the key (where tcpdump is installed). Then a munged
# per host (h2's own, through /etc/netns): one munge.key runs; another munge.key on h2 names h2
# (exit 79).
#   test_munge.sh GPULAUNCH_RUN TESTPROG
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_munge.sh GPULAUNCH_RUN TESTPROG}
PROG=${2:?usage: test_munge.sh GPULAUNCH_RUN TESTPROG}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "${GPL_BUILD_MUNGE:-0}" != 1 ] || ! command -v munged >/dev/null || ! command -v mungekey >/dev/null; then
  echo "SKIP: needs a build with MUNGE (libmunge-dev) and Debian's munged, mungekey"
  exit 77
fi
source "$HERE/../lib.sh"
netns_begin

NETNS_DECOYS=0 netns_setup 3
T=$NETNS_DIR
export GPULAUNCH_TIMEOUT=30 MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun

M=$(mktemp -d /tmp/gplmunge.XXXXXX)
chmod 755 "$M"
mungekey -c -k "$M/key" -b 1024 >/dev/null
chmod 600 "$M/key"
munged --socket="$M/socket" --key-file="$M/key" --pid-file="$M/pid" --log-file="$M/log" --seed-file="$M/seed" ||
  { echo "FAIL: munged did not start: $(tail -3 "$M/log")"; exit 1; }
# Case 3's munged of h2 and its folders (ip netns exec binds /etc/netns/NS/DIR over /etc/DIR).
D=/etc/gplmunge-$NETNS_ID
D2=/etc/netns/${NETNS_NS[h2]}/gplmunge-$NETNS_ID
cleanup() {
  local p
  local f i
  for f in "$M/pid" "$M/pid2" "$M/pid3"; do # each munged ends (it writes its seed file) before rm
    p=$(cat "$f" 2>/dev/null) || continue
    kill "$p" 2>/dev/null || continue
    for ((i = 0; i < 50; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$M" "$D" "$D2"
  netns_teardown
}
trap cleanup EXIT
export GPULAUNCH_MUNGE_SOCKET=$M/socket

printf '[job]\ncommand = %s env\n[security]\nrequire = strict\n[audit]\nlog = %s\n' "$PROG" "$T/audit.log" >"$T/strict.conf"
for h in h1 h2; do echo "$h slots=2"; done >"$T/job.hosts"

# 1. MUNGE, strict: the job runs; rank 0 says MUNGE; no handed-over warning; the audit log too.
CAP=""
if command -v tcpdump >/dev/null; then
  ip netns exec "${NETNS_NS[h1]}" tcpdump -i eth0 -w "$T/cap.pcap" -U tcp 2>/dev/null &
  CAP=$!
  sleep 0.5
fi
RC=0
GPULAUNCH_LOG=info netns_mpirun -np 4 --hostfile "$T/job.hosts" -x GPULAUNCH_LOG "$GPULAUNCH" "$T/strict.conf" \
  >"$T/out" 2>"$T/err" || RC=$?
if [ -n "$CAP" ]; then
  sleep 0.3
  kill "$CAP" 2>/dev/null || true
  wait "$CAP" 2>/dev/null || true
fi
[ "$RC" = 0 ] || bad "MUNGE, require = strict, 2 hosts: exit $RC"
grep -q "job key from MUNGE" "$T/err" || bad "rank 0 does not say MUNGE"
! grep -q "handed over" "$T/err" || bad "a handed-over warning with MUNGE"
grep -q '"event":"end".*"key_source":"MUNGE"' "$T/audit.log" || bad "the audit log's end line does not say MUNGE"
[ "$(grep -c ' ENV RANK=' "$T/out")" = 4 ] || bad "not 4 programs ran"
# The capture (h1's side of the launch: Open MPI's daemons and MPI carry the environment) may
# hold the credential; it must not hold the key. The key: the credential's payload, which root
# (the test's uid, the job's) may have munged decode.
if [ -n "$CAP" ] && [ -s "$T/cap.pcap" ]; then
  cred=$(tcpdump -r "$T/cap.pcap" -A 2>/dev/null | grep -ao 'MUNGE:[A-Za-z0-9+/=]*:' | head -n 1 || true)
  if [ -n "$cred" ]; then
    printf '%s' "$cred" | unmunge -S "$M/socket" -o "$T/payload" -m /dev/null 2>/dev/null || true
    key=$(od -An -v -tx1 -j 21 -N 32 "$T/payload" 2>/dev/null | tr -d ' \n')
    [ "${#key}" = 64 ] || bad "the credential seen on the wire does not carry a job key"
    hexcap=$(od -An -v -tx1 "$T/cap.pcap" | tr -d ' \n')
    case $hexcap in *"$key"*) bad "the job key's bytes are in the capture" ;; esac
    tcpdump -r "$T/cap.pcap" -A 2>/dev/null | grep -q "GPULAUNCH_JOB_KEY" && bad "GPULAUNCH_JOB_KEY on the wire"
    pass "the capture on h1 holds the MUNGE credential (Open MPI's launch traffic), not the key"
  else
    pass "(the capture holds no credential in clear)"
  fi
fi
[ "$FAILED" = 0 ] && pass "gpulaunch-run on h0, ranks on h1 and h2 (one munged, replayed decodes accepted): key from MUNGE, require = strict accepts it"

# 2. munge = off, strict: the key would be handed over to other hosts: refused, exit 79.
printf '[job]\ncommand = %s env\n[security]\nrequire = strict\nmunge = off\n' "$PROG" >"$T/off.conf"
RC=0
netns_mpirun -np 4 --hostfile "$T/job.hosts" "$GPULAUNCH" "$T/off.conf" >"$T/out" 2>"$T/err" || RC=$?
[ "$RC" = 79 ] || bad "munge = off, require = strict: exit $RC, expected 79"
grep -q "require = strict: the job key was handed over" "$T/err" || bad "munge = off, strict: no clear error"
[ "$FAILED" = 0 ] && pass "munge = off: require = strict refuses the handed-over key (79)"

# 3. A munged per host, as on a cluster: h0 and h1 share the test's own (/etc/gplmunge-ID), h2 has
#    its own. With the same munge.key the job runs (no replay: h2's munged decodes it first); with
#    another munge.key on h2, h2 is named (exit 79) and h1 is not.
start_h2_munged() { # KEYFILE
  [ -r "$M/pid3" ] && kill "$(cat "$M/pid3")" 2>/dev/null && sleep 0.3
  rm -f "$D2/socket"
  munged --socket="$D2/socket" --key-file="$1" --pid-file="$M/pid3" --log-file="$M/log3" --seed-file="$M/seed3" ||
    { bad "h2's munged did not start: $(tail -3 "$M/log3")"; return 1; }
}
mkdir -m 755 "$D" "$D2"
munged --socket="$D/socket" --key-file="$M/key" --pid-file="$M/pid2" --log-file="$M/log2" --seed-file="$M/seed2" ||
  bad "munged at $D did not start"
mungekey -c -k "$M/key.other" -b 1024 >/dev/null
chmod 600 "$M/key.other"
if start_h2_munged "$M/key"; then
  RC=0
  GPULAUNCH_MUNGE_SOCKET=$D/socket GPULAUNCH_LOG=info netns_mpirun -np 4 --hostfile "$T/job.hosts" -x GPULAUNCH_LOG \
    "$GPULAUNCH" "$T/strict.conf" >"$T/out" 2>"$T/err" || RC=$?
  [ "$RC" = 0 ] || bad "a munged per host, one munge.key: exit $RC"
  grep -q "job key from MUNGE" "$T/err" || bad "a munged per host: rank 0 does not say MUNGE"
fi
if start_h2_munged "$M/key.other"; then
  RC=0
  GPULAUNCH_MUNGE_SOCKET=$D/socket netns_mpirun -np 4 --hostfile "$T/job.hosts" "$GPULAUNCH" "$T/strict.conf" \
    >"$T/out" 2>"$T/err" || RC=$?
  [ "$RC" = 79 ] || bad "another munge.key on h2: exit $RC, expected 79"
  grep -q "host h2: the job key's MUNGE credential: munged at $D/socket refused the job key's credential: Invalid credential" "$T/err" ||
    bad "another munge.key on h2: h2 not named"
  ! grep -q "host h1: the job key's MUNGE" "$T/err" || bad "another munge.key on h2: h1 named too"
fi
[ "$FAILED" = 0 ] && pass "a munged per host: one munge.key runs; another on h2: $(grep -m1 'host h2: the job key' "$T/err" | cut -c1-150)"

exit "$FAILED"
