#!/usr/bin/env bash
# Configure and build gpulaunch into a build folder. Usage: scripts/build.sh [BUILD_DIR] [cmake args...]
set -euo pipefail
# shellcheck source=scripts/env.sh
source "$(dirname "$0")/env.sh"
dir="${1:-$GPL_ROOT/build}"
shift || true
cmake -S "$GPL_ROOT" -B "$dir" "$@" >/dev/null
cmake --build "$dir" -j "$GPL_JOBS"
