#!/usr/bin/env bash
# Headless Chromium, for the test that loads the fault suite's HTML report (RunReportHtmlIT) and checks that it
# renders without script errors. Debian's `chromium` package. Silent when it is there. Installs it when run as root;
# otherwise prints the command to run (the test then skips, unless FENCELINE_REQUIRE_CHROMIUM=1).
# Where the test looks: FENCELINE_CHROMIUM_BIN, else chromium on PATH, else /usr/bin/chromium.
set -euo pipefail
configured="${FENCELINE_CHROMIUM_BIN:-}"
if [ -n "$configured" ]; then
  if [ -f "$configured" ] && [ -x "$configured" ]; then
    exit 0
  fi
  echo "fenceline: FENCELINE_CHROMIUM_BIN is '$configured', which is not an executable file;" \
       "unset it to use Debian's /usr/bin/chromium." >&2
  exit 1
fi
command -v chromium >/dev/null 2>&1 && exit 0
[ -x /usr/bin/chromium ] && exit 0
if [ "${EUID:-$(id -u)}" -eq 0 ]; then
  echo "fenceline: installing chromium (Debian package) for the fault report's browser check..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq chromium >&2 || { apt-get update -qq >&2 && apt-get install -y -qq chromium >&2; }
else
  echo "fenceline: note: chromium is not installed; the fault report's browser check (RunReportHtmlIT) will skip" \
       "(an administrator can run: sudo apt-get install -y chromium)." >&2
fi
