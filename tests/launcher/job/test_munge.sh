#!/usr/bin/env bash
# The job key's MUNGE source (issue 35, docs/security.md): a real munged of the test's own (its
# munge.key made here, its socket in the scratch folder, named by GPULAUNCH_MUNGE_SOCKET). Under
# gpulaunch-run and under plain mpirun the ranks take the key from a MUNGE credential: the
# credential, never the key, is in mpirun's environment and command line; the key is in no output
# or log; the log and the audit log say MUNGE; require = strict accepts it; munge = off and a
# munged that is gone fall back to a key handed over; a host that cannot decode it is named.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
RUN="$(dirname "$GPULAUNCH")/gpulaunch-run"
if [ "${GPL_BUILD_MUNGE:-0}" != 1 ] || ! command -v munged >/dev/null || ! command -v mungekey >/dev/null; then
  echo "SKIP: needs a build with MUNGE (libmunge-dev) and Debian's munged, mungekey"
  exit 77
fi

chmod 711 "$T" # munged wants its socket's folder reachable by all
M="$T/munge"
mkdir -m 755 "$M"
mungekey -c -k "$M/key" -b 1024 >/dev/null
chmod 600 "$M/key"
munged --socket="$M/socket" --key-file="$M/key" --pid-file="$M/pid" --log-file="$M/log" --seed-file="$M/seed" ||
  fail "munged did not start: $(tail -3 "$M/log")"
# The munged of the test end first (they write their seed files as they go), then the folders.
stop_munged() {
  local f p i
  for f in "$M/pid" "$M/b/pid"; do
    p=$(cat "$f" 2>/dev/null) || continue
    kill "$p" 2>/dev/null || continue
    for ((i = 0; i < 50; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$T" "$GPL_SCRATCH"
}
trap stop_munged EXIT
export GPULAUNCH_MUNGE_SOCKET="$M/socket"

# mpirun, seen from inside: its environment and command line, then the real one.
cat >"$T/mpirun" <<SH
#!/bin/sh
env > "$T/mpirun.env"
printf '%s\n' "\$@" > "$T/mpirun.argv"
exec "$MPIEXEC" "\$@"
SH
chmod +x "$T/mpirun"

cat >"$T/strict.conf" <<CONF
[job]
command = $PROG env
[security]
require = strict
[audit]
log = $T/audit.log
CONF

# 1. gpulaunch-run: the credential travels, the key does not.
GPULAUNCH_MPIRUN="$T/mpirun" GPULAUNCH_LOG=info run_one "$RUN" -np 3 --oversubscribe --bind-to none "$GPULAUNCH" "$T/strict.conf"
assert_eq "$RC" 0 "gpulaunch-run, MUNGE, require = strict: exit status"
assert_grep "$T/err" "security: TLS 1.3 PSK, job key from MUNGE" "rank 0 logs the source"
assert_grep "$T/mpirun.env" "^GPULAUNCH_KEY_SOURCE=munge$" "mpirun's environment: the source"
assert_grep "$T/mpirun.env" "^GPULAUNCH_MUNGE_CREDENTIAL=MUNGE:" "mpirun's environment: the credential"
assert_nogrep "$T/mpirun.env" "^GPULAUNCH_JOB_KEY=" "mpirun's environment: no key"
assert_grep "$T/mpirun.argv" "^GPULAUNCH_MUNGE_CREDENTIAL$" "mpirun -x the credential's name"
assert_nogrep "$T/mpirun.argv" "MUNGE:" "no credential on mpirun's command line"
assert_nogrep "$T/out" "ENV GPULAUNCH_(MUNGE_CREDENTIAL|JOB_KEY|KEY_SOURCE)=" "the program's environment: none of it"
# The key itself, as the credential carries it (root may decode it: the test runs as the job's
# uid): the 32 bytes after the payload's magic, in hex; nowhere in what the job wrote.
cred=$(sed -n 's/^GPULAUNCH_MUNGE_CREDENTIAL=//p' "$T/mpirun.env")
printf '%s' "$cred" | unmunge -S "$M/socket" -o "$T/payload" -m /dev/null 2>/dev/null || true
[[ -s "$T/payload" ]] || fail "unmunge could not read the job's credential"
key=$(od -An -v -tx1 -j 21 -N 32 "$T/payload" | tr -d ' \n')
assert_eq "${#key}" 64 "the key's hex length"
for f in "$T/out" "$T/err" "$T/audit.log" "$T/mpirun.env" "$T/mpirun.argv"; do
  assert_nogrep "$f" "$key" "the job key in ${f##*/}"
done
assert_grep "$T/audit.log" '"event":"end".*"key_source":"MUNGE"' "the audit log's end line: key_source MUNGE"
gpulaunch_audit=$("$GPULAUNCH" audit verify "$T/audit.log" 2>&1) || fail "audit verify: $gpulaunch_audit"
pass "gpulaunch-run: key from MUNGE, credential (not key) in mpirun's environment, key in no output, strict accepted"

# 2. Plain mpirun: rank 0 makes the credential and sends it over MPI; one decode per host.
GPULAUNCH_LOG=info run_mpi 3 "$GPULAUNCH" "$T/strict.conf"
assert_eq "$RC" 0 "mpirun, MUNGE: exit status"
assert_grep "$T/err" "job key from MUNGE" "mpirun: rank 0 logs the source"
assert_nogrep "$T/err" "handed over" "mpirun: no warning about a handed-over key"
pass "plain mpirun: key from MUNGE (rank 0's credential over MPI)"

# 3. [security] munge = off: handed over (one host: no warning); a munged that is gone: the same.
sed 's/^require = strict$/munge = off/' "$T/strict.conf" >"$T/off.conf"
GPULAUNCH_MPIRUN="$T/mpirun" GPULAUNCH_LOG=info run_one "$RUN" -np 2 --oversubscribe --bind-to none "$GPULAUNCH" "$T/off.conf"
assert_eq "$RC" 0 "munge = off: exit status"
assert_grep "$T/err" "job key from handed over" "munge = off: handed over"
assert_grep "$T/mpirun.env" "^GPULAUNCH_JOB_KEY=" "munge = off: the key handed over"
assert_nogrep "$T/mpirun.env" "^GPULAUNCH_MUNGE_CREDENTIAL=" "munge = off: no credential"
GPULAUNCH_MUNGE_SOCKET="$M/none" GPULAUNCH_LOG=info run_one "$RUN" -np 2 --oversubscribe --bind-to none "$GPULAUNCH" "$T/strict.conf"
assert_eq "$RC" 0 "no munged: exit status (one host: strict accepts)"
assert_grep "$T/err" "MUNGE source: no munged socket at $M/none" "no munged: said at info level"
assert_grep "$T/err" "job key from handed over" "no munged: handed over"
pass "munge = off, or no munged: the key is handed over"

# 4. The ranks cannot decode (their munged is another): the host is named, exit 79.
mkdir -m 755 "$M/b"
mungekey -c -k "$M/b/key" -b 1024 >/dev/null
chmod 600 "$M/b/key"
munged --socket="$M/b/socket" --key-file="$M/b/key" --pid-file="$M/b/pid" --log-file="$M/b/log" --seed-file="$M/b/seed" ||
  fail "the second munged did not start"
cat >"$T/mpirun2" <<SH
#!/bin/sh
GPULAUNCH_MUNGE_SOCKET="$M/b/socket" exec "$MPIEXEC" -x GPULAUNCH_MUNGE_SOCKET "\$@"
SH
chmod +x "$T/mpirun2"
GPULAUNCH_MPIRUN="$T/mpirun2" run_one "$RUN" -np 2 --oversubscribe --bind-to none "$GPULAUNCH" "$T/strict.conf"
assert_eq "$RC" 79 "another munge.key: exit status"
assert_grep "$T/err" "host [^ ]+: the job key's MUNGE credential: munged at $M/b/socket refused" "another munge.key: the host named"
pass "a host whose munged has another munge.key is named (exit 79): $(grep -m1 'MUNGE credential' "$T/err" | cut -c1-150)"
