#!/usr/bin/env bash
# Quick start: install what is missing, build, and run the main job on this machine:
# mpirun with 4 ranks of gpulaunch on examples/train.conf (the built-in data-parallel trainer,
# no GPU needed). Extra arguments go to gpulaunch (e.g. --summary out.json).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/install-deps.sh"
# shellcheck source=scripts/env.sh
source "$here/env.sh"
"$here/build.sh" "$GPL_ROOT/build" -DCMAKE_BUILD_TYPE=Release
exec mpirun -np 4 --bind-to none "$GPL_ROOT/build/launcher/gpulaunch" "$GPL_ROOT/examples/train.conf" "$@"
