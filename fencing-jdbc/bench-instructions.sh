#!/usr/bin/env bash
# The fence's server-side cost in CPU instructions: deterministic, unlike tps on a shared machine (not a test).
# For each version of the fencing migrations named on the command line (default: this working tree), a throwaway
# cluster gets those migrations (V*__ by version, then R__* by name, as Flyway applies them), the resource 'bench',
# two protected tables (fencing.protect_table) and the mark advanced to term 7 (fencing.enter('bench', 7, leader)),
# is checked (a write at the mark goes through, one at an older term is rejected with FL001), and then a single-user
# backend runs under valgrind's callgrind, counting the instructions of N transactions:
#   unfenced                   the work on unprotected tables of the same shape;
#   + SET LOCAL, no guard      the same with `SET LOCAL fencing.term` first (the statement's own cost: a ceiling);
#   raw writer                 `SET LOCAL fencing.term = '7'` then the work on the protected tables (the guard enters
#                              the transaction at its first firing), native guard and PL/pgSQL guard
#                              (fencing.use_native_guard(path) / use_plpgsql_guard());
#   library writer             FencedWriter's transaction: its first statement `SELECT fencing.begin_write(...)`, the
#                              work, then `SELECT fencing.check_writers_transaction(); COMMIT` (on a version without
#                              begin_write, the SQL the writer sent then: SET TRANSACTION and a SELECT of seven
#                              set_config calls, the start and the mark; the check with the start); native and PL/pgSQL;
# for a single-row UPDATE, a 100-row INSERT and 100 single-row INSERTs, all as prepared statements (a direct
# connection in its steady state); and, single-row, with nothing prepared (what a pgjdbc client sends through PgBouncer
# in transaction mode: every statement parsed and planned each time). Per transaction = (count at 600 - count at 100)
# / 500 (100 single-row INSERTs: 60 and 10), each run from the same copy of the cluster, so start-up cancels out.
# The same SQL runs on every version (a version before the new fence enters per transaction through its guard too).
#
# Usage: [BENCH_KINDS='single batch statements'] fencing-jdbc/bench-instructions.sh [REV|DIR ...]
#   REV  a git revision of this repository (read with git archive); DIR a repository root or a migrations folder
#        (.../db/fencing, its native guard in .../migrations/native). One table row per version, e.g.
#        fencing-jdbc/bench-instructions.sh 622e04c .      (before and after side by side; ~6 to 8 min per
#        version on 2 vCPUs, depending on what else runs)
#   Each version's native guard is built from its own migrations/native (its build.sh, in a copy in the work folder)
#   and loaded by absolute path. Needs valgrind and the machine's PostgreSQL (pg_config), gcc for the native guard.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
command -v valgrind >/dev/null || { echo "valgrind is needed (Debian: apt-get install -y valgrind)" >&2; exit 1; }
command -v pg_config >/dev/null || { echo "pg_config is needed (the machine's PostgreSQL)" >&2; exit 1; }
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=("$repo")
bindir=$(pg_config --bindir)
major=$(pg_config --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
work=$(mktemp -d /tmp/fenceline-instr.XXXXXX)
chmod 755 "$work"
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  local f pid
  for f in "$work"/*/data/postmaster.pid; do
    [ -s "$f" ] || continue
    pid=$(head -1 "$f")
    kill -QUIT "$pid" 2>/dev/null || true   # immediate shutdown, by the pid of the server this script started
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM   # so that an interrupted run still cleans up (through the EXIT trap)
# shellcheck source=bench-sides.sh
. fencing-jdbc/bench-sides.sh

term=7; leader=bench-leader
values=$(seq 1 100 | awk '{printf "%s(%d, %d)", (NR > 1 ? ", " : ""), $1, $1}')
# The writer's first statement before fencing.begin_write existed: SET TRANSACTION, then one SELECT with 7 parameters.
first_select='SELECT set_config('"'"'lock_timeout'"'"', $1, true), set_config('"'"'idle_in_transaction_session_timeout'"'"', $2, true),'
first_select+=' set_config('"'"'statement_timeout'"'"', $3, true), set_config('"'"'fencing.term'"'"', $4, true),'
first_select+=' set_config('"'"'fencing.resource'"'"', $5, true), set_config('"'"'fencing.leader_id'"'"', $6, true),'
first_select+=' set_config('"'"'fencing.break_glass'"'"', '"'"''"'"', true), pg_catalog.transaction_timestamp(),'
first_select+=' (SELECT m.highest_accepted FROM fencing.high_water_mark m WHERE m.resource = $7)'
writer_args="'2000ms', '60000ms', '0', '$term', 'bench', '$leader', 'bench'"
set_tx='SET TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE;'
literal_first() {   # the first statement with its parameters written in (nothing prepared)
  local s=$first_select i=1 a
  IFS=',' read -ra a <<< "$writer_args"
  for i in 7 6 5 4 3 2 1; do s=${s//\$$i/${a[$((i - 1))]# }}; done
  echo "$set_tx $s;"
}

script() {   # kind variant transactions lib
  local table=fenced guard=
  case "$2" in
    plain|setlocal|settx|plain_unprep) table=plain ;;
    *native*) guard="SELECT fencing.use_native_guard('$4');" ;;
    *plpgsql*) guard="SELECT fencing.use_plpgsql_guard();" ;;
  esac
  [ -n "$guard" ] && echo "$guard"
  echo "PREPARE u(int) AS UPDATE account_$table SET balance = balance + 1 WHERE id = \$1;"
  echo "PREPARE b AS INSERT INTO entry_$table (account, amount) VALUES $values;"
  echo "PREPARE s(int) AS INSERT INTO entry_$table (account, amount) VALUES (\$1, \$1);"
  if [[ "$2" == writer_* ]] && [ "$5" = begin_write ]; then
    echo "PREPARE w(text, bigint, text, int, int, int) AS SELECT fencing.begin_write(\$1, \$2, \$3, \$4, \$5, \$6);"
    echo "PREPARE c AS SELECT fencing.check_writers_transaction();"
  elif [[ "$2" == writer_* ]]; then
    echo "PREPARE w(text, text, text, text, text, text, text) AS $first_select;"
    echo "PREPARE c(timestamptz) AS SELECT fencing.check_writers_transaction(\$1);"
  fi
  local i j id lit; lit=$(literal_first)
  for i in $(seq 1 "$3"); do
    id=$(( (i * 7919) % 10000 + 1 ))
    echo "BEGIN;"
    case "$2:$5" in
      setlocal:*|raw_*) echo "SET LOCAL fencing.term = '$term';" ;;
      settx:*) echo "$set_tx" ;;
      writer_unprep_*:begin_write) echo "SELECT fencing.begin_write('bench', $term, '$leader', 0, 2000, 60000);" ;;
      writer_*:begin_write) echo "EXECUTE w('bench', $term, '$leader', 0, 2000, 60000);" ;;
      writer_unprep_*) echo "$lit" ;;
      writer_*) echo "$set_tx EXECUTE w($writer_args);" ;;
    esac
    case "$1" in
      single) if [[ "$2" == *unprep* ]]; then echo "UPDATE account_$table SET balance = balance + 1 WHERE id = $id;"
              else echo "EXECUTE u($id);"; fi ;;
      batch) echo "EXECUTE b;" ;;
      statements) for j in $(seq 1 100); do echo "EXECUTE s($j);"; done ;;
    esac
    case "$2:$5" in
      writer_unprep_*:begin_write) echo "SELECT fencing.check_writers_transaction(); COMMIT;" ;;
      writer_nocheck_*) echo "COMMIT;" ;;
      writer_*:begin_write) echo "EXECUTE c; COMMIT;" ;;
      writer_unprep_*) echo "SELECT fencing.check_writers_transaction(pg_catalog.transaction_timestamp()); COMMIT;" ;;
      writer_*) echo "EXECUTE c(pg_catalog.transaction_timestamp()); COMMIT;" ;;
      *) echo "COMMIT;" ;;
    esac
  done
}

measure() {   # name spec: writes "kind variant instructions" lines to $work/name/counts
  local name=$1 data="$work/$1/data" lib
  side_prepare "$name" "$2"
  lib=${side_lib[$name]}
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$work/$name"; fi
  as_pg "$bindir/initdb" -D "$data" -U postgres -A trust --no-sync >/dev/null
  # The native guard is loaded by absolute path; its folder is also first on the library path.
  [ -n "$lib" ] && echo "dynamic_library_path = '$(dirname "$lib"):\$libdir'" >> "$data/postgresql.conf"
  # Set-up through a normal server on a Unix socket only (the migrations have multi-line statements).
  as_pg "$bindir/pg_ctl" -D "$data" -w -l "$work/$name/server.log" \
    -o "-c listen_addresses='' -c unix_socket_directories='$work/$name' -c fsync=off" start >/dev/null
  psql_setup() { PGOPTIONS='-c client_min_messages=warning' "$bindir/psql" -h "$work/$name" -U postgres -d postgres -q -X -At -v ON_ERROR_STOP=1 "$@"; }
  psql_setup -c "CREATE SCHEMA fencing"
  local f
  for f in $(side_migration_files "$name"); do psql_setup -f "$f" >/dev/null; done
  psql_setup >/dev/null <<SQL
CREATE TABLE account_plain (id int PRIMARY KEY, balance bigint NOT NULL, fencing_term bigint);
CREATE TABLE entry_plain (id bigserial PRIMARY KEY, account int NOT NULL, amount bigint NOT NULL, fencing_term bigint);
CREATE TABLE account_fenced (LIKE account_plain INCLUDING ALL);
CREATE TABLE entry_fenced (LIKE entry_plain INCLUDING ALL);
INSERT INTO account_plain (id, balance) SELECT g, 0 FROM generate_series(1, 10000) g;
INSERT INTO account_fenced (id, balance) SELECT g, 0 FROM generate_series(1, 10000) g;
SELECT fencing.register_resource('bench');
SELECT fencing.protect_table('account_fenced', 'bench');
SELECT fencing.protect_table('entry_fenced', 'bench');
SELECT fencing.enter('bench', $term, '$leader');
VACUUM ANALYZE;
SQL
  local guards="plpgsql" g out
  if [ -n "$lib" ]; then
    if psql_setup -c "SELECT fencing.use_native_guard('$lib')" >/dev/null 2>"$work/$name/native.err"; then guards="native plpgsql"
    else echo "WARNING: $name: use_native_guard failed: $(cat "$work/$name/native.err")" >&2; lib=; fi
  fi
  # The fence must be in force, or the counts measure nothing.
  for g in $guards; do
    [ "$g" = native ] && psql_setup -c "SELECT fencing.use_native_guard('$lib')" >/dev/null
    [ "$g" = plpgsql ] && psql_setup -c "SELECT fencing.use_plpgsql_guard()" >/dev/null
    [ "$(psql_setup -c "SELECT fencing.guard_implementation()")" = "$g" ] || { echo "$name: the guard is not $g" >&2; exit 1; }
    psql_setup -c "BEGIN; SET LOCAL fencing.term = '$term'; UPDATE account_fenced SET balance = balance WHERE id = 1; COMMIT;" \
      || { echo "$name/$g: a write at the mark was refused" >&2; exit 1; }
    out=$(psql_setup -v VERBOSITY=verbose -c "BEGIN; SET LOCAL fencing.term = '$((term - 1))'; UPDATE account_fenced SET balance = balance WHERE id = 1; COMMIT;" 2>&1) \
      && { echo "$name/$g: a write at an older term went through: the fence is not in force" >&2; exit 1; }
    case "$out" in *FL001*) ;; *) echo "$name/$g: a write at an older term failed, but not with FL001: $out" >&2; exit 1 ;; esac
  done
  # The library writer's statements: fencing.begin_write() where the version has it, else the SQL it sent before.
  local writer=statements
  [ "$(psql_setup -c "SELECT to_regprocedure('fencing.begin_write(text,bigint,text,integer,integer,integer)') IS NOT NULL")" = t ] \
    && writer=begin_write
  side_desc[$name]+=" (library writer: $writer)"
  as_pg "$bindir/pg_ctl" -D "$data" -w stop >/dev/null

  count() {   # kind variant transactions -> instructions
    local cg="$work/$name/cg.out"
    script "$1" "$2" "$3" "$lib" "$writer" > "$work/$name/in.sql"
    # Every run starts from the same copy of the cluster, so one-off work (a new WAL segment, a relation extension)
    # lands at the same place in every run and cancels out in the difference.
    rm -rf "$work/$name/run" && cp -a "$data" "$work/$name/run"
    as_pg valgrind --tool=callgrind --callgrind-out-file="$cg" "$bindir/postgres" --single -D "$work/$name/run" \
      -c fsync=off -c synchronous_commit=off postgres < "$work/$name/in.sql" > "$work/$name/run.log" 2>&1
    # A single-user backend reports errors on its output and goes on: a count with an error in it means nothing.
    if grep -q ERROR "$work/$name/run.log"; then grep -m3 -A2 ERROR "$work/$name/run.log" >&2; exit 1; fi
    awk '/^summary:/ {print $2}' "$cg"
  }
  local kind v lo hi a b variants
  : > "$work/$name/counts"
  for kind in ${BENCH_KINDS:-single batch statements}; do
    lo=100; hi=600
    if [ "$kind" = statements ]; then lo=10; hi=60; fi
    variants="plain setlocal raw_native raw_plpgsql writer_native writer_plpgsql"
    [ "$kind" = single ] && variants+=" plain_unprep raw_unprep_native writer_unprep_native settx writer_nocheck_native"
    for v in $variants; do
      if [[ "$v" == *native* ]] && [ -z "$lib" ]; then continue; fi
      echo "  $name: $kind $v" >&2
      a=$(count "$kind" "$v" "$lo"); b=$(count "$kind" "$v" "$hi")
      echo "$kind $v $(( (b - a) / (hi - lo) ))" >> "$work/$name/counts"
    done
  done
  rm -rf "$work/$name/run" "$work/$name/cg.out"
}

i=0
for spec in "${specs[@]}"; do
  i=$((i + 1))
  echo "measuring $spec ..." >&2
  measure "v$i" "$spec"
done

get() { awk -v k="$2" -v v="$3" '$1 == k && $2 == v {print $3}' "$work/$1/counts"; }
cell() {   # name kind variant baseline-variant -> "| count | ratio"
  local n p; n=$(get "$1" "$2" "$3"); p=$(get "$1" "$2" "$4")
  if [ -z "$n" ]; then printf ' n/a | n/a |'; else awk -v n="$n" -v p="$p" 'BEGIN {printf " %d | %.3f |", n, p / n}'; fi
}
label() { case "$1" in single) echo "single-row UPDATE";; batch) echo "100-row INSERT (one statement)";; statements) echo "100 single-row INSERTs";; esac; }
echo "Server instructions per transaction (callgrind, single-user backend; $(pg_config --version)); ratio = unfenced / fenced"
echo
for j in $(seq 1 "$i"); do echo "- v$j: ${side_desc[v$j]}$([ -n "${side_lib[v$j]}" ] || echo ' (no native guard)')"; done
echo
echo "Prepared statements (a direct connection in its steady state):"
echo
echo "| transaction | version | unfenced | + SET LOCAL, no guard | ratio | raw writer, native | ratio | raw writer, PL/pgSQL | ratio | library writer, native | ratio | library writer, PL/pgSQL | ratio |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for kind in single batch statements; do
  for j in $(seq 1 "$i"); do
    printf '| %s | v%s | %s |' "$(label "$kind")" "$j" "$(get "v$j" "$kind" plain)"
    for v in setlocal raw_native raw_plpgsql writer_native writer_plpgsql; do cell "v$j" "$kind" "$v" plain; done
    echo
  done
done
echo
echo "Nothing prepared (as through PgBouncer in transaction mode), single-row UPDATE:"
echo
echo "| version | unfenced | raw writer, native | ratio | library writer, native | ratio |"
echo "|---|---:|---:|---:|---:|---:|"
for j in $(seq 1 "$i"); do
  printf '| v%s | %s |' "$j" "$(get "v$j" single plain_unprep)"
  cell "v$j" single raw_unprep_native plain_unprep; cell "v$j" single writer_unprep_native plain_unprep
  echo
done
echo
echo "Where the single-row transaction's added instructions go (prepared, native guard; differences of the counts above):"
echo
echo "| version | SET LOCAL fencing.term | guard (raw writer - unfenced - SET LOCAL) | writer's first statement | SET TRANSACTION as a simple query (the writer's only after a session's settings spoiled its first statement) | check before COMMIT |"
echo "|---|---:|---:|---:|---:|---:|"
for j in $(seq 1 "$i"); do
  p=$(get "v$j" single plain); sl=$(get "v$j" single setlocal); rn=$(get "v$j" single raw_native)
  st=$(get "v$j" single settx); wn=$(get "v$j" single writer_nocheck_native); w=$(get "v$j" single writer_native)
  if [ -z "$rn" ] || [ -z "$wn" ]; then echo "| v$j | $((sl - p)) | n/a | n/a | $((st - p)) | n/a |"; continue; fi
  echo "| v$j | $((sl - p)) | $((rn - sl)) | $((wn - rn + sl - p)) | $((st - p)) | $((w - wn)) |"
done
echo
echo "(First statement = library writer without the check - raw writer + SET LOCAL: it takes the SET LOCAL's place, the"
echo "guard's entering is the same. Versions before fencing.begin_write sent SET TRANSACTION in it, as a simple query here.)"
echo
echo "ratio = unfenced / fenced instructions: the throughput ratio of a server that is CPU-bound on these transactions."
