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
    apt-get install -y -qq --no-install-recommends faketime >&2 || { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends faketime >&2; }
  else
    echo "fenceline: note: libfaketime is not installed; the fault suite will skip clock jumps" \
         "(an administrator can run: sudo apt-get install -y faketime)." >&2
  fi
fi
# PgBouncer, for the fence's pooled-connection tests (transaction pooling in the path).
scripts/ensure-pgbouncer.sh
# spin, the model checker that verifies the protocol model (model/).
scripts/ensure-spin.sh
# strace, to stall the etcd leader's fdatasync (StaleEtcdLeaderRevocationIT).
scripts/ensure-strace.sh
# headless Chromium, for the fault suite's HTML report check (HtmlReportBrowserIT).
scripts/ensure-chromium.sh
scripts/ensure-native-guard.sh
