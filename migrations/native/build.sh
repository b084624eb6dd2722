#!/usr/bin/env bash
# Builds the native fencing guard (fenceline_guard.so: fencing.guard() in C) for the PostgreSQL that pg_config names,
# and with --install copies it into that server's library directory. Optional: without it fencing.guard() stays
# PL/pgSQL (same behaviour, more CPU per transaction). After installing, a superuser runs
#   SELECT fencing.use_native_guard();      -- or applies the migrations again on a fresh schema
#
# Usage: migrations/native/build.sh [--install]        (PG_CONFIG=/path/to/pg_config to pick a server; CC, CFLAGS)
# Needs gcc (or CC) and the server headers: pg_config --includedir-server, or, on Debian/Ubuntu, the headers are
# unpacked from the postgresql-server-dev-<major> package into target/ (downloaded, not installed: installing the
# package would also upgrade the server and pull in clang).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
CC=${CC:-gcc}
CFLAGS=${CFLAGS:--O2 -g}
install=
case "${1:-}" in
  --install) install=1 ;;
  "") ;;
  *) echo "usage: $0 [--install]" >&2; exit 2 ;;
esac

fail() { echo "fenceline native guard: $*" >&2; exit 1; }
command -v "$PG_CONFIG" >/dev/null || fail "pg_config not found (set PG_CONFIG=/path/to/pg_config)"
command -v "$CC" >/dev/null || fail "no C compiler ($CC); install gcc (Debian: apt-get install -y gcc)"
version=$("$PG_CONFIG" --version)                       # e.g. "PostgreSQL 15.18 (Debian 15.18-0+deb12u1)"
major=$(echo "$version" | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
[[ "$major" =~ ^[0-9]+$ ]] || fail "cannot read the major version from '$version'"
mkdir -p "$here/target"

include=$("$PG_CONFIG" --includedir-server)
if [ ! -f "$include/postgres.h" ]; then
  unpacked="$here/target/headers-$major"
  include="$unpacked/usr/include/postgresql/$major/server"
  if [ ! -f "$include/postgres.h" ]; then
    command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
      || fail "server headers missing ($("$PG_CONFIG" --includedir-server)/postgres.h); install your distribution's PostgreSQL $major server development package"
    pkg="postgresql-server-dev-$major"
    rm -rf "$here/target/deb" && mkdir -p "$here/target/deb"
    echo "fenceline native guard: unpacking the headers of $pkg into $unpacked" >&2
    ( cd "$here/target/deb" && { apt-get download -q "$pkg" 2>/dev/null || { apt-get update -qq && apt-get download -q "$pkg"; }; } ) >&2 \
      || fail "could not download $pkg (apt-get download); install it, or point PG_CONFIG at a PostgreSQL with headers"
    rm -rf "$unpacked" && dpkg-deb -x "$here"/target/deb/"$pkg"_*.deb "$unpacked"
    [ -f "$include/postgres.h" ] || fail "$pkg did not contain $include/postgres.h"
  fi
fi

out="$here/target/fenceline_guard.so"
# shellcheck disable=SC2086
"$CC" $CFLAGS -fPIC -shared -Wall -Wmissing-prototypes -Wdeclaration-after-statement -Werror \
  -I"$include" -o "$out" "$here/fenceline_guard.c"
echo "fenceline native guard: built $out for $version" >&2

if [ -n "$install" ]; then
  libdir=$("$PG_CONFIG" --pkglibdir)
  [ -w "$libdir" ] || fail "cannot write $libdir; run as root (sudo PG_CONFIG=$PG_CONFIG $0 --install) or copy $out there"
  install -m 0755 "$out" "$libdir/fenceline_guard.so"
  echo "fenceline native guard: installed $libdir/fenceline_guard.so" >&2
fi
