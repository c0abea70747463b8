#!/usr/bin/env bash
# Regenerate the generated blocks of README.md (and docs/*.md) from the built gpulaunch's tables.
#
# usage: scripts/gen-docs.sh [--check] [GPULAUNCH]
#   GPULAUNCH  the built binary (default: $GPULAUNCH, else build/launcher/gpulaunch)
#   --check    change nothing; exit 1 and show the difference when a block is stale (CTest runs
#              this: tests/launcher/CMakeLists.txt, docs_generated)
# A block is the lines between `<!-- BEGIN GENERATED name -->` and `<!-- END GENERATED name -->`;
# each name is made by one gpulaunch option (gens below):
#   exit-codes  gpulaunch --help-exit-codes   (launcher/exitcode.h, GPL_EXIT_LIST)
#   env-vars    gpulaunch --help-env          (common/envvar.h, ENVVAR_LIST)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check=0
if [[ ${1:-} == --check ]]; then
  check=1
  shift
fi
bin=${1:-${GPULAUNCH:-$root/build/launcher/gpulaunch}}
if [[ ! -x $bin ]]; then
  echo "gen-docs.sh: $bin: no gpulaunch built there (build first, or name it)" >&2
  exit 2
fi

# Each block's name and the gpulaunch option that prints it.
declare -A gens=([exit-codes]=--help-exit-codes [env-vars]=--help-env)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for name in "${!gens[@]}"; do "$bin" "${gens[$name]}" >"$tmp/$name"; done

stale=0
for doc in "$root/README.md" "$root"/docs/*.md; do
  [[ -f $doc ]] || continue
  grep -q '<!-- BEGIN GENERATED ' "$doc" || continue
  # Copy the file, replacing each block's lines by its command's output (a block of a name not
  # made here is kept as it is, with a note).
  if ! awk -v dir="$tmp" -v doc="${doc#"$root"/}" '
    /^<!-- BEGIN GENERATED [a-z-]+ -->$/ {
      print; inblock = $4; file = dir "/" $4
      skip = (getline line < file) > 0
      if (skip) { do print line; while ((getline line < file) > 0); close(file) }
      else print doc ": block " $4 " is not made by gen-docs.sh: kept as it is" > "/dev/stderr"
      next
    }
    /^<!-- END GENERATED [a-z-]+ -->$/ {
      if ($4 != inblock) { print doc ": END GENERATED " $4 " without its BEGIN" > "/dev/stderr"; bad = 1 }
      inblock = ""; skip = 0; print; next
    }
    !skip { print }
    END {
      if (inblock != "") { print doc ": BEGIN GENERATED " inblock " without its END" > "/dev/stderr"; bad = 1 }
      exit bad
    }' "$doc" >"$tmp/out"; then
    exit 2
  fi
  if ! cmp -s "$doc" "$tmp/out"; then
    if ((check)); then
      echo "gen-docs.sh: ${doc#"$root"/} is stale; run scripts/gen-docs.sh to update it:" >&2
      diff -u "$doc" "$tmp/out" | sed -n '3,40p' >&2 || true
      stale=1
    else
      cp "$tmp/out" "$doc"
      echo "gen-docs.sh: updated ${doc#"$root"/}"
    fi
  fi
done
exit $stale
