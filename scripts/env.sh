# shellcheck shell=bash
# Sourced by the scripts: the environment for building and running gpulaunch's jobs here.
# Open MPI refuses root unless told, and runs more ranks than cores only when allowed.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# CMake finds nvcc only on PATH (or through CMAKE_CUDA_COMPILER).
if [[ -x /usr/local/cuda/bin/nvcc && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH="$PATH:/usr/local/cuda/bin"
fi
GPL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPL_JOBS="$(nproc 2>/dev/null || echo 2)"
export GPL_ROOT GPL_JOBS
