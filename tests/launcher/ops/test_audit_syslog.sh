#!/bin/bash
# [audit] syslog = on: every audit line also reaches syslog(3) as it was chained. The syslog
# socket is a real one, contained: in a mount namespace of its own (unshare -m) /dev is a tmpfs
# with the real /dev's entries linked in, and /dev/log is a datagram socket this script listens
# on (what rsyslog or journald would hold). A job of one gpulaunch (no MPI) runs /bin/true: its
# start and end lines must arrive with facility authpriv, priority notice and ident gpulaunch,
# each the same text as the line in the file. Needs root (unshare -m); skips (77) without it.
set -euo pipefail
gpulaunch=${1:?usage: test_audit_syslog.sh GPULAUNCH}
dir=$(mktemp -d /tmp/gpl-ops-syslog-XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 700 "$dir"
if ! unshare -m true 2>/dev/null; then
  echo "SKIP: cannot make a mount namespace (unshare -m) here"
  exit 77
fi
printf '[job]\ncommand = /bin/true\n[audit]\nlog = %s/audit.log\nsyslog = on\n' "$dir" >"$dir/job.conf"
cat >"$dir/listen.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
open(sys.argv[2], "w").close()  # ready
s.settimeout(10)
with open(sys.argv[1], "ab") as out:
    for _ in range(int(sys.argv[3])):
        out.write(s.recv(1 << 20) + b"\n")
        out.flush()
PY
unshare -m bash -s "$dir" "$gpulaunch" <<'NS'
set -euo pipefail
dir=$1 gpulaunch=$2
mount --make-rprivate /
mkdir -p "$dir/realdev"
mount --rbind /dev "$dir/realdev"
mount -t tmpfs -o mode=755 tmpfs /dev
for e in "$dir"/realdev/*; do ln -s "$e" "/dev/${e##*/}"; done
python3 "$dir/listen.py" "$dir/got" "$dir/ready" 2 &
for _ in $(seq 1 100); do [ -f "$dir/ready" ] && break; sleep 0.05; done
"$gpulaunch" "$dir/job.conf"
wait
NS
python3 - "$dir/got" "$dir/audit.log" <<'PY'
import json, re, sys
got = [l for l in open(sys.argv[1], encoding="utf-8").read().split("\n") if l]
lines = [l for l in open(sys.argv[2], encoding="utf-8").read().split("\n") if l]
assert len(lines) == 2 and len(got) == 2, (lines, got)
for g, l in zip(got, lines):
    # RFC 3164 as glibc writes it: <PRI>TIMESTAMP gpulaunch[PID]: MESSAGE; authpriv = 10, notice = 5
    m = re.match(r"<(\d+)>\w{3} [ \d]\d \d\d:\d\d:\d\d gpulaunch\[(\d+)\]: (.*)$", g)
    assert m, g
    assert int(m.group(1)) == 10 * 8 + 5, m.group(1)
    assert m.group(3) == l, (m.group(3), l)
    assert json.loads(l)["prev"]
print("ok: the start and end lines reached syslog as authpriv.notice, the same text as the file")
PY
"$gpulaunch" audit verify "$dir/audit.log"
