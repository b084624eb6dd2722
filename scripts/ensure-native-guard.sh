#!/usr/bin/env bash
# Builds the native fencing guard (fencing.guard() in C, migrations/native) into migrations/native/target/, so the
# tests, the demo and the benchmark run with it: the testkit's PostgreSQL loads it from there (it copies
# fenceline_guard.so into the server's own temporary folder and puts that folder on dynamic_library_path), and the
# migrations switch to it by themselves. Nothing is installed: nothing is written outside this repository (the
# server headers, where pg_config has none, are downloaded as a Debian package file into target/ and unpacked there).
# Without it fencing.guard() stays PL/pgSQL: same decisions, more CPU.
# Called by ensure-tools.sh and fencing-jdbc/bench.sh.
#   FENCELINE_NATIVE_GUARD=auto (default)  build where possible; a failed build is a warning (PL/pgSQL guard)
#   FENCELINE_NATIVE_GUARD=required        a failed build is an error (scripts/test.sh: CI must test the native guard)
#   FENCELINE_NATIVE_GUARD=off             do nothing
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${FENCELINE_NATIVE_GUARD:-auto}"
case "$mode" in
  off) exit 0 ;;
  auto|required) ;;
  *) echo "fenceline: FENCELINE_NATIVE_GUARD must be auto, required or off; was '$mode'" >&2; exit 2 ;;
esac
if ! command -v pg_config >/dev/null 2>&1; then
  # No machine PostgreSQL: the testkit runs Zonky's embedded server, which keeps the PL/pgSQL guard.
  echo "fenceline: note: no pg_config on PATH, so no native guard; fencing.guard() stays PL/pgSQL." >&2
  exit 0
fi
if ! migrations/native/build.sh; then
  if [ "$mode" = required ]; then
    echo "fenceline: the native guard could not be built (see above) and FENCELINE_NATIVE_GUARD=required." >&2
    exit 1
  fi
  echo "fenceline: warning: the native guard could not be built (see above); fencing.guard() stays PL/pgSQL." >&2
fi
