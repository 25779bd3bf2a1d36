#!/usr/bin/env bash
# Headless Chromium (Debian's `chromium` package) for the tests that open the HTML report in a browser
# (cli/report/report-browser.test.ts). Not needed to run Longhaul, so install.sh leaves it out and
# the test command calls this only when such a test is selected. Idempotent: does nothing when a
# chromium binary is on PATH (or LONGHAUL_CHROMIUM names one). Installing needs root (apt-get) and
# the Debian registry: about 110 MB downloaded, 400 MB on disk (25 packages); measured 79 s on a 2-core machine.
set -euo pipefail
say() { printf '[install] %s\n' "$*" >&2; }
if [ -n "${LONGHAUL_CHROMIUM:-}" ] && [ -x "$LONGHAUL_CHROMIUM" ]; then exit 0; fi
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  say "chromium is missing and this is not root: install Debian's chromium package (sudo apt-get install chromium) or set LONGHAUL_CHROMIUM to a Chromium binary"
  exit 1
fi
command -v apt-get >/dev/null || { say "chromium is missing and there is no apt-get: install Chromium and set LONGHAUL_CHROMIUM to its binary"; exit 1; }
say "installing Debian's chromium for the report's browser test (apt-get; about 110 MB, once)…"
export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
{ apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } >"$log" 2>&1 \
  || { tail -n 30 "$log" >&2; rm -f "$log"; say "FAILED: apt-get install chromium (see above)"; exit 1; }
rm -f "$log"
command -v chromium >/dev/null || { say "apt-get installed chromium but it is not on PATH"; exit 1; }
