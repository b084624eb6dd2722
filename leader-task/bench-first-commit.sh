#!/usr/bin/env bash
# First fenced commit after winning, in a fresh JVM per sample (not a test): warm start on vs off, interleaved.
# Starts its own durable PostgreSQL and 3-member etcd (testkit). Installs nothing: compiles in the reactor and runs
# the benchmark on the reactor's class folders.
# Usage: leader-task/bench-first-commit.sh [-Dbench.samples=20] [-Dbench.modes=warm,cold]     (~3 min)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-native-guard.sh
mvn -B -ntp -q -pl leader-task -am test-compile dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile=target/bench.classpath
cp="leader-task/target/test-classes:leader-task/target/classes:$(cat leader-task/target/bench.classpath)"
exec java -cp "$cp" "$@" dev.fenceline.task.bench.FirstCommitBenchmark
