#!/usr/bin/env bash
# Placeholder: installs spin (Debian package) when missing.
set -euo pipefail
exit 0
