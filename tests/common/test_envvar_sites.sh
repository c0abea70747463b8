#!/usr/bin/env bash
# common/envvar.h is the one list of GPULAUNCH_* variables: no product C file reads one with
# getenv but the srun shim (loaded into srun, it links nothing of ours) nor writes a name by hand,
# every variable it and the Slurm templates read is in the table, and every row of the table is
# read somewhere (or, given to the program, set).
source "$(dirname "$0")/../lib.sh"
src=${GPULAUNCH_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$src"

table=$(grep -oE '^  X\([A-Z_]+, "GPULAUNCH_[A-Z0-9_]+"' common/envvar.h | grep -oE 'GPULAUNCH_[A-Z0-9_]+' | sort)
[[ -n $table ]] || fail "no rows found in common/envvar.h"
[[ $(uniq -d <<<"$table") == "" ]] || fail "a name twice in the table: $(uniq -d <<<"$table")"

product=(common comm kernels topology launcher include)
bad=$(grep -rnE 'getenv\("GPULAUNCH_' "${product[@]}" --include='*.c' --include='*.h' --include='*.cu' |
      grep -vE '^launcher/srunshim/' || true)
[[ -z $bad ]] || fail "read it with envvar_get (common/envvar.h), not getenv:"$'\n'"$bad"

# Nor names one by hand: a whole "GPULAUNCH_..." string in a product C file (a variable set for the
# program or another process of ours) comes from the table too (envvar_name, ENVVAR_LITERAL).
bad=$(grep -rnE '"GPULAUNCH_[A-Z0-9_]+"' "${product[@]}" --include='*.c' --include='*.h' --include='*.cu' |
      grep -vE '^(launcher/srunshim/|common/envvar\.h:)' || true)
[[ -z $bad ]] || fail "name it through common/envvar.h (envvar_name(ENVVAR_X), ENVVAR_LITERAL(X)):"$'\n'"$bad"
literal_ids=$(grep -rhoE 'ENVVAR_LITERAL\([A-Z0-9_]+\)' "${product[@]}" --include='*.c' --include='*.h' |
              grep -oE '\([A-Z0-9_]+\)' | tr -d '()' | sort -u | grep -vx id || true)
for id in $literal_ids; do
  grep -qx "GPULAUNCH_$id" <<<"$table" || fail "ENVVAR_LITERAL($id): no GPULAUNCH_$id in common/envvar.h's table"
done

# What the shim and the templates read.
read_elsewhere=$( { grep -rhoE 'getenv\("GPULAUNCH_[A-Z0-9_]+' launcher/srunshim;
                    grep -rhoE '\$\{?GPULAUNCH_[A-Z0-9_]+' scripts/slurm; } |
                  grep -oE 'GPULAUNCH_[A-Z0-9_]+' | sort -u)
for v in $read_elsewhere; do
  grep -qx "$v" <<<"$table" || fail "$v is read but not in common/envvar.h's table"
done
# Each row is read: through envvar_get (by its ID), or by the shim or a template; a row given to
# the program (ENVVAR_PROGRAM) is set: named through the table where gpulaunch passes it on.
program=$(grep -oE '^  X\([A-Z_]+, "GPULAUNCH_[A-Z0-9_]+", "[^"]*", ENVVAR_PROGRAM' common/envvar.h |
          grep -oE 'GPULAUNCH_[A-Z0-9_]+' | sort)
for v in $table; do
  id=${v#GPULAUNCH_}
  grep -rqE "envvar_get\(ENVVAR_${id}\)" "${product[@]}" --include='*.c' && continue
  grep -qx "$v" <<<"$read_elsewhere" && continue
  if grep -qx "$v" <<<"$program"; then
    grep -rqE "envvar_name\(ENVVAR_${id}\)|ENVVAR_LITERAL\(${id}\)" "${product[@]}" --include='*.c' --include='*.h' && continue
    fail "$v is given to the program in the table but nothing sets it"
  fi
  fail "$v is in the table but nothing reads it"
done
echo "ok: $(wc -l <<<"$table") variables, every read through the table"
