#!/usr/bin/env bash
# strace, for StaleEtcdLeaderRevocationIT: it delays fdatasync on the etcd raft leader the test started
# (strace -f -e inject=fdatasync:delay_enter=... -p PID), from Debian's `strace` package.
# Silent when strace is already installed. Installs it when run as root; otherwise prints the command to run.
set -euo pipefail
command -v strace >/dev/null 2>&1 && exit 0
if [ "${EUID:-$(id -u)}" -eq 0 ]; then
  echo "fenceline: installing strace (Debian package) for the stalled-etcd-leader test..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends strace >&2 || { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends strace >&2; }
else
  echo "fenceline: note: strace is not installed; StaleEtcdLeaderRevocationIT will skip" \
       "(an administrator can run: sudo apt-get install -y strace)." >&2
fi
