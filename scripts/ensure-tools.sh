#!/usr/bin/env bash
# Everything the tests, the demo and the benchmarks need beyond the JDK and Maven.
# PostgreSQL needs nothing here: the testkit uses the machine's server binaries when present and Zonky's
# embedded binaries (a Maven artifact) otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-etcd.sh
# libfaketime, for the fault suite's clock jumps (wall clock only; the election runs on the monotonic clock).
have_faketime=
for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
  [ -e "$f" ] && have_faketime=1
done
if [ -z "$have_faketime" ]; then
  if [ "${EUID:-$(id -u)}" -eq 0 ]; then
    echo "fenceline: installing faketime (Debian package) for the fault suite's clock jumps..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq faketime >&2 || { apt-get update -qq >&2 && apt-get install -y -qq faketime >&2; }
  else
    echo "fenceline: note: libfaketime is not installed; the fault suite will skip clock jumps" \
         "(an administrator can run: sudo apt-get install -y faketime)." >&2
  fi
fi
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
