#!/usr/bin/env bash
# Regenerate the generated blocks of README.md (and docs/*.md) from the built gpulaunch's tables.
#
# usage: scripts/gen-docs.sh [--check] [GPULAUNCH]
#   GPULAUNCH  the built binary (default: $GPULAUNCH, else build/launcher/gpulaunch)
#   --check    change nothing; exit 1 and show the difference when a block is stale (CTest runs
#              this: tests/launcher/CMakeLists.txt, docs_generated)
# A block is the lines between `<!-- BEGIN GENERATED name -->` and `<!-- END GENERATED name -->`;
# each name is made by one command:
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

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" --help-exit-codes >"$tmp/exit-codes"
"$bin" --help-env >"$tmp/env-vars"

stale=0
for doc in "$root/README.md" "$root"/docs/*.md; do
  [[ -f $doc ]] || continue
  grep -q '<!-- BEGIN GENERATED ' "$doc" || continue
  # Copy the file, replacing each block's lines by its command's output.
  if ! awk -v dir="$tmp" -v doc="${doc#"$root"/}" '
    match($0, /^<!-- BEGIN GENERATED [a-z-]+ -->$/) {
      name = $4; print
      file = dir "/" name
      if ((getline line < file) <= 0) { print doc ": no generator for block " name > "/dev/stderr"; bad = 1 }
      else { do print line; while ((getline line < file) > 0) }
      close(file); inblock = name; next
    }
    /^<!-- END GENERATED [a-z-]+ -->$/ {
      if ($4 != inblock) { print doc ": END GENERATED " $4 " without its BEGIN" > "/dev/stderr"; bad = 1 }
      inblock = ""; print; next
    }
    inblock == "" { print }
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
