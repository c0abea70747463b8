#!/bin/bash
# Runs shellcheck on every shell script under scripts/ (whoever wrote it), on these tests' own and on
# the ops tests' (tests/launcher/ops). A script is a file with a sh/bash shebang, or named *.sh /
# *.sbatch.
#   test_shellcheck.sh SOURCE_DIR
set -uo pipefail
src=${1:?source dir}
command -v shellcheck >/dev/null || { echo "FAIL: shellcheck is not installed (Debian: shellcheck)"; exit 1; }
scripts=()
while IFS= read -r -d '' f; do
  case $f in
    *.sh | *.sbatch) scripts+=("$f") ;;
    *)
      if head -n1 "$f" | grep -Eq '^#!.*\b(ba)?sh\b'; then scripts+=("$f"); fi ;;
  esac
done < <(find "$src/scripts" "$src/tests/scripts" "$src/tests/launcher/ops" -type f ! -name '*.py' ! -name '*.c' ! -name '*.jsonl' \
           ! -name 'Dockerfile*' ! -name 'CMakeLists.txt' -print0 | sort -z)
((${#scripts[@]} >= 5)) || { echo "FAIL: found only ${#scripts[@]} scripts under $src/scripts"; exit 1; }
bad=0
for f in "${scripts[@]}"; do
  # From the repository root, as the scripts' "# shellcheck source=scripts/..." directives
  # expect; -x follows `source` lines, -P SCRIPTDIR also finds files beside the script.
  if ! out=$(cd "$src" && shellcheck -x -P SCRIPTDIR "${f#"$src"/}" 2>&1); then
    echo "--- ${f#"$src"/}"
    echo "$out"
    bad=$((bad + 1))
  fi
done
echo "shellcheck: ${#scripts[@]} scripts, $bad with findings"
((bad == 0))
