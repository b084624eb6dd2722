#!/usr/bin/env bash
# Builds and installs the native fencing guard (fencing.guard() in C, migrations/native) into the machine
# PostgreSQL's library folder when this user may write there, so the tests, the demo and the benchmark run with it
# (the migrations switch to it by themselves). Without it fencing.guard() stays PL/pgSQL: same decisions, more CPU.
# Called by ensure-tools.sh and fencing-jdbc/bench.sh.
#   FENCELINE_NATIVE_GUARD=auto (default)  build where possible; a failed build is a warning (PL/pgSQL guard)
#   FENCELINE_NATIVE_GUARD=required        a failed build is an error (scripts/test.sh: CI must test the native guard)
#   FENCELINE_NATIVE_GUARD=off             do nothing
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${FENCELINE_NATIVE_GUARD:-auto}"
case "$mode" in
  off) exit 0 ;;
  auto|required) ;;
  *) echo "fenceline: FENCELINE_NATIVE_GUARD must be auto, required or off; was '$mode'" >&2; exit 2 ;;
esac
if ! command -v pg_config >/dev/null 2>&1; then
  echo "fenceline: note: no pg_config on PATH, so no native guard; fencing.guard() stays PL/pgSQL." >&2
  exit 0
fi
pg_libdir=$(pg_config --pkglibdir)
if [ -w "$pg_libdir" ]; then
  if ! migrations/native/build.sh --install; then
    if [ "$mode" = required ]; then
      echo "fenceline: the native guard could not be built (see above) and FENCELINE_NATIVE_GUARD=required." >&2
      exit 1
    fi
    echo "fenceline: warning: the native guard could not be built (see above); fencing.guard() stays PL/pgSQL." >&2
  fi
elif [ ! -f "$pg_libdir/fenceline_guard.so" ]; then
  echo "fenceline: note: the native guard is not installed (cannot write $pg_libdir); fencing.guard() stays" \
       "PL/pgSQL and its native tests are skipped (an administrator can run: sudo migrations/native/build.sh --install)." >&2
fi
