# shellcheck shell=bash disable=SC2034
# (SC2034: MPIRUN, GPULAUNCH and TMP are for the scripts that source this file)
# Helpers of the benchmark scripts: the build folder, mpirun as the tests run it, medians, and
# Markdown output. Every script prints its command lines and its numbers as Markdown.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="${BUILD:-$ROOT/build}"
MPIEXEC="${MPIEXEC:-mpirun}"
# Root in containers, more ranks than cores on small machines: what Open MPI needs to say yes.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=("$MPIEXEC" --oversubscribe --bind-to none)
GPULAUNCH="$BUILD/launcher/gpulaunch"
TMP=$(mktemp -d /tmp/gpulaunch-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# parse_build_arg "$@": handles --build DIR; the remaining arguments are left in ARGS.
ARGS=()
parse_build_arg() {
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --build) BUILD=$2; GPULAUNCH="$BUILD/launcher/gpulaunch"; shift 2 ;;
      *) ARGS+=("$1"); shift ;;
    esac
  done
}

need() { # need FILE...: the programs a script runs must be built
  local f
  for f in "$@"; do
    [[ -x "$f" ]] || { echo "benchmark: $f is not built (cmake --build $BUILD --target ${f##*/})" >&2; exit 69; }
  done
}

# median of the numbers on stdin (the middle one, or the mean of the two middle ones)
median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) { print "nan"; exit } if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# min and max of the numbers on stdin, as "min-max"
range() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3g-%.3g", lo, hi }'; }

# the machine, for the record
machine() {
  local cpu
  cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo unknown)
  echo "- machine: $(hostname), $(nproc) CPUs ($cpu), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet -- . 2>/dev/null || echo ' (with local changes)'), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- Open MPI $(ompi_info --version 2>/dev/null | awk '/Open MPI/ { print $NF; exit }')"
}

# show CMD...: the command line, as an indented block of the Markdown
show() { printf '    $ %s\n' "$*"; }

# clock OUTFILE CMD...: append the wall seconds of CMD to OUTFILE; a failing CMD ends the script
# with the end of its output.
clock() {
  local out=$1 t0 t1
  shift
  t0=$(date +%s%N)
  "$@" >"$TMP/last" 2>&1 || { echo "failed: $*"; tail -n 30 "$TMP/last"; exit 1; } >&2
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", (b - a) / 1e9 }' >>"$out"
}
