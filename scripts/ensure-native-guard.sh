#!/usr/bin/env bash
# Builds and installs the native fencing guard where this user may; a note otherwise. Called by ensure-tools.sh and bench.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# The native guard (fencing.guard() in C, migrations/native): built and installed into the machine PostgreSQL's library
# folder when this user may write there, so the tests, the demo and the benchmark run with it (the migrations switch
# to it by themselves). Without it fencing.guard() stays PL/pgSQL: same behaviour, more CPU per transaction.
if command -v pg_config >/dev/null 2>&1; then
  pg_libdir=$(pg_config --pkglibdir)
  if [ -w "$pg_libdir" ]; then
    migrations/native/build.sh --install
  elif [ ! -f "$pg_libdir/fenceline_guard.so" ]; then
    echo "fenceline: note: the native guard is not installed (cannot write $pg_libdir); fencing.guard() stays" \
         "PL/pgSQL and its native tests are skipped (an administrator can run: sudo migrations/native/build.sh --install)." >&2
  fi
fi
