#!/usr/bin/env bash
# Issue 35 item 4, "listeners bind the agreed address": gpulaunch-run's channel for rank 0 binds
# the address its host reaches the job's hosts from (and its other real networks, for a rank 0
# cut off the fabric: issue 34), not every address. 3 interface-rich hosts (NETNS_RICH: a
# routable management eno1 on 10.78.0.0/24 beside the fabric eth0, a docker0 bridge 172.17.0.1
# and a link-local usb0 169.254.3.1): gpulaunch-run on h0, ranks on h1 and h2 (their names
# resolve to fabric addresses). While the job runs, h0's listeners are the fabric address and
# eno1's; a connection to the channel's port on h0's docker0, usb0 or
# loopback address is refused, one from h1 to the fabric address is taken; the job ends with 0.
# `--listen ADDR` binds that address alone and `--listen any` every address (the operator's
# choice); a `--listen` that is not an address of the host is a usage error (64).
#   test_front_listen.sh GPULAUNCH_RUN
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_front_listen.sh GPULAUNCH_RUN}
source "$(dirname "$0")/../lib.sh"
netns_begin

NETNS_RICH=1 NETNS_DECOYS=0 netns_setup 3
T=$NETNS_DIR
export GPULAUNCH_TIMEOUT=30 MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun
cat >"$T/prog.sh" <<PROG
#!/bin/bash
touch "$T/up.\$RANK"
while [ ! -f "$T/finish" ]; do sleep 0.1; done
exit 0
PROG
chmod +x "$T/prog.sh"
printf '[job]\ncommand = %s\n' "$T/prog.sh" >"$T/job.conf"
FAB=${NETNS_ADDR[h0]}
MGMT=$(ip -n "${NETNS_NS[h0]}" -4 -br addr show dev eno1 | awk '{print $3}' | cut -d/ -f1)
[ -n "$MGMT" ] || { echo "FAIL: h0 has no eno1 address"; exit 1; }

# The channel's listeners on h0: "ADDR:PORT" of each of gpulaunch-run's listening sockets.
front_listeners() { ip netns exec "${NETNS_NS[h0]}" ss -Hltnp | awk '/"gpulaunch-run"/ {print $4}' | sort; }
# refused_on_h0 ADDR PORT: 0 when a connection from h0 itself to ADDR:PORT is refused.
refused_on_h0() { ! ip netns exec "${NETNS_NS[h0]}" timeout 3 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }
# reach HOST ADDR PORT: 0 when a TCP connection from HOST to ADDR:PORT is taken.
reach() { ip netns exec "${NETNS_NS[$1]}" timeout 3 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null; }
run_job() { # extra gpulaunch-run options...: the job in the background, up on 4 ranks
  rm -f "$T"/up.* "$T/finish" "$T/done"
  (RC=0
   GPULAUNCH_LOG=info netns_mpirun "$@" -np 4 --host h1:2,h2:2 "$GPULAUNCH" "$T/job.conf" \
     >"$T/out" 2>"$T/err" || RC=$?
   echo "$RC" >"$T/done") &
  for _ in $(seq 1 300); do
    [ "$(find "$T" -maxdepth 1 -name 'up.*' | wc -l)" -ge 4 ] && return 0
    [ -f "$T/done" ] && break
    sleep 0.1
  done
  bad "the job did not start"
  return 1
}
end_job() {
  touch "$T/finish"
  wait_done 40 || bad "the job did not end within 40 s"
  read -r rc <"$T/done"
  [ "$rc" = 0 ] || bad "the job: exit $rc"
}

# 1. The default: h0's fabric address and its other real network (eno1); not docker0, usb0, lo.
if run_job; then
  ls=$(front_listeners)
  port=$(head -n 1 <<<"$ls" | sed 's/.*://')
  want=$(printf '%s:%s\n%s:%s\n' "$FAB" "$port" "$MGMT" "$port" | sort)
  [ "$ls" = "$want" ] || bad "gpulaunch-run listens on $(tr '\n' ' ' <<<"$ls"), expected $FAB:$port and $MGMT:$port"
  reach h1 "$FAB" "$port" || bad "h1 cannot reach the channel at $FAB:$port"
  for a in 172.17.0.1 169.254.3.1 127.0.0.1; do
    refused_on_h0 "$a" "$port" || bad "the channel is reachable on h0's $a:$port"
  done
  end_job
  grep -q "listens on $FAB: the address this host reaches the 2 other host(s) named from; then $MGMT (eno1)" "$T/err" ||
    bad "no info line naming the rule"
  [ "$FAILED" = 0 ] && pass "gpulaunch-run's channel on $FAB:$port and $MGMT:$port only: docker0, usb0 and loopback refused, the job ran (rc 0)"
fi

# 2. --listen ADDR: that address alone.
if run_job --listen "$FAB"; then
  ls=$(front_listeners)
  port=${ls##*:}
  [ "$ls" = "$FAB:$port" ] || bad "--listen $FAB: listens on $(tr '\n' ' ' <<<"$ls")"
  ! reach h1 "$MGMT" "$port" || bad "--listen $FAB: the channel is reachable on $MGMT:$port"
  end_job
  [ "$FAILED" = 0 ] && pass "--listen $FAB: that address alone ($MGMT:$port refused), the job ran"
fi

# 3. --listen any: every address (the operator's choice); a --listen not of this host: 64.
if run_job --listen any; then
  l=$(front_listeners)
  case ${l%:*} in 0.0.0.0 | \*) ;; *) bad "--listen any: listens on $l" ;; esac
  reach h1 "$MGMT" "${l##*:}" || bad "--listen any: $MGMT not reachable"
  end_job
  [ "$FAILED" = 0 ] && pass "--listen any: every address ($l), the job ran"
fi
RC=0
netns_mpirun --listen 192.0.2.7 -np 2 --host h1:2 "$GPULAUNCH" "$T/job.conf" >"$T/out" 2>"$T/err" || RC=$?
[ "$RC" = 64 ] || bad "--listen 192.0.2.7: exit $RC, expected 64"
grep -q -- "--listen 192.0.2.7: not an IPv4 address of this host" "$T/err" || bad "--listen 192.0.2.7: no clear error"
[ "$FAILED" = 0 ] && pass "--listen 192.0.2.7 (not h0's): usage error 64"
exit "$FAILED"
