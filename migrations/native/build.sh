#!/usr/bin/env bash
# Builds the native fencing guard (fenceline_guard.so: fencing.guard() in C) for the PostgreSQL that pg_config names
# into target/, next to target/fenceline_guard.pg-major (the server major version it was built for: a library loads
# only into that major). With --install it also copies it into that server's library directory (an administrator's
# step on a server you run; the scripts and the testkit never install it, they load it from target/). Optional:
# without it fencing.guard() stays PL/pgSQL (same behaviour, more CPU per transaction). After installing, a
# superuser runs
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
marker="$here/target/fenceline_guard.pg-major"
# Built under a temporary name and renamed: a test server copying the library while it is rebuilt gets the old file
# or the new one, never half of one. The old marker is removed before and the new one written after the rename, so a
# marker never names the major of a library it does not describe (the testkit reads it before and after its copy).
rm -f "$marker"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp" "$marker.tmp.$$"' EXIT
# shellcheck disable=SC2086
"$CC" $CFLAGS -fPIC -shared -Wall -Wmissing-prototypes -Wdeclaration-after-statement -Werror \
  -I"$include" -o "$tmp" "$here/fenceline_guard.c"
mv -f "$tmp" "$out"
echo "$major" > "$marker.tmp.$$" && mv -f "$marker.tmp.$$" "$marker"
echo "fenceline native guard: built $out for $version (major $major, recorded in $marker)" >&2

if [ -n "$install" ]; then
  libdir=$("$PG_CONFIG" --pkglibdir)
  [ -w "$libdir" ] || fail "cannot write $libdir; run as root (sudo PG_CONFIG=$PG_CONFIG $0 --install) or copy $out there"
  install -m 0755 "$out" "$libdir/fenceline_guard.so"
  echo "fenceline native guard: installed $libdir/fenceline_guard.so" >&2
fi
