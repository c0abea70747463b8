#!/bin/bash
# The sbatch templates without Slurm: their #SBATCH lines (read as sbatch reads them: up to the
# first command), scripts/slurm/render for other node shapes, and their bodies run against
# stand-in srun / mpirun / scontrol that record what they were asked.
#   test_sbatch_templates.sh SOURCE_DIR
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
src=${1:?source dir}
slurm=$src/scripts/slurm
dir=$T

# The options sbatch would see: #SBATCH lines before the first line that is not a comment.
sbatch_opts() {
  awk 'NR == 1 && /^#!/ { next }
       /^#SBATCH/ { sub(/^#SBATCH[ \t]+/, ""); print; next }
       /^[ \t]*#/ || /^[ \t]*$/ { next }
       { exit }' "$1"
}
opt() { sbatch_opts "$1" | sed -n "s/^--$2=//p"; }

for t in srun mpirun; do
  f=$slurm/gpulaunch-$t.sbatch
  bash -n "$f" || fail "$t template does not parse"
  for o in nodes ntasks-per-node gpus-per-node cpus-per-task time; do
    [[ -n $(opt "$f" "$o") ]] || fail "$t template has no #SBATCH --$o before its first command"
  done
  [[ $(opt "$f" ntasks-per-node) == "$(opt "$f" gpus-per-node)" ]] ||
    fail "$t template: --ntasks-per-node must equal --gpus-per-node (one rank per GPU)"
  head -3 "$f" | grep -q "gpulaunch" || fail "$t template is not documented at the top"
  [[ $(opt "$f" open-mode) == append ]] || fail "$t template: a requeued run must append to the output"
  sbatch_opts "$f" | grep -qx -- --requeue || fail "$t template: --requeue"

  r=$dir/$t.sbatch
  "$slurm/render" --nodes 4 --gpus-per-node 4 --cores-per-node 64 --partition gpu \
    --account proj --gpu-type h100 --time 02:30:00 "$t" >"$r"
  bash -n "$r" || fail "rendered $t does not parse"
  [[ $(opt "$r" nodes) == 4 && $(opt "$r" ntasks-per-node) == 4 ]] || fail "rendered $t: nodes/tasks"
  [[ $(opt "$r" gpus-per-node) == h100:4 ]] || fail "rendered $t: gpus-per-node"
  [[ $(opt "$r" cpus-per-task) == 16 ]] || fail "rendered $t: 64 cores / 4 GPUs must give 16"
  [[ $(opt "$r" partition) == gpu && $(opt "$r" account) == proj ]] || fail "rendered $t: partition/account"
  [[ $(opt "$r" time) == 02:30:00 ]] || fail "rendered $t: time"
  [[ $(sbatch_opts "$r" | wc -l) -eq $(($(sbatch_opts "$f" | wc -l) + 2)) ]] || fail "rendered $t: lines lost"
  [[ $("$slurm/render" --gpus-per-node 8 --cores-per-node 4 "$t" | sed -n 's/^#SBATCH --cpus-per-task=//p') == 1 ]] ||
    fail "render: fewer cores than GPUs must still give 1 core per task"
  "$slurm/render" --no-gpus --gpus-per-node 2 --cpus-per-gpu 1 "$t" >"$r"
  [[ -z $(opt "$r" gpus-per-node) && $(opt "$r" ntasks-per-node) == 2 ]] || fail "render --no-gpus"
done

# Time-limit warnings: to the step's processes under srun, to the batch script (which passes it
# on) under mpirun, where the ranks are no step of their own on the batch host.
[[ $(opt "$slurm/gpulaunch-srun.sbatch" signal) == TERM@120 ]] || fail "srun template: --signal=TERM@120"
[[ $(opt "$slurm/gpulaunch-mpirun.sbatch" signal) == B:TERM@120 ]] || fail "mpirun template: --signal=B:TERM@120"

# Stand-ins that record their arguments.
mkdir "$dir/bin"
for tool in srun mpirun scontrol; do
  cat >"$dir/bin/$tool" <<X
#!/bin/bash
# the mpirun script's signal relay is an srun too: keep it apart
case "\$*" in *gpulaunch-relay*) printf '%s\n' "\$@" >"$dir/relay.args"; exit 0 ;; esac
# scontrol show job: the job as FAKE_JOB says (a running requeueable job in its first run)
if [ "$tool" = scontrol ] && [ "\$1 \$2" = "show job" ]; then
  echo "\${FAKE_JOB:-JobId=4242 JobName=gpulaunch JobState=RUNNING Reason=None Requeue=1 Restarts=0 BatchFlag=1}"
  exit 0
fi
printf '%s\n' "\$@" >"$dir/$tool.args"
env >"$dir/$tool.env"
if [ "$tool" = mpirun ]; then
  # the hostfile must exist while mpirun runs
  while [ \$# -gt 0 ]; do [ "\$1" = --hostfile ] && cp "\$2" "$dir/hostfile.seen"; shift; done
fi
exit \${FAKE_STATUS:-0}
X
  chmod +x "$dir/bin/$tool"
done
export PATH=$dir/bin:/usr/bin:/bin
# gpulaunch on PATH, and the shim next to it, where the srun template looks for it
printf "#!/bin/sh\nexit 0\n" >"$dir/bin/gpulaunch"
chmod +x "$dir/bin/gpulaunch"
: >"$dir/bin/libgpulaunch-srun.so"
unset GPULAUNCH GPULAUNCH_SCRIPTS GPULAUNCH_EXCLUDE GPULAUNCH_REQUEUE MPIRUN_ARGS SRUN_MPI GPULAUNCH_GRACE
export SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=3 SLURM_NTASKS_PER_NODE=8 SLURM_GPUS_PER_NODE=gpu:8
export SLURM_CPUS_PER_TASK=12 SLURM_JOB_NODELIST='node[01-03]' SLURM_SUBMIT_DIR=$src
export SLURM_TASKS_PER_NODE='8(x3)' SLURMD_NODENAME=node01

bash "$slurm/gpulaunch-srun.sbatch" train.conf --summary s.json >"$dir/out" 2>&1 || fail "srun body: $(cat "$dir/out")"
want="--mpi=pmix
--kill-on-bad-exit=1
--cpu-bind=none
--nodes=3
--ntasks-per-node=8
--cpus-per-task=12
gpulaunch
train.conf
--summary
s.json"
[[ $(cat "$dir/srun.args") == "$want" ]] || { diff <(echo "$want") "$dir/srun.args"; fail "srun arguments"; }

# Elastic (GPULAUNCH_NODES): the allocation outlives a lost node (--no-kill); gpulaunch-run gets
# --nodes MIN:MAX (MAX: the allocation's nodes) and no fixed shape; without gpulaunch-run, 64.
sbatch_opts "$slurm/gpulaunch-srun.sbatch" | grep -qx -- --no-kill || fail "srun template: --no-kill"
st=0
GPULAUNCH_NODES=2 bash "$slurm/gpulaunch-srun.sbatch" train.conf >"$dir/out" 2>&1 || st=$?
if [[ $st != 64 ]] || ! grep -q "GPULAUNCH_NODES needs gpulaunch-run" "$dir/out"; then
  fail "srun body, elastic without gpulaunch-run: exit $st: $(cat "$dir/out")"
fi
printf '#!/bin/bash\nprintf "%%s\\n" "$@" >"%s/run.args"\nenv >"%s/run.env"\n' "$dir" "$dir" >"$dir/bin/gpulaunch-run"
chmod +x "$dir/bin/gpulaunch-run"
for nodes in 2 2:5; do
  GPULAUNCH_NODES=$nodes bash "$slurm/gpulaunch-srun.sbatch" train.conf >"$dir/out" 2>&1 || fail "srun body, elastic: $(cat "$dir/out")"
  span=$nodes
  [[ $span == *:* ]] || span=$nodes:3
  want="--mpi=pmix
--kill-on-bad-exit=1
--cpu-bind=none
--nodes
$span
--cpus-per-task=12
gpulaunch
train.conf"
  [[ $(cat "$dir/run.args") == "$want" ]] || { diff <(echo "$want") "$dir/run.args"; fail "elastic gpulaunch-run arguments ($nodes)"; }
  grep -qx "SLURM_NTASKS_PER_NODE=8" "$dir/run.env" || fail "elastic: the slots per node (SLURM_NTASKS_PER_NODE)"
  grep -qx "GPULAUNCH_MPIRUN=srun" "$dir/run.env" || fail "elastic: gpulaunch-run runs srun"
done
rm "$dir/bin/gpulaunch-run"

# srun runs with the shim that keeps it from killing the step on SIGTERM, found next to gpulaunch
shim_env=$(grep -x 'LD_PRELOAD=.*' "$dir/srun.env" || true)
[[ $shim_env == "LD_PRELOAD=$dir/bin/libgpulaunch-srun.so" ]] || fail "srun without the shim: '$shim_env'"

# preemption: exit 75 passes through and requeues the job (no variable needed: Slurm requeues a
# job of a GraceTime partition only if it still runs when the grace ends), but not when
# GPULAUNCH_REQUEUE=0, a job that is not requeueable, or one Slurm is requeueing already.
# requeue_case WHAT WANT_REQUEUE [VAR=VALUE...]
requeue_case() {
  local what=$1 want=$2 st=0
  shift 2
  rm -f "$dir/scontrol.args"
  env FAKE_STATUS=75 "$@" bash "$slurm/gpulaunch-$TMPL.sbatch" train.conf >"$dir/out" 2>&1 || st=$?
  [[ $st == 75 ]] || fail "$TMPL body ($what): exit $st, want 75: $(cat "$dir/out")"
  grep -q 'preempted' "$dir/out" || fail "$TMPL body ($what): preemption not said"
  if ((want)); then
    [[ $(tr '\n' ' ' <"$dir/scontrol.args" 2>/dev/null) == "requeue 4242 " ]] || fail "$TMPL body ($what): no requeue: $(cat "$dir/out")"
  else
    ! grep -qx requeue "$dir/scontrol.args" 2>/dev/null || fail "$TMPL body ($what): requeued: $(cat "$dir/out")"
  fi
}
requeue_cases() {
  requeue_case default 1
  requeue_case GPULAUNCH_REQUEUE=1 1 GPULAUNCH_REQUEUE=1
  requeue_case GPULAUNCH_REQUEUE=0 0 GPULAUNCH_REQUEUE=0
  requeue_case --no-requeue 0 FAKE_JOB="JobId=4242 JobState=RUNNING Requeue=0 Restarts=0"
  grep -q "not requeueable" "$dir/out" || fail "$TMPL body: a job that is not requeueable is not said"
  requeue_case "already requeued" 0 FAKE_JOB="JobId=4242 JobState=PENDING Requeue=1 Restarts=1"
  requeue_case "Slurm requeueing it" 0 FAKE_JOB="JobId=4242 JobState=COMPLETING Requeue=1 Restarts=1"
  grep -q "Slurm is requeueing or ending it already" "$dir/out" || fail "$TMPL body: a job Slurm requeues is not said"
  requeue_case "run 2" 1 SLURM_RESTART_COUNT=1 FAKE_JOB="JobId=4242 JobState=RUNNING Requeue=1 Restarts=1"
}
TMPL=srun requeue_cases
st=0
bash "$slurm/gpulaunch-srun.sbatch" >"$dir/out" 2>&1 || st=$?
[[ $st == 64 ]] || fail "no config must be a usage error"

# mpirun inside the allocation: hostfile from the node list (scontrol stand-in moved away, so
# the expander is used), one excluded host, np from the slots.
mv "$dir/bin/scontrol" "$dir/scontrol.standin"
printf '# from gpulaunch accept\nnode02\n' >"$dir/bad"
GPULAUNCH_EXCLUDE=$dir/bad MPIRUN_ARGS="--mca btl_tcp_if_include eth0" \
  bash "$slurm/gpulaunch-mpirun.sbatch" train.conf >"$dir/out" 2>&1 || fail "mpirun body: $(cat "$dir/out")"
[[ $(cat "$dir/hostfile.seen") == "node01 slots=8
node03 slots=8" ]] || fail "hostfile: $(cat "$dir/hostfile.seen")"
args=$(tr '\n' ' ' <"$dir/mpirun.args")
[[ $args == "-np 16 --hostfile "*" --map-by slot --bind-to none --mca oob_tcp_keepalive_time 10 --mca oob_tcp_keepalive_intvl 2 --mca oob_tcp_keepalive_probes 5 --mca orte_launch_agent $src/scripts/slurm/nosig TERM,INT,HUP,USR1,USR2 orted --mca btl_tcp_if_include eth0 gpulaunch train.conf " ]] ||
  fail "mpirun arguments: $args"
if ! grep -qx -- --overlap "$dir/relay.args" 2>/dev/null || ! grep -qx -- --nodelist=node01 "$dir/relay.args"; then
  fail "mpirun script: no signal relay step on the batch host: $(cat "$dir/relay.args" 2>/dev/null)"
fi

# sbatch -n 3 on two hosts: each host's own count from SLURM_TASKS_PER_NODE, np the sum.
SLURM_JOB_NODELIST='node[01-02]' SLURM_TASKS_PER_NODE='2,1' SLURM_NTASKS_PER_NODE='' \
  bash "$slurm/gpulaunch-mpirun.sbatch" train.conf >"$dir/out" 2>&1 || fail "mpirun body (-n 3): $(cat "$dir/out")"
[[ $(cat "$dir/hostfile.seen") == "node01 slots=2
node02 slots=1" ]] || fail "hostfile (-n 3): $(cat "$dir/hostfile.seen")"
[[ $(sed -n 2p "$dir/mpirun.args") == 3 ]] || fail "mpirun -np for -n 3: $(sed -n 2p "$dir/mpirun.args")"
# exit 75 passes through mpirun's script and requeues the job (the same cases)
cp "$dir/scontrol.standin" "$dir/bin/scontrol"
TMPL=mpirun requeue_cases
[[ ! -e $(sed -n 3p "$dir/mpirun.args") ]] || fail "the temporary hostfile was left behind"
echo "ok: sbatch templates"
