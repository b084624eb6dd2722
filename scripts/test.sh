#!/usr/bin/env bash
# The whole test suite from a clean checkout: installs what the tests need, then `mvn verify`
# (unit tests under surefire, *IT under failsafe, against real PostgreSQL and a real 3-member etcd).
# Extra arguments go to Maven, e.g. scripts/test.sh -pl fencing-jdbc -am
set -euo pipefail
cd "$(dirname "$0")/.."
# Where the scripts may install the native guard, the suite must test it: a failed build fails the run.
export FENCELINE_NATIVE_GUARD="${FENCELINE_NATIVE_GUARD:-required}"
scripts/ensure-tools.sh
# Built above into migrations/native/target/ (the testkit's servers load it from there): then the native guard's
# tests must run, not skip, so a library the testkit cannot load fails the run. Not when the tests are pointed at
# other server binaries (FENCELINE_PG_BINDIR; the library is built for pg_config's server) or at Zonky's embedded
# server (it keeps the PL/pgSQL guard).
case "${FENCELINE_POSTGRES:-auto}" in
  auto|local) on_machine_binaries=1 ;;
  *) on_machine_binaries= ;;
esac
if [ -z "${FENCELINE_PG_BINDIR:-}" ] && [ -n "$on_machine_binaries" ] \
   && [ -f migrations/native/target/fenceline_guard.so ]; then
  export FENCELINE_REQUIRE_NATIVE_GUARD="${FENCELINE_REQUIRE_NATIVE_GUARD:-1}"
fi
# Chromium there (installed above, as root): then the HTML report's browser check must run, not skip.
if [ -n "${FENCELINE_CHROMIUM_BIN:-}" ] || command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
  export FENCELINE_REQUIRE_CHROMIUM="${FENCELINE_REQUIRE_CHROMIUM:-1}"
fi
exec mvn -B -ntp verify "$@"
