#!/usr/bin/env bash
# Everything the tests, the demo and the benchmarks need beyond the JDK and Maven.
# PostgreSQL needs nothing here: the testkit uses the machine's server binaries when present and Zonky's
# embedded binaries (a Maven artifact) otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-etcd.sh
