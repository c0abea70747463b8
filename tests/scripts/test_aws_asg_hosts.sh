#!/bin/bash
# scripts/aws-asg-hosts without AWS: a stand-in `aws` (AWS_CLI) replays the recorded answers of
# tests/data/aws/ and logs its arguments. Checked: only the InService, Healthy, running instances,
# as `ip:slots` (or DNS names), sorted by instance id; the instance ids asked for are exactly
# those; --nodes gives MinSize:MaxSize (2:10); an unknown group, a failing CLI and an answer that
# is not JSON each exit 1 with a message; every line in gpulaunch-run's `host:slots` form.
#   test_aws_asg_hosts.sh SOURCE_DIR
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
src=${1:?source dir}
script=$src/scripts/aws-asg-hosts
data=$src/tests/data/aws
cat >"$T/aws" <<STUB
#!/bin/bash
echo "\$*" >>"$T/calls"
case "\${AWS_STUB_MODE:-ok}" in
  fail) echo "An error occurred (AccessDenied) when calling the DescribeAutoScalingGroups operation: not authorized" >&2; exit 254 ;;
  garbage) echo "<html>proxy error</html>"; exit 0 ;;
esac
case "\$1 \$2" in
  "autoscaling describe-auto-scaling-groups") cat "$data/describe-auto-scaling-groups.json" ;;
  "ec2 describe-instances") cat "$data/describe-instances.json" ;;
  *) echo "stub: unexpected \$*" >&2; exit 2 ;;
esac
STUB
chmod +x "$T/aws"
export AWS_CLI=$T/aws

run_one "$script" --group gpu-train --slots 8 --region us-east-1
assert_eq "$RC" 0 "exit status"
assert_eq "$(cat "$T/out")" "$(printf '10.0.1.17:8\n10.0.1.23:8')" "hosts"
assert_eq "$(sed -n 1p "$T/calls")" "autoscaling describe-auto-scaling-groups --auto-scaling-group-names gpu-train --output json --region us-east-1" "first call"
assert_eq "$(sed -n 2p "$T/calls")" "ec2 describe-instances --instance-ids i-0a1b2c3d4e5f60718 i-0c1e2f3a4b5c6d7e8 --output json --region us-east-1" "second call: the healthy InService ids only"
# every line of gpulaunch-run's documented form: host:slots, a whole number > 0
while read -r l; do [[ $l =~ ^[^:[:space:]]+:[1-9][0-9]*$ ]] || fail "not a host:slots line: '$l'"; done <"$T/out"
pass "2 of 5 instances (InService, Healthy, running) as ip:8, sorted by instance id"

run_one "$script" --group gpu-train --address dns
assert_eq "$(cat "$T/out")" "$(printf 'ip-10-0-1-17.ec2.internal:1\nip-10-0-1-23.ec2.internal:1')" "hosts by DNS name"
run_one "$script" --group gpu-train --nodes
assert_eq "$(cat "$T/out")" "2:10" "--nodes"
pass "--address dns; --nodes gives the group's MinSize:MaxSize (2:10)"

run_one "$script" --group other
assert_eq "$RC" 1 "unknown group"
assert_grep "$T/err" "no auto-scaling group named other" "unknown group's message"
AWS_STUB_MODE=fail run_one "$script" --group gpu-train
assert_eq "$RC" 1 "failing CLI"
assert_grep "$T/err" "failed \\(254\\): An error occurred \\(AccessDenied\\)" "failing CLI's message"
AWS_STUB_MODE=garbage run_one "$script" --group gpu-train
assert_eq "$RC" 1 "garbage"
assert_grep "$T/err" "did not answer JSON" "garbage's message"
AWS_CLI=$T/nonexistent run_one "$script" --group gpu-train
assert_eq "$RC" 1 "no CLI"
assert_grep "$T/err" "is not on PATH" "no CLI's message"
pass "unknown group, failing CLI, an answer that is not JSON, no CLI: exit 1 with a message"
echo "$TESTS_RUN passed, 0 failed"
