#!/usr/bin/env bash
# Makes sure a PgBouncer binary is there for the pooled-connection tests (dev.fenceline.testkit.PgBouncer).
# Where the testkit looks: FENCELINE_PGBOUNCER_BIN, else pgbouncer on PATH, else /usr/sbin/pgbouncer (Debian puts
# it there, and /usr/sbin is not on every user's PATH). Installs Debian's pgbouncer package when it is missing and
# we are root; otherwise stops with the exact command to run. Prints nothing when the binary is there.
set -euo pipefail

configured="${FENCELINE_PGBOUNCER_BIN:-}"
if [ -n "$configured" ]; then
  # An explicit binary is the only candidate: silently installing or using another would hide the mistake.
  if [ -f "$configured" ] && [ -x "$configured" ]; then
    exit 0
  fi
  echo "fenceline: FENCELINE_PGBOUNCER_BIN is '$configured', which is not an executable file;" \
       "unset it to use Debian's /usr/sbin/pgbouncer, or point it at a PgBouncer 1.18+ binary." >&2
  exit 1
fi

find_pgbouncer() {
  command -v pgbouncer 2>/dev/null && return 0
  [ -x /usr/sbin/pgbouncer ] && { echo /usr/sbin/pgbouncer; return 0; }
  return 1
}

if find_pgbouncer >/dev/null; then
  exit 0
fi
if [ "${EUID:-$(id -u)}" -ne 0 ]; then
  echo "fenceline: pgbouncer is not installed and this is not root, so it cannot be installed here." >&2
  echo "           Ask an administrator to run: sudo apt-get update && sudo apt-get install -y pgbouncer" >&2
  echo "           (or set FENCELINE_PGBOUNCER_BIN to a PgBouncer 1.18+ binary)." >&2
  exit 1
fi
echo "fenceline: installing pgbouncer (Debian package)..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq --no-install-recommends pgbouncer >&2 || { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends pgbouncer >&2; }
# The package may start a system-wide PgBouncer on port 6432. The tests start their own on free ports and do not
# need it; stop that service only, through its own unit or init script (which find it by its pid file), and
# never by process name: other people's poolers on this machine are not ours to stop.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl stop pgbouncer >/dev/null 2>&1 || true
elif [ -x /etc/init.d/pgbouncer ]; then
  /etc/init.d/pgbouncer stop >/dev/null 2>&1 || true
fi
if ! find_pgbouncer >/dev/null; then
  echo "fenceline: apt-get installed pgbouncer but no pgbouncer binary is on PATH or at /usr/sbin/pgbouncer." >&2
  exit 1
fi
