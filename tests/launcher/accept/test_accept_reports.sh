#!/usr/bin/env bash
# The reports of `gpulaunch accept` from a sample report (4 nodes, every status, a slow node,
# text that needs escaping): the JUnit file validates against junit.xsd, the HTML page is
# well-formed, readable by an HTML parser, self-contained, with one chart bar per measured pair;
# the exclude list is what scripts/hostfile reads; a saved JSON renders to the same files again.
#   test_accept_reports.sh ACCEPT_RENDER
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../../lib.sh"
RENDER=${1:?usage: test_accept_reports.sh ACCEPT_RENDER}
XSD="${GPULAUNCH_SOURCE_DIR:?}/tests/launcher/accept/junit.xsd"
"$RENDER" --sample "$T" >"$T/table.txt"

# JUnit: schema, suites, counts.
xmllint --noout --schema "$XSD" "$T/junit.xml" || fail "junit.xml does not validate against junit.xsd"
[ "$(xmllint --xpath 'count(/testsuites/testsuite)' "$T/junit.xml")" = 5 ] || fail "expected 4 node suites + 1 job suite"
[ "$(xmllint --xpath 'string(/testsuites/testsuite[last()]/@name)' "$T/junit.xml")" = job ] || fail "the job suite comes last"
[ "$(xmllint --xpath 'count(//failure)' "$T/junit.xml")" = "$(xmllint --xpath 'sum(/testsuites/testsuite/@failures)' "$T/junit.xml")" ] ||
  fail "failures attribute does not match the <failure> elements"
[ "$(xmllint --xpath 'count(//testsuite[@hostname="gpu-a03"]//testcase[@name="bad_node[gpu-a03]"]/failure)' "$T/junit.xml")" = 1 ] ||
  fail "the slow node's failure is not in its own suite"
grep -q 'hostname="gpu-&lt;a&amp;04&gt;"' "$T/junit.xml" || fail "host name not escaped in JUnit"
echo "ok - JUnit validates (xmllint --schema junit.xsd), suites and counts agree"

# HTML: well-formed XML, parsed as HTML with no error but libxml2's HTML4 view of SVG elements.
xmllint --noout "$T/report.html" || fail "report.html is not well-formed"
xmllint --html --noout "$T/report.html" 2>"$T/html.err" || true
if grep -E 'parser (error|warning)' "$T/html.err" | grep -qvE 'Tag (svg|rect|line|text|title) invalid'; then
  cat "$T/html.err"
  fail "HTML parser errors"
fi
npairs=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["search"]["measurements"]))' "$T/report.json")
nbars=$(xmllint --xpath 'count(//*[local-name()="svg"]//*[local-name()="rect" and contains(@class,"pair")])' "$T/report.html")
if [ "$npairs" != 5 ] || [ "$nbars" != "$npairs" ]; then fail "chart: $nbars pair bars for $npairs measurements"; fi
nred=$(xmllint --xpath 'count(//*[local-name()="rect" and contains(@class,"flagged")])' "$T/report.html")
[ "$nred" = 4 ] || fail "chart: $nred flagged bars, expected 4 (3 slow pairs and the whole job)"
! grep -Eq '<(script|link|img|iframe)|src=|url\(' "$T/report.html" || fail "the page loads something from outside"
grep -q 'Cluster acceptance: FAILED' "$T/report.html" || fail "no verdict"
grep -q 'gpu-&lt;a&amp;04&gt;' "$T/report.html" || fail "host name not escaped in HTML"
echo "ok - HTML well-formed, self-contained, $nbars pair bars ($nred flagged)"

# Exclude list: a comment, then one host per line (the node named by the search, the node with a
# failed check), as scripts/hostfile --exclude reads it.
[ "$(grep -v '^#' "$T/bad.txt" | tr '\n' ' ')" = "gpu-a03 gpu-a02 " ] || fail "exclude list: $(cat "$T/bad.txt")"
if [ -x "$GPULAUNCH_SOURCE_DIR/scripts/hostfile" ]; then
  out=$("$GPULAUNCH_SOURCE_DIR/scripts/hostfile" --exclude "$T/bad.txt" gpu-a01 gpu-a02 gpu-a03 gpu-a04 | awk '{print $1}' | tr '\n' ' ')
  [ "$out" = "gpu-a01 gpu-a04 " ] || fail "scripts/hostfile --exclude kept: $out"
  echo "ok - scripts/hostfile --exclude leaves out the bad hosts"
fi
echo "ok - exclude list"

# A saved JSON renders to the same JUnit and HTML.
mkdir "$T/again"
"$RENDER" "$T/report.json" --junit "$T/again/junit.xml" --html "$T/again/report.html" --exclude "$T/again/bad.txt" --table >"$T/again/table.txt"
for f in junit.xml report.html bad.txt table.txt; do
  cmp -s "$T/$f" "$T/again/$f" || fail "$f differs when rendered from the saved JSON"
done
echo "ok - re-rendered from JSON: identical files"
grep -q '^Result: FAIL' "$T/table.txt" || fail "table verdict"
grep -q '^Bad hosts: gpu-a03 gpu-a02' "$T/table.txt" || fail "table bad hosts"
echo "ok - terminal table"
