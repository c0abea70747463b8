#!/usr/bin/env bash
# Topology load + placement plan (one rank's start-up work) for the largest machine file we have
# (AWS p5en.48xlarge: 8 H200, 16 EFA NICs) and for this machine: the topology module's timer.
#   benchmarks/run_topology.sh [--build DIR] [--runs N]
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
RUNS=21
set -- "${ARGS[@]+"${ARGS[@]}"}"
[[ "${1:-}" == --runs ]] && RUNS=$2
TB="$BUILD/tests/topology/topo_bench"
need "$TB"
TOPO="${GPULAUNCH_TOPOLOGY_DIR:-$ROOT/tests/data/topologies}"
XML="$TOPO/hwloc-aws-p5en.48xlarge.xml"
[[ -f "$XML" ]] || { echo "run_topology: $XML not found (set GPULAUNCH_TOPOLOGY_DIR)" >&2; exit 66; }
echo "### topology load + plan"
echo
machine
echo
for f in "$XML" live; do
  show "$TB" "$f" "$RUNS"
  echo
  echo '```'
  "$TB" "$f" "$RUNS"
  echo '```'
  echo
done
