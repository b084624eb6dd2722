#!/usr/bin/env bash
# Election benchmark (not a test): starts its own 3-member etcd on loopback, prints latencies and rates.
# Installs nothing: compiles in the reactor and runs the benchmark on the reactor's class folders.
# Usage (from the repository root or anywhere):  election/run-benchmark.sh [-Dbench.only=holdoff]   (~4-5 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-etcd.sh
mvn -B -ntp -q -pl election -am test-compile dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile=target/bench.classpath
cp="election/target/test-classes:election/target/classes:$(cat election/target/bench.classpath)"
exec java -cp "$cp" -Dlogback.configurationFile=bench-logback.xml "$@" \
  dev.fenceline.election.bench.ElectionBenchmark
