#!/usr/bin/env bash
# The accept HTML page as a browser draws it: headless Chromium takes a screenshot of the sample
# report (a failed run with a slow node) and the PNG must show the red verdict banner and the
# chart's bars (red for slow pairs, green for good ones). Skips (77) where Chromium is absent
# (Debian package: chromium). ACCEPT_SCREENSHOT_DIR=DIR keeps the screenshot there.
#   test_accept_html_render.sh ACCEPT_RENDER
set -euo pipefail
RENDER=${1:?usage: test_accept_html_render.sh ACCEPT_RENDER}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BROWSER=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null; then
    BROWSER=$b
    break
  fi
done
if [ -z "$BROWSER" ]; then
  echo "SKIP: no headless Chromium (apt-get install chromium)"
  exit 77
fi
T=$(mktemp -d /tmp/gplaccept-html.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$RENDER" --sample "$T" >/dev/null
# A private profile, no sandbox (root in a container), no GPU; the page has no scripts to wait for.
timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$T/profile" \
  --window-size=1200,1400 --screenshot="$T/shot.png" "file://$T/report.html" >"$T/chromium.log" 2>&1 || {
  cat "$T/chromium.log"
  echo "FAIL: $BROWSER could not take the screenshot"
  exit 1
}
[ -s "$T/shot.png" ] || { echo "FAIL: no screenshot"; exit 1; }
[ -n "${ACCEPT_SCREENSHOT_DIR:-}" ] && cp "$T/shot.png" "$ACCEPT_SCREENSHOT_DIR/accept-report.png"
# Banner and slow bars: #b3261e; good pairs: #2e8b57.
read -r size red green < <(python3 "$HERE/png_colors.py" "$T/shot.png" b3261e 2e8b57)
echo "screenshot $size: $red red pixels, $green green pixels"
[ "$size" = 1200x1400 ] || { echo "FAIL: screenshot size $size"; exit 1; }
# The banner alone is 1200 x ~110 px; two green bars of ~400 x 20 px.
[ "$red" -gt 60000 ] || { echo "FAIL: the red verdict banner / slow bars are missing"; exit 1; }
[ "$green" -gt 8000 ] || { echo "FAIL: the chart's green bars are missing"; exit 1; }
echo "ok - Chromium renders the accept page with its verdict and chart"
