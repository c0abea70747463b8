#!/bin/bash
# scripts/hostfile on sample allocations: bracket expansion (zero padding, several groups, comma
# lists), Slurm variables for the slot count, host files, exclusions, scontrol when present.
#   test_hostfile.sh SOURCE_DIR
set -euo pipefail
hf=${1:?source dir}/scripts/hostfile
dir=$(mktemp -d /tmp/gpl-ops-hostfile-XXXXXX)
trap 'rm -rf "$dir"' EXIT
n=0
check() { # name expected actual
  n=$((n + 1))
  if [[ $2 != "$3" ]]; then
    echo "FAIL: $1"
    diff <(echo "$2") <(echo "$3") || true
    exit 1
  fi
}
# Keep any real Slurm environment and scontrol out of the way.
unset SLURM_JOB_NODELIST SLURM_NODELIST SLURM_NTASKS_PER_NODE SLURM_TASKS_PER_NODE SLURM_GPUS_PER_NODE SLURM_GPUS_ON_NODE
export PATH=/usr/bin:/bin

check "bracket list with padding" "node01 slots=4
node02 slots=4
node03 slots=4
node04 slots=4
node07 slots=4" "$("$hf" -s 4 'node[01-04,07]')"

check "several groups and plain names" "r1n08 slots=1
r1n09 slots=1
r2n08 slots=1
r2n09 slots=1
login1 slots=1
gpu-a slots=1" "$("$hf" 'r[1-2]n[08-09],login1' gpu-a)"

check "padding across a width change" "n098 slots=2
n099 slots=2
n100 slots=2" "$("$hf" --slots=2 'n[098-100]')"

check "Slurm allocation, slots from SLURM_NTASKS_PER_NODE" "gpu9 slots=8
gpu10 slots=8
gpu11 slots=8" "$(SLURM_JOB_NODELIST='gpu[9-11]' SLURM_NTASKS_PER_NODE='8(x3)' "$hf")"

check "salloc -n 4 (no SLURM_NTASKS_PER_NODE): slots from SLURM_TASKS_PER_NODE" "a1 slots=4" \
  "$(SLURM_JOB_NODELIST=a1 SLURM_TASKS_PER_NODE=4 "$hf")"

check "sbatch -n 7 on 8-core and 2-core hosts: each host its own count" "c1 slots=2
c2 slots=2
c3 slots=2
c4 slots=1" "$(SLURM_JOB_NODELIST='c[1-4]' SLURM_TASKS_PER_NODE='2(x3),1' SLURM_NTASKS_PER_NODE=2 "$hf")"

check "--slots overrides SLURM_TASKS_PER_NODE" "c1 slots=5
c2 slots=5" "$(SLURM_JOB_NODELIST='c[1-2]' SLURM_TASKS_PER_NODE='3,1' "$hf" -s 5)"

out=$(SLURM_JOB_NODELIST='d[1-3]' SLURM_TASKS_PER_NODE='4(x2)' SLURM_NTASKS_PER_NODE=4 "$hf" 2>"$dir/err")
check "SLURM_TASKS_PER_NODE that does not fit the node list: the uniform count, said" "d1 slots=4
d2 slots=4
d3 slots=4" "$out"
grep -q 'does not match the 3 host' "$dir/err" || { echo "FAIL: mismatch not said"; cat "$dir/err"; exit 1; }

check "slots from SLURM_GPUS_PER_NODE type:count" "a1 slots=4
a2 slots=4" "$(SLURM_NODELIST='a[1-2]' SLURM_GPUS_PER_NODE='h100:4' "$hf")"

cat >"$dir/exclude" <<'X'
# written by gpulaunch accept --exclude-out
gpu10   # GPU 3: ECC errors
gpu12.cluster.local
X
out=$(SLURM_JOB_NODELIST='gpu[9-12]' SLURM_NTASKS_PER_NODE=8 "$hf" --exclude "$dir/exclude" 2>"$dir/err")
check "exclusions by full and short name" "gpu9 slots=8
gpu11 slots=8" "$out"
grep -q 'left out 2 excluded host(s): gpu10 gpu12' "$dir/err" || { echo "FAIL: exclusion not said"; cat "$dir/err"; exit 1; }

cat >"$dir/hosts" <<'X'
# hosts of a cloud job
h1.example.com slots=2
h2:3
h3
10.0.0.7
10.0.0.8   # spare
h3
X
printf '10.0.0.8\nh1\n' >"$dir/exclude2"
check "host file, own counts, duplicates, IPs, exclusions" "h2 slots=3
h3 slots=6
10.0.0.7 slots=6" "$("$hf" -f "$dir/hosts" -s 6 -x "$dir/exclude2" 2>/dev/null)"

"$hf" -s 4 'x[1-2]' --out "$dir/out.txt"
check "--out writes the file" "x1 slots=4
x2 slots=4" "$(cat "$dir/out.txt")"

# scontrol, when present, does the expansion (it knows every Slurm syntax)
mkdir "$dir/bin"
cat >"$dir/bin/scontrol" <<'X'
#!/bin/sh
[ "$1 $2" = "show hostnames" ] || exit 2
[ "$3" = "weird[1-2]" ] && printf 'sc-a\nsc-b\n'
X
chmod +x "$dir/bin/scontrol"
check "scontrol show hostnames used" "sc-a slots=1
sc-b slots=1" \
  "$(PATH=$dir/bin:$PATH SLURM_JOB_NODELIST='weird[1-2]' "$hf")"

# failures
fails() {
  n=$((n + 1))
  if "$hf" "$@" >/dev/null 2>&1; then echo "FAIL: hostfile $* should fail"; exit 1; fi
}
fails                                   # no hosts at all
fails 'n[1-2'                           # unbalanced bracket
fails 'n[3-1]'                          # reversed range
fails -s 0 n1                           # bad slot count
printf 'n1\nn2\n' >"$dir/all"
fails -x "$dir/all" n1 n2               # nothing left
fails 'bad host!'
echo "ok: $n hostfile checks"
