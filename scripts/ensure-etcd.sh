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
apt-get install -y -qq --no-install-recommends etcd-server etcd-client >&2
# Debian's package may start its own etcd unit on the default ports; ours pick free ports, but do not leave that
# daemon behind either. Stop only that unit, through its service manager: never signal processes by name, since
# other etcd processes on this machine (someone's test cluster, a production member) are not ours to stop.
if command -v systemctl >/dev/null 2>&1 && systemctl list-unit-files etcd.service >/dev/null 2>&1; then
  systemctl stop etcd.service >/dev/null 2>&1 || true
fi
command -v etcd >/dev/null && command -v etcdctl >/dev/null
