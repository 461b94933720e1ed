#!/usr/bin/env bash
# `eval --report` in a real browser: writes the demo catalog's report and opens it in headless
# Chromium from Debian's packages, driven by Selenium from PyPI (pinned below, in the project
# virtualenv), through infra/scripts/report_check.py: the page renders, every chart is drawn,
# no console error, nothing fetched. Then the same check must fail on a broken copy of the
# page (a script error, a chart removed), so a pass means something.
#   SWITCHYARD_BIN   the binary (default target/debug/switchyard)
#   --screenshot F   also save a picture of the page (the README's docs/report.png)
# Installs chromium and chromium-driver with apt where missing and run as root.
set -euo pipefail
cd "$(dirname "$0")/../.."
. infra/scripts/venv.sh

SELENIUM_VERSION="4.50.0"
BIN="${SWITCHYARD_BIN:-$(pwd)/target/debug/switchyard}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "report-check: $*" >&2
  exit 1
}
screenshot=()
if [ "${1:-}" = --screenshot ]; then screenshot=(--screenshot "$2"); fi

install() {
  if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then return; fi
  [ "$(id -u)" = 0 ] || fail "needs chromium and chromium-driver (sudo apt-get install chromium chromium-driver)"
  echo "report-check: installing chromium and chromium-driver from Debian's packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
}
if [ "${1:-}" = install ]; then
  install
  exit 0
fi
install
[ -x "$BIN" ] || fail "$BIN not found; cargo build --bin switchyard"
venv_ensure
python="$SWITCHYARD_VENV/bin/python"
if [ "$("$python" -c 'from importlib.metadata import version; print(version("selenium"))' 2>/dev/null)" != "$SELENIUM_VERSION" ]; then
  echo "report-check: installing selenium==$SELENIUM_VERSION into $SWITCHYARD_VENV"
  PIP_USER=0 "$python" -m pip install --quiet --disable-pip-version-check "selenium==$SELENIUM_VERSION" ||
    fail "pip could not install selenium==$SELENIUM_VERSION"
fi
./infra/scripts/fetch-model.sh >/dev/null

"$BIN" --templates templates/demo eval --dataset tests/data/demo/queries.jsonl \
  --latency-samples 0 --report "$WORK/report.html" >/dev/null || fail "eval --report failed"
"$python" infra/scripts/report_check.py "$WORK/report.html" "${screenshot[@]}" ||
  fail "the report failed its check (above)"

# The check must catch a broken page: a script that throws, and a chart gone.
sed -e 's|</body>|<script>undefinedFunction()</script></body>|' \
  -e 's|data-chart="reliability"|data-chart="gone"|' "$WORK/report.html" >"$WORK/broken.html"
if "$python" infra/scripts/report_check.py "$WORK/broken.html" 2>"$WORK/broken.log"; then
  fail "a broken page passed the check"
fi
grep -q "console errors" "$WORK/broken.log" && grep -q "chart reliability: missing" "$WORK/broken.log" ||
  fail "the broken page failed for the wrong reasons: $(cat "$WORK/broken.log")"
echo "report-check: a broken page is caught (a console error and a missing chart)"
