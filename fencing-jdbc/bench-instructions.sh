#!/usr/bin/env bash
# The fence's server-side cost in CPU instructions: deterministic, unlike tps on a shared machine (not a test).
# Applies the real fencing migrations (V*, then R__*) to a throwaway cluster and protects two tables with
# fencing.protect_table(), then runs a single-user backend under valgrind's callgrind and counts the instructions of
# N transactions on unprotected tables and on the protected ones with fencing.guard() switched to native and to
# PL/pgSQL (fencing.use_native_guard() / use_plpgsql_guard()), for a single-row UPDATE, a 100-row INSERT and 100
# single-row INSERTs, all as prepared statements in a session entered at the term with fencing.enter() (the guard's
# hot path); and, for the scope used behind transaction-mode poolers, with every transaction entered on its own by
# SELECT fencing.enter_transaction() (native guard). Per-transaction = (count at 1200 - count at 200) / 1000, so start-up cancels out.
# Usage: fencing-jdbc/bench-instructions.sh          (needs valgrind and the machine's PostgreSQL; ~3 min)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is needed (Debian: apt-get install -y valgrind)" >&2; exit 1; }
command -v pg_config >/dev/null || { echo "pg_config is needed (the machine's PostgreSQL)" >&2; exit 1; }
scripts/ensure-native-guard.sh
bindir=$(pg_config --bindir)
work=$(mktemp -d /tmp/fenceline-instr.XXXXXX)
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
trap 'as_pg "$bindir/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM   # so that an interrupted run still cleans up (through the EXIT trap)
if [ "$(id -u)" -eq 0 ]; then chown postgres "$work"; fi
as_pg "$bindir/initdb" -D "$work/data" -U postgres -A trust >/dev/null
# The native guard from the build folder (never installed): a copy the server may read, first on its library path.
lib=migrations/native/target/fenceline_guard.so
major=$(pg_config --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
if [ -f "$lib" ] && [ "$(cat migrations/native/target/fenceline_guard.pg-major 2>/dev/null)" = "$major" ]; then
  mkdir -p "$work/lib" && cp "$lib" "$work/lib/"
  if [ "$(id -u)" -eq 0 ]; then chown -R postgres "$work/lib"; fi
  echo "dynamic_library_path = '$work/lib:\$libdir'" >> "$work/data/postgresql.conf"
fi

# Set-up through a normal server on a Unix socket only (the migrations have multi-line statements).
as_pg "$bindir/pg_ctl" -D "$work/data" -w -l "$work/server.log" \
  -o "-c listen_addresses='' -c unix_socket_directories='$work' -c fsync=off" start >/dev/null
psql_setup() { PGOPTIONS='-c client_min_messages=warning' as_pg "$bindir/psql" -h "$work" -U postgres -d postgres -q -X -v ON_ERROR_STOP=1 "$@"; }
psql_setup -c "CREATE SCHEMA fencing"
# Flyway's order: versioned migrations by version, then repeatable ones by description.
for f in $(ls migrations/src/main/resources/db/fencing/V*__*.sql | sort -V) migrations/src/main/resources/db/fencing/R__*.sql; do
  psql_setup -f "$f"
done
psql_setup <<'SQL'
CREATE TABLE account_plain (id int PRIMARY KEY, balance bigint NOT NULL, fencing_term bigint);
CREATE TABLE entry_plain (id bigserial PRIMARY KEY, account int NOT NULL, amount bigint NOT NULL, fencing_term bigint);
CREATE TABLE account_fenced (LIKE account_plain INCLUDING ALL);
CREATE TABLE entry_fenced (LIKE entry_plain INCLUDING ALL);
SELECT fencing.protect_table('account_fenced', 'bench');
SELECT fencing.protect_table('entry_fenced', 'bench');
SELECT fencing.enter('bench', 7);
INSERT INTO account_plain (id, balance) SELECT g, 0 FROM generate_series(1, 10000) g;
INSERT INTO account_fenced (id, balance) SELECT g, 0 FROM generate_series(1, 10000) g;
VACUUM ANALYZE;
SQL
# The V5 migration switched to the native guard if, and only if, the library loads.
native=false
if [ "$(psql_setup -At -c "SELECT fencing.guard_implementation()")" = native ]; then native=true; fi
as_pg "$bindir/pg_ctl" -D "$work/data" -w stop >/dev/null

values=$(seq 1 100 | awk '{printf "%s(%d, %d)", (NR > 1 ? ", " : ""), $1, $1}')
script() {   # kind variant transactions
  local table=fenced
  case "$2" in
    plain) table=plain ;;
    native|native_tx) echo "SELECT fencing.use_native_guard();" ;;
    plpgsql) echo "SELECT fencing.use_plpgsql_guard();" ;;
  esac
  local enter_tx=
  if [ "$2" = native_tx ]; then
    echo "PREPARE e AS SELECT fencing.enter_transaction('bench', 7);"
    enter_tx="EXECUTE e;"
  else
    echo "SELECT fencing.enter('bench', 7);"
  fi
  echo "PREPARE u(int) AS UPDATE account_$table SET balance = balance + 1 WHERE id = \$1;"
  echo "PREPARE b AS INSERT INTO entry_$table (account, amount) VALUES $values;"
  echo "PREPARE s(int) AS INSERT INTO entry_$table (account, amount) VALUES (\$1, \$1);"
  for i in $(seq 1 "$3"); do
    echo "BEGIN;"
    if [ -n "$enter_tx" ]; then echo "$enter_tx"; fi
    case "$1" in
      single) echo "EXECUTE u($(( (i * 7919) % 10000 + 1 )));" ;;
      batch) echo "EXECUTE b;" ;;
      statements) for j in $(seq 1 100); do echo "EXECUTE s($j);"; done ;;
    esac
    echo "COMMIT;"
  done
}
count() {   # kind variant transactions -> instructions
  local out="$work/cg.out"
  script "$@" > "$work/in.sql"
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$work/in.sql"; fi
  # Every run starts from the same copy of the cluster, so one-off work (a new WAL segment, a relation extension)
  # lands at the same place in every run and cancels out in the difference.
  rm -rf "$work/run" && cp -a "$work/data" "$work/run"
  as_pg valgrind --tool=callgrind --callgrind-out-file="$out" "$bindir/postgres" --single -D "$work/run" \
    -c fsync=off -c synchronous_commit=off postgres < "$work/in.sql" > "$work/run.log" 2>&1
  # A single-user backend reports errors on its output and goes on: a count with an error in it means nothing.
  if grep -q ERROR "$work/run.log"; then grep -m3 -A2 ERROR "$work/run.log" >&2; exit 1; fi
  awk '/^summary:/ {print $2}' "$out"
}
echo "Server instructions per transaction (callgrind, single-user backend, prepared statements; $(pg_config --version))"
echo "| transaction | unfenced | native guard | ratio | PL/pgSQL guard | ratio | native, transaction scope | ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for kind in single batch statements; do
  lo=200; hi=1200
  if [ "$kind" = statements ]; then lo=20; hi=120; fi
  declare -A per=()
  for g in plain native plpgsql native_tx; do
    if [ "$g" != plain ] && [ "$g" != plpgsql ] && ! $native; then per[$g]=0; continue; fi
    a=$(count "$kind" "$g" "$lo"); b=$(count "$kind" "$g" "$hi")
    per[$g]=$(( (b - a) / (hi - lo) ))
  done
  label=$(case "$kind" in single) echo "single-row UPDATE";; batch) echo "100-row INSERT (one statement)";;
          statements) echo "100 single-row INSERTs";; esac)
  awk -v l="$label" -v p="${per[plain]}" -v n="${per[native]}" -v q="${per[plpgsql]}" -v x="${per[native_tx]}" 'BEGIN {
    printf "| %s | %d | %s | %s | %d | %.3f | %s | %s |\n", l, p, (n > 0 ? n : "n/a"), (n > 0 ? sprintf("%.3f", p / n) : "n/a"), q, p / q,
      (x > 0 ? x : "n/a"), (x > 0 ? sprintf("%.3f", p / x) : "n/a") }'
done
echo "ratio = unfenced / fenced instructions: the throughput ratio of a server that is CPU-bound on these transactions."
