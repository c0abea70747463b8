#!/usr/bin/env bash
# The exit codes agree in launcher/exitcode.h (GPL_EXIT_LIST), `gpulaunch --help` and README.md:
# every code of the table is in --help's "Exit status" lines and is a row of the README's table,
# and the README has no row the table lacks. (That README's block is exactly what the table makes
# is docs_generated's check, scripts/gen-docs.sh --check.)
source "$(dirname "$0")/../lib.sh"
src=${GPULAUNCH_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
bin=$GPULAUNCH

# The table's labels: X(NAME, code, ...) and R("label", ...).
labels=$(grep -oE '^ *(X\([A-Z_]+, [0-9]+|R\("[^"]+")' "$src/launcher/exitcode.h" |
         sed -E 's/^ *X\([A-Z_]+, //; s/^ *R\("//; s/"$//')
[[ $(wc -l <<<"$labels") -ge 17 ]] || fail "too few rows read from exitcode.h: $labels"

help=$("$bin" --help | sed -n '/^Exit status:/,/^$/p')
[[ -n $help ]] || fail "no Exit status section in --help"
readme=$(sed -n '/<!-- BEGIN GENERATED exit-codes -->/,/<!-- END GENERATED exit-codes -->/p' "$src/README.md")
[[ -n $readme ]] || fail "README.md has no exit-codes block"

while IFS= read -r l; do
  grep -qF -- "$l " <<<"$help" || fail "exit status $l is not in --help"
  grep -qF -- "| $l |" <<<"$readme" || fail "exit status $l is not in the README's table"
done <<<"$labels"
rows=$(grep -cE '^\| [0-9]' <<<"$readme")
[[ $rows -eq $(wc -l <<<"$labels") ]] || fail "README has $rows rows, the table $(wc -l <<<"$labels")"
# The enum's values are the table's: a code of gpulaunch's own in --help is one of them.
for c in $(grep -oE '(^|  )(6[4-9]|7[0-9]) ' <<<"$help" | tr -d ' '); do
  grep -qx "$c" <<<"$labels" || fail "--help names exit status $c, which exitcode.h lacks"
done
echo "ok: $(wc -l <<<"$labels") exit statuses agree"
