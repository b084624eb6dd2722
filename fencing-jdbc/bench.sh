#!/usr/bin/env bash
# Fence benchmark (not a test): unfenced vs writer mode vs trigger mode against a DURABLE PostgreSQL.
# Usage: fencing-jdbc/bench.sh [-Dbench.seconds=1] [-Dbench.rounds=10] [-Dbench.warmup=2] [-Dbench.connections=1,4,16] [-Dbench.kinds=single,batch,statements,rewritten]
#        [-Dbench.guard=auto|native|plpgsql]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-native-guard.sh   # the native guard when this user may install it (-Dbench.guard=plpgsql measures the other)
mvn -B -ntp -q -pl fencing-jdbc -am install -DskipTests
exec mvn -B -ntp -q -pl fencing-jdbc test-compile exec:java@fence-bench "$@"
