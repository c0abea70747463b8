#!/usr/bin/env bash
# common/envvar.h is the one list of GPULAUNCH_* variables: no product C file reads one with
# getenv but the srun shim (loaded into srun, it links nothing of ours), every variable it and
# the Slurm templates read is in the table, and every row of the table is read somewhere.
set -euo pipefail
src=${GPULAUNCH_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$src"
fail() { echo "FAIL: $*" >&2; exit 1; }

table=$(grep -oE '^  X\([A-Z_]+, "GPULAUNCH_[A-Z0-9_]+"' common/envvar.h | grep -oE 'GPULAUNCH_[A-Z0-9_]+' | sort)
[[ -n $table ]] || fail "no rows found in common/envvar.h"
[[ $(uniq -d <<<"$table") == "" ]] || fail "a name twice in the table: $(uniq -d <<<"$table")"

product=(common comm kernels topology launcher include)
bad=$(grep -rnE 'getenv\("GPULAUNCH_' "${product[@]}" --include='*.c' --include='*.h' --include='*.cu' |
      grep -vE '^launcher/srunshim/' || true)
[[ -z $bad ]] || fail "read it with envvar_get (common/envvar.h), not getenv:"$'\n'"$bad"

# What the shim and the templates read.
read_elsewhere=$( { grep -rhoE 'getenv\("GPULAUNCH_[A-Z0-9_]+' launcher/srunshim;
                    grep -rhoE '\$\{?GPULAUNCH_[A-Z0-9_]+' scripts/slurm; } |
                  grep -oE 'GPULAUNCH_[A-Z0-9_]+' | sort -u)
for v in $read_elsewhere; do
  grep -qx "$v" <<<"$table" || fail "$v is read but not in common/envvar.h's table"
done
# Each row is read: through envvar_get (by its ID), or by the shim or a template.
for v in $table; do
  id=${v#GPULAUNCH_}
  grep -rqE "envvar_get\(ENVVAR_${id}\)" "${product[@]}" --include='*.c' && continue
  grep -qx "$v" <<<"$read_elsewhere" && continue
  fail "$v is in the table but nothing reads it"
done
echo "ok: $(wc -l <<<"$table") variables, every read through the table"
