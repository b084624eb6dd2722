#!/usr/bin/env bash
# spin, the model checker that verifies the protocol model (model/check.sh), from Debian's `spin` package.
# Silent when spin is already installed. Installs it when run as root; otherwise prints the command to run.
set -euo pipefail
command -v spin >/dev/null 2>&1 && exit 0
if [ "${EUID:-$(id -u)}" -eq 0 ]; then
  echo "fenceline: installing spin (Debian package) for the protocol model check..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends spin >&2 || { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends spin >&2; }
else
  echo "fenceline: note: spin is not installed; the protocol model check (ProtocolModelIT) will skip" \
       "(an administrator can run: sudo apt-get install -y spin)." >&2
fi
