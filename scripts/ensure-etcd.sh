#!/usr/bin/env bash
# Makes sure etcd and etcdctl (3.4+) are on PATH. Installs Debian's etcd-server/etcd-client when missing and we
# are root; otherwise stops with the exact command to run. Prints nothing when all is there.
set -euo pipefail
if command -v etcd >/dev/null 2>&1 && command -v etcdctl >/dev/null 2>&1; then
  exit 0
fi
if [ "${EUID:-$(id -u)}" -ne 0 ]; then
  echo "fenceline: etcd/etcdctl are not installed and this is not root, so they cannot be installed here." >&2
  echo "           Ask an administrator to run: sudo apt-get update && sudo apt-get install -y etcd-server etcd-client" >&2
  echo "           (or set FENCELINE_ETCD_BIN and FENCELINE_ETCDCTL_BIN to etcd 3.4+ binaries)." >&2
  exit 1
fi
echo "fenceline: installing etcd-server and etcd-client (Debian packages)..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq etcd-server etcd-client >&2
# Debian's package may try to start a system etcd on the default ports; ours pick free ports, but do not leave
# a stray daemon behind either.
if command -v systemctl >/dev/null 2>&1; then systemctl stop etcd >/dev/null 2>&1 || true; fi
pkill -x etcd >/dev/null 2>&1 || true
command -v etcd >/dev/null && command -v etcdctl >/dev/null
