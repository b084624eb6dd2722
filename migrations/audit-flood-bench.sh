#!/usr/bin/env bash
# Audit flood benchmark (not a test): raw stale writes through scram-sha-256 against a DURABLE PostgreSQL; prints
# per-rejection latency and audited rejections per second for 1 and 16 connections.
# Usage: migrations/audit-flood-bench.sh [-Dbench.total=20000] [-Dbench.connections=16] [-Dbench.single=2000]
set -euo pipefail
cd "$(dirname "$0")/.."
cp_file=$(mktemp)
trap 'rm -f "$cp_file"' EXIT
mvn -B -ntp -q -pl migrations -am test-compile dependency:build-classpath -Dmdep.includeScope=test \
    -Dmdep.outputFile="$cp_file" >/dev/null
classpath="migrations/target/test-classes:migrations/target/classes:$(cat "$cp_file")"
java "$@" -cp "$classpath" dev.fenceline.migrations.AuditFloodBenchmark
