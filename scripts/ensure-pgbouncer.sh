#!/usr/bin/env bash
# Placeholder: installs pgbouncer (Debian package) when missing.
set -euo pipefail
exit 0
