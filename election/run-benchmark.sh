#!/usr/bin/env bash
# Election benchmark (not a test): starts its own 3-member etcd on loopback, prints latencies and rates.
# Usage (from the repository root or anywhere):  election/run-benchmark.sh      (~4-5 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -B -ntp -q -pl election -am install -DskipTests
cd election
exec mvn -B -ntp -q exec:java -Dexec.classpathScope=test \
  -Dexec.mainClass=dev.fenceline.election.bench.ElectionBenchmark -Dlogback.configurationFile=bench-logback.xml
