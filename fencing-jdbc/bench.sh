#!/usr/bin/env bash
# Fence benchmark (not a test): unfenced vs writer mode vs trigger mode against a DURABLE PostgreSQL.
# Usage: fencing-jdbc/bench.sh [-Dbench.seconds=1] [-Dbench.rounds=8] [-Dbench.connections=1,4,16] [-Dbench.kinds=single,batch,statements]
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -B -ntp -q -pl fencing-jdbc -am install -DskipTests
exec mvn -B -ntp -q -pl fencing-jdbc test-compile exec:java@fence-bench "$@"
