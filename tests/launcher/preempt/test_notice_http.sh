#!/bin/bash
# The notice watcher over real HTTP: mock_metadata.py on 127.0.0.1 serves AWS (token flow), GCP,
# Azure and Alibaba (token flow, and normal mode without) answers that turn into a notice after two
# polls, AWS's rebalance recommendation, and slow, refused, reset, garbage and malformed ones; one
# notice_drive per case, all at once (polls are 5 s apart). Checked: the notice and its deadline,
# reported once; the token sent on every GET and fetched once; Azure's ack received with its body;
# every poll within its bound, a stop that cuts a slow request off; one warning per trouble.
#   test_notice_http.sh NOTICE_DRIVE MOCK_METADATA_PY
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../../lib.sh"
drive=${1:?notice_drive} mock=${2:?mock_metadata.py}

python3 "$mock" "$T/port" "$T/requests" "$T/acks" 2 10 110 &
mock_pid=$!
trap 'kill "$mock_pid" 2>/dev/null; rm -rf "$T"' EXIT
wait_for "$T/port" 20 || fail "the mock metadata service did not start"
read -r port closed <"$T/port"
base=http://127.0.0.1:$port

pids=()
case_() {
  local name=$1
  shift
  { rc=0; "$drive" "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?; echo $rc >"$T/$name.rc"; } &
  pids+=($!)
}
case_ aws --kind aws --endpoint "$base/aws" --expect terminate
case_ gcp --kind gcp --endpoint "$base/gcp/" --expect preempted
case_ azure --kind azure --endpoint "$base/azure" --expect preempt --ack
case_ alibaba --kind alibaba --endpoint "$base/alibaba" --expect terminate
case_ alibaba-normal --kind alibaba --endpoint "$base/alibaba-normal" --expect terminate
case_ aws-rebalance --kind aws --endpoint "$base/aws-rebalance" --rebalance --expect rebalance
# with the recommendation asked for, an interruption is still reported as one
case_ aws-and-rebalance --kind aws --endpoint "$base/aws-both" --rebalance --expect terminate
# polls at 0, 5 and 10 s, each cut at 1.5 s: the stop at 10.7 s falls in the third one's request
case_ slow --kind aws --endpoint "$base/slow" --timeout 1.5 --polls 2 --stop-at 10.7
case_ refused --kind gcp --endpoint "http://127.0.0.1:$closed" --polls 2
case_ aws-bad --kind aws --endpoint "$base/aws-bad" --polls 2
case_ gcp-bad --kind gcp --endpoint "$base/gcp-bad" --polls 2
case_ azure-bad --kind azure --endpoint "$base/azure-bad" --polls 2
case_ alibaba-bad --kind alibaba --endpoint "$base/alibaba-bad" --polls 2
case_ aws-rebalance-bad --kind aws --endpoint "$base/aws-rebalance-bad" --rebalance --polls 2
case_ garbage --kind alibaba --endpoint "$base/garbage" --polls 2
case_ reset --kind aws --endpoint "$base/reset" --rebalance --polls 2
wait "${pids[@]}"

all="aws gcp azure alibaba alibaba-normal aws-rebalance aws-and-rebalance slow refused aws-bad gcp-bad azure-bad"
all+=" alibaba-bad aws-rebalance-bad garbage reset"
for c in $all; do
  cp "$T/$c.out" "$T/out"
  cp "$T/$c.err" "$T/err"
  cat "$T/$c.out"
  assert_eq "$(cat "$T/$c.rc")" 0 "$c: notice_drive's checks"
done
pass "each case: what was expected reported, polls within their bound, a prompt stop"

# The notices as the clouds gave them.
assert_grep "$T/aws.out" '^notice cloud=aws action=terminate deadline=1796545320 id=aws:terminate:2026-12-06T08:22:00Z ' "aws"
assert_grep "$T/gcp.out" '^notice cloud=gcp action=preempted ' "gcp"
assert_grep "$T/azure.out" '^notice cloud=azure action=preempt deadline=1796545320 id=602d9444-d2cd-49c7-8624-8643e7171297 ' "azure"
assert_grep "$T/alibaba.out" '^notice cloud=alibaba action=terminate deadline=1796545320 id=alibaba:terminate:2026-12-06T08:22:00Z advisory=0 ' "alibaba"
assert_grep "$T/alibaba-normal.out" '^notice cloud=alibaba action=terminate deadline=1796545320 ' "alibaba, normal mode"
assert_grep "$T/aws-rebalance.out" '^notice cloud=aws action=rebalance deadline=1796545020 id=aws:rebalance:2026-12-06T08:17:00Z advisory=1 ' "aws rebalance"
assert_grep "$T/aws-and-rebalance.out" '^notice cloud=aws action=terminate .* advisory=0 ' "aws interruption with rebalance on"
pass "the notices: action, deadline and id of each cloud"

# AWS: every GET carried the token (no 401), fetched once for all polls; the notice after two 404s.
assert_nogrep "$T/requests" '^aws GET .* 401$' "aws: a GET without the token"
assert_eq "$(grep -c '^aws PUT /aws/latest/api/token 200$' "$T/requests")" 1 "aws: tokens fetched"
assert_eq "$(grep -c '^aws GET /aws/latest/meta-data/spot/instance-action 404$' "$T/requests")" 2 "aws: polls with nothing pending"
# GCP and Azure: their headers were sent (no 403/400).
assert_nogrep "$T/requests" '^(gcp|azure) .* (400|403)$' "gcp/azure: a request without the metadata header"
# Alibaba: the hardened mode's token fetched once and sent (no 403); normal mode: asked once, then
# GETs without it.
assert_eq "$(grep -c '^alibaba PUT /alibaba/latest/api/token 200$' "$T/requests")" 1 "alibaba: tokens fetched"
assert_nogrep "$T/requests" '^alibaba GET .* 403$' "alibaba: a GET without the token"
assert_eq "$(grep -c '^alibaba-normal PUT /alibaba-normal/latest/api/token 403$' "$T/requests")" 1 "alibaba normal mode: token asked"
assert_eq "$(grep -c '^alibaba GET /alibaba/latest/meta-data/instance/spot/termination-time 404$' "$T/requests")" 2 "alibaba: polls with nothing pending"
# the rebalance path is asked only while no interruption is pending
assert_eq "$(grep -c '^aws-rebalance GET /aws-rebalance/latest/meta-data/events/recommendations/rebalance 404$' "$T/requests")" 2 "aws-rebalance: polls with nothing pending"
pass "AWS token flow; GCP and Azure headers; Alibaba's token or none; AWS's rebalance path"

# Azure: the ack arrived, JSON, with this event's id; the other VM's event was never reported.
assert_eq "$(cat "$T/acks")" 'azure application/json {"StartRequests":[{"EventId":"602d9444-d2cd-49c7-8624-8643e7171297"}]}' "azure ack"
assert_grep "$T/requests" '^azure POST /azure/metadata/scheduledevents\?api-version=2020-07-01 200$' "azure ack request"
assert_nogrep "$T/azure.out" '0000-other' "azure: another VM's event"
pass "Azure's ack received with its body"

# Trouble: one warning per kind, however many polls failed.
warned() { grep -c "preemption notice ($2): $3" "$T/$1.err" || true; }
check_trouble() {
  local c=$1 cloud=$2 what=$3
  cp "$T/$c.err" "$T/err"
  assert_grep "$T/$c.out" '^polls=[0-9]+ failures=[2-9]' "$c: failed polls"
  assert_eq "$(warned "$c" "$cloud" "$what")" 1 "$c: warnings"
}
check_trouble slow aws "no answer from http://127.0.0.1:$port/slow/latest/api/token within 1.5 s"
check_trouble refused gcp "cannot reach http://127.0.0.1:$closed/"
check_trouble aws-bad aws "instance-action is not a JSON object"
check_trouble gcp-bad gcp "instance/preempted is neither TRUE nor FALSE: 'MAYBE'"
check_trouble azure-bad azure "scheduledevents is not an object with an Events list"
check_trouble alibaba-bad alibaba "spot/termination-time is not an ISO 8601 UTC time: '2026-12-06 08:22:00 maybe'"
check_trouble aws-rebalance-bad aws "the rebalance recommendation has a noticeTime that is not ISO 8601 UTC"
check_trouble garbage alibaba "request to http://127.0.0.1:$port/garbage/latest/api/token failed"
check_trouble reset aws "request to http://127.0.0.1:$port/reset/latest/api/token failed"
pass "slow, refused, reset, garbage and malformed answers: one warning each, polling goes on"
echo "$TESTS_RUN passed, 0 failed"
