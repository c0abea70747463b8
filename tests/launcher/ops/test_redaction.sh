#!/usr/bin/env bash
# Issue 14: no secret in anything gpulaunch prints or writes about a job: check, env, --summary,
# the audit log, the root cause (which quotes the program's stderr) and a diag bundle, for the
# names and forms that leaked (--hf_token VALUE, --pw=, --jwt VALUE, URL passwords, MYSQL_PWD,
# DOCKER_PASS, GITLAB_PAT, SENTRY_DSN, mysql -p VALUE; issue 19: a token as a URL's user name, a
# Slack webhook, bare sk-/ghp_/AKIA/xoxb- keys). Every secret holds "S3KRT"; the program's
# own output passes through as it is, so only gpulaunch's own lines are searched.
source "$(dirname "$0")/../../lib.sh"
PROG="$1" # (unused: the program here is sh)
: "$PROG"

cat >"$T/job.conf" <<CONF
[job]
command = sh -c 'echo "db is \$MYSQL_PWD and push with \$DOCKER_PASS as ghp_S3KRTd1" >&2; exit 3' sh
  --hf_token hf_S3KRTa1 --pw=S3KRTa2 --jwt S3KRTa3.x.y https://alice:S3KRTa4@git.example/x
  --user bob -p S3KRTa5
  https://ghp_S3KRTc1@github.com/o/r https://hooks.slack.com/services/T0/B0/S3KRTc2
  sk-proj-S3KRTc3xyz AKIAS3KRT00000000000 xoxb-S3KRTc5
[env]
MYSQL_PWD = S3KRTb1
DOCKER_PASS = S3KRTb2
GITLAB_PAT = glpat-S3KRTb3
SENTRY_DSN = https://S3KRTb4@o1.ingest.sentry.io/7
[audit]
log = $T/audit.log
CONF

no_secret() { # FILE WHAT: FILE holds no secret
  if grep -n "S3KRT" "$1" >"$T/leak"; then
    head -5 "$T/leak" >&2
    fail "$2 leaks a secret"
  fi
}

run_one "$GPULAUNCH" check "$T/job.conf"
assert_eq "$RC" 0 "check"
assert_grep "$T/out" "--hf_token '?<redacted>'? '?--pw=<redacted>'? --jwt '?<redacted>'? '?https://alice:<redacted>@" \
  "check shows the command, redacted"
cat "$T/out" "$T/err" >"$T/check.txt"
no_secret "$T/check.txt" "gpulaunch check"

run_mpi 2 "$GPULAUNCH" env "$T/job.conf"
assert_eq "$RC" 0 "env"
cat "$T/out" "$T/err" >"$T/env.txt"
assert_grep "$T/env.txt" "^MYSQL_PWD=<redacted>" "env shows MYSQL_PWD redacted"
no_secret "$T/env.txt" "gpulaunch env"

run_mpi 2 "$GPULAUNCH" "$T/job.conf" --summary "$T/summary.json"
assert_eq "$RC" 3 "the run fails with the program's status"
# gpulaunch's own lines: its messages and the root cause with the quoted tail (the program's
# lines themselves, prefixed [host:rank], pass through unchanged).
grep -v '^\[[^]]*:[0-9]*\] ' "$T/err" >"$T/own.txt" || true
assert_grep "$T/own.txt" "last lines of rank [01]'s stderr" "the root cause quotes the program"
assert_grep "$T/own.txt" "db is <redacted> and push with <redacted> as <redacted>" "the quoted tail is redacted"
no_secret "$T/own.txt" "the root cause and gpulaunch's messages"
no_secret "$T/summary.json" "--summary"
python3 -m json.tool "$T/summary.json" >/dev/null || fail "the redacted summary is not JSON"
while read -r line; do python3 -c 'import json,sys; json.loads(sys.argv[1])' "$line" ||
  fail "an audit line is not JSON: $line"; done <"$T/audit.log"
assert_grep "$T/summary.json" "--hf_token" "the summary has the command"
no_secret "$T/audit.log" "the audit log"
assert_grep "$T/audit.log" '"event":"end"' "the audit log has the end line"

run_one "$GPULAUNCH" diag "$T/job.conf" --out "$T/diag"
[[ -d $T/diag ]] || fail "no diag bundle"
if grep -rln "S3KRT" "$T/diag" >"$T/leak"; then
  cat "$T/leak" >&2
  fail "the diag bundle leaks a secret"
fi
if [[ -f $T/diag.tar.gz ]]; then
  tar -xzf "$T/diag.tar.gz" -O | grep -c "S3KRT" >"$T/n" || true
  assert_eq "$(cat "$T/n")" 0 "secrets in the diag tarball"
fi
pass "check, env, the root cause, --summary, the audit log and diag: no secret"

# Config errors never quote a secret: a secret-named [env] key whose '=' was forgotten, a bad
# typed value that equals an [env] secret, one that equals a secret-named environment variable.
printf '[job]\ncommand = /bin/true\n[env]\nHF_TOKEN Qw3rtyS3KRTvalue\n' >"$T/e1.conf"
printf '[job]\ncommand = /bin/true\nrestarts = Zx9S3KRTsecret\n[env]\nAPI_KEY = Zx9S3KRTsecret\n' >"$T/e2.conf"
printf '[job]\ncommand = /bin/true\ngrace = Pl8S3KRThidden\n' >"$T/e3.conf"
for f in e1 e2 e3; do
  MY_DB_PASSWORD=Pl8S3KRThidden run_one "$GPULAUNCH" check "$T/$f.conf"
  assert_eq "$RC" 65 "$f.conf: config error"
  assert_grep "$T/err" "$f.conf:[34]: " "$f.conf: the error names file:line"
  no_secret "$T/err" "$f.conf's error"
done
assert_grep "$T/err" "\[job\] grace: '<redacted>' is not a duration" "the key is named, its value hidden"
pass "config errors: no secret quoted (a forgotten '=', values equal to [env] and environment secrets)"
echo "$TESTS_RUN checks passed"
