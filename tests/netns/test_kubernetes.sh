#!/usr/bin/env bash
# docs/kubernetes.md's MPIJob (examples/kubernetes/gpulaunch-mpijob.yaml, the copy the page shows)
# parsed with python3-yaml and checked: a PriorityClass for spot work that the workers use, an
# MPIJob of kubeflow.org/v2beta1 whose launcher runs `gpulaunch-run --nodes MIN:MAX
# --host-discovery-script /etc/mpi/discover_hosts.sh gpulaunch train.conf`, workers between MIN and
# MAX, terminationGracePeriodSeconds above the ConfigMap's [job] grace, the ConfigMap's train.conf
# valid (gpulaunch check). Then that launcher command runs on namespace hosts (h0 the launcher pod,
# h1..h3 the worker pods under the operator's FQDNs) with a discover_hosts.sh of the operator's
# exact form (`echo POD.JOB-worker.NAMESPACE.svc` lines, rewritten in place as the operator's
# ConfigMap update is): 2 workers, a third added (the job grows to 3 workers), the first removed (the job
# goes on with 2), and the job completes from its checkpoints; 2 slots per worker
# (GPULAUNCH_HOST_SLOTS, as the launcher's environment gives slotsPerWorker).
#   test_kubernetes.sh GPULAUNCH_RUN
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_kubernetes.sh GPULAUNCH_RUN}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
MANIFEST=$SRC/examples/kubernetes/gpulaunch-mpijob.yaml
source "$(dirname "$0")/../lib.sh"
netns_begin
python3 -c 'import yaml' 2>/dev/null || { echo "SKIP: python3-yaml is not installed"; exit 77; }

NETNS_DECOYS=0 netns_setup 4
T=$NETNS_DIR

# 1. The manifest: every rule the page states, and the pieces the run below needs.
python3 - "$MANIFEST" "$SRC/docs/kubernetes.md" "$T" <<'PY' || bad "the manifest"
import re, sys, yaml
manifest, page, out = sys.argv[1:4]
docs = list(yaml.safe_load_all(open(manifest)))
kinds = {d["kind"]: d for d in docs if d}
pc, cm, job = kinds["PriorityClass"], kinds["ConfigMap"], kinds["MPIJob"]
assert pc["apiVersion"] == "scheduling.k8s.io/v1" and pc.get("preemptionPolicy") == "Never", pc
assert job["apiVersion"] == "kubeflow.org/v2beta1", job["apiVersion"]
spec = job["spec"]["mpiReplicaSpecs"]
launcher = spec["Launcher"]["template"]["spec"]
worker = spec["Worker"]["template"]["spec"]
argv = launcher["containers"][0]["command"]
m = re.fullmatch(r"(\d+):(\d+)", argv[2])
assert argv[:2] == ["gpulaunch-run", "--nodes"] and m, argv
assert argv[3:] == ["--host-discovery-script", "/etc/mpi/discover_hosts.sh", "gpulaunch", "train.conf"], argv
lo, hi = int(m.group(1)), int(m.group(2))
assert lo <= spec["Worker"]["replicas"] <= hi, (lo, spec["Worker"]["replicas"], hi)
assert worker["priorityClassName"] == pc["metadata"]["name"], worker.get("priorityClassName")
conf = cm["data"]["train.conf"]
g = re.search(r"^grace\s*=\s*(\d+)s\s*$", conf, re.M)
assert g, "no [job] grace in train.conf"
for who, s in (("worker", worker), ("launcher", launcher)):
    assert s["terminationGracePeriodSeconds"] > int(g.group(1)), (who, s["terminationGracePeriodSeconds"], g.group(1))
env = {e["name"]: e["value"] for e in launcher["containers"][0].get("env", [])}
assert env.get("OMPI_MCA_orte_keep_fqdn_hostnames") == "true", env
assert env.get("GPULAUNCH_HOST_SLOTS") == str(job["spec"]["slotsPerWorker"]), (env, job["spec"]["slotsPerWorker"])
limits = worker["containers"][0]["resources"]["limits"]
assert str(limits["nvidia.com/gpu"]) == str(job["spec"]["slotsPerWorker"]), limits
# the page shows this very manifest
text = open(page).read()
blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
assert any(b.strip() in open(manifest).read() for b in blocks if "kind: MPIJob" in b), "the page's MPIJob differs from the file"
open(out + "/train.conf.k8s", "w").write(conf)
open(out + "/argv", "w").write("\n".join(argv) + "\n")
open(out + "/nodes", "w").write("%d %d %s\n" % (lo, hi, job["metadata"]["name"]))
print("manifest: %s; workers %d..%d, grace %ss < terminationGracePeriodSeconds %d" %
      (" ".join(argv), lo, hi, g.group(1), worker["terminationGracePeriodSeconds"]))
PY
"$GPULAUNCH" check "$T/train.conf.k8s" >"$T/check.out" 2>&1 || true
grep -q "program not found\|cannot run" "$T/check.out" || grep -qE "^\[job\]|command" "$T/check.out" ||
  bad "the ConfigMap's train.conf does not load: $(head -3 "$T/check.out")"
[ "$FAILED" = 0 ] && pass "the manifest: PriorityClass, v2beta1 MPIJob, the launcher's command, grace < terminationGracePeriodSeconds"

# 2. The launcher's command on namespace hosts. The operator names worker pods
# JOB-worker-I.JOB-worker.NAMESPACE.svc; here they are h1..h3 under those names.
read -r _ _ JOB <"$T/nodes"
fqdn() { echo "$JOB-worker-$1.$JOB-worker.default.svc"; }
for i in 0 1 2; do echo "$(fqdn "$i") ${NETNS_NS[h$((i + 1))]}" >>"$NETNS_MAP"; done
# discover_hosts WORKER...: the operator's discover_hosts.sh for these running workers, replaced
# whole (the kubelet swaps a ConfigMap's files in one rename).
discover_hosts() {
  {
    echo '#!/bin/sh'
    for i in "$@"; do echo "echo $(fqdn "$i")"; done
  } >"$T/discover_hosts.sh.new"
  chmod +x "$T/discover_hosts.sh.new"
  mv "$T/discover_hosts.sh.new" "$T/discover_hosts.sh"
}
# The trainer: tests/step_trainer.sh (a step every 0.2 s, rank 0 checkpoints, SIGTERM saves).
printf '[job]\ncommand = %s\ngrace = 10s\nliveness_timeout = 5s\n[preempt]\nnotice = off\n' "$GPULAUNCH_SOURCE_DIR/tests/step_trainer.sh $T 90" >"$T/train.conf"
# The manifest's argv with the pod's paths: /etc/mpi/discover_hosts.sh and train.conf (the
# launcher's workingDir) are here in $T; polling and growing made faster for the test.
mapfile -t argv <"$T/argv"
argv=("${argv[@]/#\/etc\/mpi\/discover_hosts.sh/$T/discover_hosts.sh}")
argv=("${argv[@]/#train.conf/$T/train.conf}")
[ "${argv[0]}" = gpulaunch-run ] || bad "argv[0] is ${argv[0]}"
discover_hosts 0 1
export GPULAUNCH_TIMEOUT=20 GPULAUNCH_MPIRUN=mpirun OMPI_MCA_orte_keep_fqdn_hostnames=true MPIEXEC=$RUN
export GPULAUNCH_HOST_SLOTS=2
(RC=0
 netns_mpirun -x OMPI_MCA_orte_keep_fqdn_hostnames "${argv[@]:1:4}" --discovery-interval 1 --scale-up-interval 3 \
   "$GPULAUNCH" "${argv[@]:6}" >"$T/out" 2>"$T/err" || RC=$?
 echo "$RC" >"$T/done") &
# shellcheck disable=SC2317 # called through wait_cmd
starts() { grep -c "start rank .* world $1 " "$T/out" 2>/dev/null || true; }
# shellcheck disable=SC2317 # called through wait_cmd
started() { [ "$(starts "$1")" -ge "$2" ]; }
if wait_cmd 60 started 4 4 && wait_cmd 20 test -s "$T/ckpt"; then
  pass "started on the operator's 2 workers x 2 slots: $(grep -o 'host [^ ]*' "$T/out" | sort -u | tr '\n' ' ')"
  discover_hosts 0 1 2 # a worker added (kubectl scale --replicas 3, or a new spot node)
  if wait_cmd 60 started 6 6; then
    grep -q "scale-up: $(fqdn 2) joined" "$T/err" || bad "grow: the restart's cause not said"
    pass "worker 2 added: the job grew to 6 ranks"
    sleep 2
    discover_hosts 1 2 # worker 0's pod deleted (a spot node reclaimed, kubectl scale down)
    if wait_cmd 60 started 4 8; then
      grep -q "$(fqdn 0)" "$T/err" || bad "shrink: worker 0 not named"
      pass "worker 0 removed: the job went on with 4 ranks"
    else
      bad "shrink: the job did not start again on 4 ranks"
    fi
  else
    bad "grow: the job did not grow to 6 ranks"
  fi
else
  bad "the job did not start on 4 ranks"
fi
if wait_cmd 120 test -f "$T/done"; then
  [ "$(cat "$T/done")" = 0 ] || bad "exit $(cat "$T/done"), expected 0"
  grep -q "done rank 3 step 90" "$T/out" || bad "the job did not complete at 4 ranks"
  resumed=$(grep "start rank 0 world 4 " "$T/out" | tail -1 | grep -o 'step [0-9]*')
  [ "${resumed#step }" -gt 0 ] || bad "the last launch did not resume from the checkpoint ($resumed)"
  [ "$FAILED" = 0 ] && pass "completed (exit 0) after growing and shrinking, each launch from the checkpoint"
else
  bad "gpulaunch-run still runs"
fi
wait
exit "$FAILED"
