#!/usr/bin/env bash
# The whole test suite from a clean checkout: installs what the tests need, then `mvn verify`
# (unit tests under surefire, *IT under failsafe, against real PostgreSQL and a real 3-member etcd).
# Extra arguments go to Maven, e.g. scripts/test.sh -pl fencing-jdbc -am
set -euo pipefail
cd "$(dirname "$0")/.."
# Where the scripts may install the native guard, the suite must test it: a failed build fails the run.
export FENCELINE_NATIVE_GUARD="${FENCELINE_NATIVE_GUARD:-required}"
scripts/ensure-tools.sh
# Installed above (or before, by an administrator): then the native guard's tests must run, not skip.
if [ -z "${FENCELINE_PG_BINDIR:-}" ] && command -v pg_config >/dev/null 2>&1 \
   && [ -f "$(pg_config --pkglibdir)/fenceline_guard.so" ]; then
  export FENCELINE_REQUIRE_NATIVE_GUARD="${FENCELINE_REQUIRE_NATIVE_GUARD:-1}"
fi
exec mvn -B -ntp verify "$@"
