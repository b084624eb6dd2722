#!/usr/bin/env bash
# The whole test suite from a clean checkout: installs what the tests need, then `mvn verify`
# (unit tests under surefire, *IT under failsafe, against real PostgreSQL and a real 3-member etcd).
# Extra arguments go to Maven, e.g. scripts/test.sh -pl fencing-jdbc -am
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-tools.sh
exec mvn -B -ntp verify "$@"
