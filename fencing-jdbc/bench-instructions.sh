#!/usr/bin/env bash
# The fence's server-side cost in CPU instructions: deterministic, unlike tps on a shared machine (not a test).
# Runs a single-user PostgreSQL backend under valgrind's callgrind and counts the instructions of N transactions
# on an unprotected table and on tables guarded by the native and by the PL/pgSQL fencing.guard(), for a single-row
# UPDATE, a 100-row INSERT and 100 single-row INSERTs, all as prepared statements in a session entered at the
# term (the guard's hot path). Per-transaction = (count at 1200 - count at 200) / 1000, so start-up cancels out.
# Usage: fencing-jdbc/bench-instructions.sh          (needs valgrind and the machine's PostgreSQL; ~3 min)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is needed (Debian: apt-get install -y valgrind)" >&2; exit 1; }
command -v pg_config >/dev/null || { echo "pg_config is needed (the machine's PostgreSQL)" >&2; exit 1; }
scripts/ensure-native-guard.sh
bindir=$(pg_config --bindir)
work=$(mktemp -d /tmp/fenceline-instr.XXXXXX)
trap 'rm -rf "$work"' EXIT
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if [ "$(id -u)" -eq 0 ]; then chown postgres "$work"; fi
as_pg "$bindir/initdb" -D "$work/data" -U postgres -A trust >/dev/null
single() { as_pg "$bindir/postgres" --single -D "$work/data" -c fsync=off -c synchronous_commit=off "$@" postgres; }

# A single-user backend reports errors on its output and goes on, so look for them there.
native=false
if ! echo "CREATE FUNCTION pg_temp.probe() RETURNS trigger LANGUAGE c AS 'fenceline_guard', 'fenceline_guard';" \
     | single 2>&1 | grep -q ERROR; then native=true; fi
{
  echo "SET fencing.entered_1 = '7';"   # the guard's hot path: this session counts as entered at term 7
  echo "CREATE TABLE account_plain (id int PRIMARY KEY, balance bigint NOT NULL, fencing_term bigint);"
  echo "CREATE TABLE entry_plain (id bigserial PRIMARY KEY, account int NOT NULL, amount bigint NOT NULL, fencing_term bigint);"
  echo "CREATE FUNCTION guard_plpgsql() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN IF pg_catalog.current_setting(TG_ARGV[0], true) <> '' AND COALESCE(pg_catalog.current_setting('fencing.term', true), '') IN ('', pg_catalog.current_setting(TG_ARGV[0], true)) THEN RETURN NULL; END IF; RAISE EXCEPTION 'not entered'; END \$\$;"
  if $native; then echo "CREATE FUNCTION guard_native() RETURNS trigger LANGUAGE c AS 'fenceline_guard', 'fenceline_guard';"; fi
  for g in plpgsql native; do
    if [ "$g" = native ] && ! $native; then continue; fi
    echo "CREATE TABLE account_$g (LIKE account_plain INCLUDING ALL);"
    echo "CREATE TABLE entry_$g (LIKE entry_plain INCLUDING ALL);"
    for t in account entry; do
      echo "CREATE TRIGGER fencing_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${t}_$g FOR EACH STATEMENT EXECUTE FUNCTION guard_$g('fencing.entered_1', 'bench');"
    done
  done
  for g in plain plpgsql native; do
    if [ "$g" = native ] && ! $native; then continue; fi
    echo "INSERT INTO account_$g (id, balance) SELECT g, 0 FROM generate_series(1, 10000) g;"
  done
  echo "VACUUM ANALYZE;"
} | single > "$work/setup.log" 2>&1
if grep -q ERROR "$work/setup.log"; then grep -B2 ERROR "$work/setup.log" >&2; exit 1; fi

values=$(seq 1 100 | awk '{printf "%s(%d, %d)", (NR > 1 ? ", " : ""), $1, $1}')
script() {   # kind table-suffix transactions
  echo "SET fencing.entered_1 = '7';"
  echo "PREPARE u(int) AS UPDATE account_$2 SET balance = balance + 1 WHERE id = \$1;"
  echo "PREPARE b AS INSERT INTO entry_$2 (account, amount) VALUES $values;"
  echo "PREPARE s(int) AS INSERT INTO entry_$2 (account, amount) VALUES (\$1, \$1);"
  for i in $(seq 1 "$3"); do
    echo "BEGIN;"
    case "$1" in
      single) echo "EXECUTE u($(( (i * 7919) % 10000 + 1 )));" ;;
      batch) echo "EXECUTE b;" ;;
      statements) for j in $(seq 1 100); do echo "EXECUTE s($j);"; done ;;
    esac
    echo "COMMIT;"
  done
}
count() {   # kind table-suffix transactions -> instructions
  local out="$work/cg.out"
  script "$@" > "$work/in.sql"
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$work/in.sql"; fi
  as_pg valgrind --tool=callgrind --callgrind-out-file="$out" "$bindir/postgres" --single -D "$work/data" \
    -c fsync=off -c synchronous_commit=off postgres < "$work/in.sql" >/dev/null 2>&1
  awk '/^summary:/ {print $2}' "$out"
}
echo "Server instructions per transaction (callgrind, single-user backend, prepared statements; $(pg_config --version))"
echo "| transaction | unfenced | native guard | ratio | PL/pgSQL guard | ratio |"
echo "|---|---:|---:|---:|---:|---:|"
for kind in single batch statements; do
  lo=200; hi=1200
  if [ "$kind" = statements ]; then lo=20; hi=120; fi
  declare -A per=()
  for g in plain native plpgsql; do
    if [ "$g" = native ] && ! $native; then per[$g]=0; continue; fi
    a=$(count "$kind" "$g" "$lo"); b=$(count "$kind" "$g" "$hi")
    per[$g]=$(( (b - a) / (hi - lo) ))
  done
  label=$(case "$kind" in single) echo "single-row UPDATE";; batch) echo "100-row INSERT (one statement)";;
          statements) echo "100 single-row INSERTs";; esac)
  awk -v l="$label" -v p="${per[plain]}" -v n="${per[native]}" -v q="${per[plpgsql]}" 'BEGIN {
    printf "| %s | %d | %s | %s | %d | %.3f |\n", l, p, (n > 0 ? n : "n/a"), (n > 0 ? sprintf("%.3f", p / n) : "n/a"), q, p / q }'
done
echo "ratio = unfenced / fenced instructions: the throughput ratio of a server that is CPU-bound on these transactions."
