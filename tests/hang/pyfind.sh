# shellcheck shell=bash disable=SC2034 # PY is for the scripts that source this
# A Python with PyTorch's torch.distributed (Debian's python3-torch is for /usr/bin/python3), as
# tests/torch/test_torch.sh finds it; SCRIPT is the torchrun-style training loop.
PY=""
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import torch.distributed as d, sys; sys.exit(0 if d.is_available() else 1)' 2>/dev/null; then PY=$(command -v "$p"); break; fi
done
if [[ -z $PY ]]; then
  echo "SKIP: no Python with PyTorch (scripts/install-deps.sh installs Debian's python3-torch)"
  exit 77
fi
SCRIPT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/hang_train.py"
export OMP_NUM_THREADS=1
