# shellcheck shell=bash
# Helpers for the Slurm tests: a real cluster of this run (scripts/slurm/cluster), stopped at exit
# whatever happens; commands on its login node; waits with deadlines; signal records of sigrec.
#
#   . "$(dirname "$0")/slurmlib.sh"     (after tests/lib.sh)
#   slurm_start NODES [cluster start options]   skip (77) with the reason if it cannot start
#   sx CMD...                 run CMD on node0 (the login node) of the cluster
#   job_field JOB KEY         a field of `scontrol show job` ("" when the job is gone)
#   state_in JOB STATE...     the job's JobState is one of STATE...
#   requeued_pending JOB [RESTARTS]  requeued RESTARTS times (default 1) and pending again
#   wait_until SECONDS WHAT CMD...   poll CMD until it succeeds, else fail naming WHAT
#   sig_count FILE SIG [FROM]  deliveries of SIG in a sigrec record (FROM: sender's name)

SLURM_CLUSTER="$GPULAUNCH_SOURCE_DIR/scripts/slurm/cluster"
CL=""

slurm_stop() {
  if [[ -n $CL ]]; then
    # The logs help when a test failed; the cluster itself goes.
    if [[ ${SLURM_TEST_FAILED:-0} == 1 ]]; then
      for f in "$T"/*.out "$CL"/log/slurmctld.log "$CL"/log/slurmd-*.log; do
        [[ -r $f ]] && { echo "---- ${f##*/} (last lines)"; tail -n 15 "$f"; }
      done >&2
    fi
    "$SLURM_CLUSTER" stop "$CL" || true
    CL=""
  fi
}

slurm_start() {
  local nodes=$1 rc=0
  shift
  CL=$("$SLURM_CLUSTER" start --nodes "$nodes" "$@" 2>"$T/cluster.err" | tail -n 1) || rc=$?
  if ((rc == 77)); then
    echo "SKIP: $(cat "$T/cluster.err")"
    exit 77
  fi
  if ((rc != 0)) || [[ ! -d $CL ]]; then
    cat "$T/cluster.err" >&2
    CL=""
    fail "the Slurm cluster did not start"
  fi
  trap 'rc=$?; ((rc == 0 || rc == 77)) || SLURM_TEST_FAILED=1; slurm_stop; rm -rf "$T"; exit $rc' EXIT
  echo "cluster: $nodes node(s) in $CL"
}

sx() { "$SLURM_CLUSTER" exec "$CL" "$@"; }

job_field() {
  sx scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

wait_until() {
  local secs=$1 what=$2 i
  shift 2
  for ((i = 0; i < secs * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  fail "$what (not within ${secs}s)"
}

files_at_least() { # files_at_least PATTERN N
  local -a f
  # shellcheck disable=SC2206 # a glob
  f=($1)
  [[ -e ${f[0]} && ${#f[@]} -ge $2 ]]
}

job_gone() { [[ -z $(sx squeue -h -j "$1" 2>/dev/null) ]]; }
state_in() { local s; s=$(job_field "$1" JobState); [[ " ${*:2} " == *" $s "* ]]; }
requeued_pending() { [[ $(job_field "$1" Restarts) == "${2:-1}" ]] && state_in "$1" PENDING; }

sig_count() {
  local from=${3:-}
  [[ -r $1 ]] || { echo 0; return; }
  awk -v s="$2" -v f="$from" '$2 == s && (f == "" || $4 == f) { n++ } END { print n + 0 }' "$1"
}

# Every rank's record has exactly N deliveries of SIG (from FROM when given).
sig_each() { # sig_each DIR RESTART NP SIG N [FROM] WHAT
  local dir=$1 restart=$2 np=$3 sig=$4 n=$5 from=$6 what=$7 r c
  for ((r = 0; r < np; r++)); do
    c=$(sig_count "$dir/sig.$restart.$r" "$sig" "$from")
    [[ $c == "$n" ]] || { cat "$dir"/sig.* >&2 2>/dev/null; fail "$what: rank $r got SIG$sig $c time(s)${from:+ from $from}, want $n"; }
  done
}

# No mpirun, orted, gpulaunch or program is left in the cluster's nodes.
nothing_left() {
  local id ns p
  id=$(sed -n 's/^CL_ID=//p' "$CL/cluster.env")
  [[ $(sed -n 's/^CL_NETNS=//p' "$CL/cluster.env") == 1 ]] || return 0
  for ns in $(ip netns list | awk -v p="$id-n" 'index($1, p) == 1 { print $1 }'); do
    for p in $(ip netns pids "$ns"); do
      case $(cat "/proc/$p/comm" 2>/dev/null) in
        mpirun | orted | gpulaunch | gpl_sigrec) return 1 ;;
      esac
    done
  done
}
