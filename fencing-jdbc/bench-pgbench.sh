#!/usr/bin/env bash
# Raw-SQL writers under pgbench, BEFORE and AFTER side by side in ONE run (a benchmark, not a test).
#
# One throwaway PostgreSQL cluster from the machine's binaries (pg_config --bindir; fsync, synchronous_commit and
# full_page_writes on; 127.0.0.1 on a free port; autovacuum off, every table VACUUMed at the start of each round), three
# databases made from one template (a 10 000-row table `account`, pgbench's TPC-B tables at scale 8, the column
# fencing_term on each, so all three have the same shape):
#   plain   unprotected tables: the unfenced baseline;
#   before  the BEFORE fencing migrations applied (V*__ by version, then R__* by name, as Flyway does), resource
#           'bench' registered, `account` and the four pgbench tables protected with fencing.protect_table(), the mark
#           advanced to term 7 once with fencing.enter('bench', 7);
#   after   the same with the AFTER migrations.
# Each side's native guard (fenceline_guard.so) is built from that side's own migrations/native with its own build.sh,
# in a copy under the work folder (nothing is written into a source tree), and loaded from a copy in the work folder by
# absolute path (that database's dynamic_library_path also names that copy). Before each fenced cell the guard is
# switched with fencing.use_native_guard('<path>') or fencing.use_plpgsql_guard(). Before measuring, each fenced
# database is checked: a write at the mark is accepted, a write at an older term is rejected.
#
# Cells (pgbench, simple protocol, -c N -j min(N,2) -T SECONDS, -n), interleaved: every round runs every cell once;
# the cells compared with each other (one client count; TPC-B; PgBouncer) run back to back, in an order rotated each
# round and reversed every other round; a ratio is fenced tps / unfenced tps of the SAME round, reported as the median
# over the rounds and [min-max]:
#   raw      `BEGIN; UPDATE account ... WHERE id = random(1, 10000); COMMIT` unfenced (twice: the second run is an A/A
#            control, its "ratio" is what noise alone does), and `BEGIN; SET LOCAL fencing.term = '7'; UPDATE ...;
#            COMMIT` on the protected table, BEFORE and AFTER, native and PL/pgSQL guard, at each client count;
#   tpcb     pgbench's TPC-B transaction (custom copy of tpcb-like) at 8 clients; fenced = the same with
#            `SET LOCAL fencing.term = '7'` first, all four tables protected under one resource;
#   bouncer  the raw cells at 16 clients through PgBouncer (transaction pooling, started here, own ini/userlist);
#   WAL      for the raw cells at 16 clients (--wal-clients, one of --clients): CHECKPOINT, then pg_current_wal_lsn() and next_multixact_id (from
#            pg_control_checkpoint()) before, the same after a CHECKPOINT that follows the cell; WAL bytes per
#            transaction, also without full-page images (pg_waldump --stats over the cell's WAL), and MultiXacts per
#            transaction. (The CHECKPOINT is there for every 16-client raw cell alike, unfenced included.)
#
# Usage: fencing-jdbc/bench-pgbench.sh [--before REV|DIR] [--after REV|DIR] [--seconds 5] [--rounds 4]
#          [--clients "1 4 16"] [--tpcb-clients 8] [--bouncer-clients 16] [--wal-clients 16] [--scale 8]
#          [--guards native,plpgsql] [--parts raw,tpcb,bouncer] [--before-native DIR] [--after-native DIR] [--keep]
#   REV  a git revision of this repository (its migrations and migrations/native are read with git archive);
#   DIR  a repository root, or a migrations folder (.../db/fencing: its native guard is then looked for in
#        .../migrations/native, or given with --before-native/--after-native: a folder with build.sh and
#        fenceline_guard.c).
#   Defaults: --before 622e04c (the last commit of the session-entering design), --after = this working tree.
#   ~11 min with the defaults (28 cells x 4 rounds x 5 s, plus ~1 min of set-up). Markdown on stdout, progress on stderr.
#   Needs pgbench, psql, pg_waldump (the machine's PostgreSQL), gcc for the native guards, pgbouncer for `bouncer`
#   (scripts/ensure-pgbouncer.sh installs it).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

seconds=5; rounds=4; clients="1 4 16"; tpcb_clients=8; bouncer_clients=16; wal_clients=16; scale=8; rows=10000
before_spec=622e04c; after_spec=$repo; before_native=; after_native=; guards="native,plpgsql"; parts="raw,tpcb,bouncer"
keep=false; term=7
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --before) before_spec=$2; shift 2 ;;
    --after) after_spec=$2; shift 2 ;;
    --before-native) before_native=$2; shift 2 ;;
    --after-native) after_native=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --tpcb-clients) tpcb_clients=$2; shift 2 ;;
    --bouncer-clients) bouncer_clients=$2; shift 2 ;;
    --wal-clients) wal_clients=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --guards) guards=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    --keep) keep=true; shift ;;
    -h|--help) usage ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
done
has() { case ",$1," in *",$2,"*) return 0 ;; *) return 1 ;; esac; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
die() { echo "bench-pgbench: $*" >&2; exit 1; }

command -v pg_config >/dev/null || die "pg_config is needed (the machine's PostgreSQL)"
bindir=$(pg_config --bindir)
for b in initdb pg_ctl postgres pgbench psql pg_waldump; do [ -x "$bindir/$b" ] || die "$bindir/$b is missing"; done
major=$(pg_config --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
pgbouncer_bin=
if has "$parts" bouncer; then
  pgbouncer_bin=$(command -v pgbouncer || { [ -x /usr/sbin/pgbouncer ] && echo /usr/sbin/pgbouncer; } || true)
  [ -n "$pgbouncer_bin" ] || die "pgbouncer is needed for --parts bouncer (scripts/ensure-pgbouncer.sh), or leave bouncer out of --parts"
fi

work=$(mktemp -d /tmp/fenceline-pgbench.XXXXXX)
chmod 755 "$work"
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
bench_pid=
cleanup() {
  set +e
  if [ -n "$bench_pid" ] && kill -0 "$bench_pid" 2>/dev/null; then kill -TERM "$bench_pid"; wait "$bench_pid" 2>/dev/null; fi
  local pid i
  if [ -s "$work/bouncer/pgbouncer.pid" ]; then
    pid=$(cat "$work/bouncer/pgbouncer.pid")
    kill -TERM "$pid" 2>/dev/null
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  fi
  if [ -s "$work/data/postmaster.pid" ]; then
    pid=$(head -1 "$work/data/postmaster.pid")
    kill -QUIT "$pid" 2>/dev/null          # immediate shutdown: the postmaster ends its own children
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  fi
  if $keep; then echo "work folder kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
}

# ---------------------------------------------------------------- the two sides' migrations and native guards
# shellcheck source=bench-sides.sh
. "$repo/fencing-jdbc/bench-sides.sh"
declare -A side_ok=()
log "work folder $work"
side_prepare before "$before_spec" "$before_native" || die "--before $before_spec"
side_prepare after "$after_spec" "$after_native" || die "--after $after_spec"
if [ "$(id -u)" -eq 0 ]; then chown postgres "$work"; fi   # initdb, the server's socket

# ---------------------------------------------------------------- the cluster
port=$(free_port)
as_pg "$bindir/initdb" -D "$work/data" -U postgres -A trust -E UTF8 --no-sync >/dev/null
cat >> "$work/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$work'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 120
shared_buffers = 256MB
autovacuum = off
checkpoint_timeout = 1h
max_wal_size = 8GB
EOF
as_pg "$bindir/pg_ctl" -D "$work/data" -w -l "$work/server.log" start >/dev/null
q() { PGOPTIONS='-c client_min_messages=warning' "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -X -q -At -v ON_ERROR_STOP=1 "$@"; }

log "PostgreSQL $(q -d postgres -c 'SHOW server_version') on port $port; preparing the template database"
q -d postgres -c "CREATE DATABASE plain"
q -d plain <<SQL
CREATE TABLE account (id int PRIMARY KEY, balance bigint NOT NULL, fencing_term bigint);
INSERT INTO account (id, balance) SELECT g, 0 FROM generate_series(1, $rows) g;
SQL
if has "$parts" tpcb; then
  "$bindir/pgbench" -h 127.0.0.1 -p "$port" -U postgres -i -q -s "$scale" plain > "$work/pgbench-init.log" 2>&1 \
    || { cat "$work/pgbench-init.log" >&2; die "pgbench -i failed"; }
  q -d plain -c "ALTER TABLE pgbench_accounts ADD COLUMN fencing_term bigint; ALTER TABLE pgbench_tellers ADD COLUMN fencing_term bigint;
                 ALTER TABLE pgbench_branches ADD COLUMN fencing_term bigint; ALTER TABLE pgbench_history ADD COLUMN fencing_term bigint"
fi
q -d plain -c "VACUUM ANALYZE"
q -d postgres -c "CHECKPOINT"
tables="account"
has "$parts" tpcb && tables="account pgbench_accounts pgbench_tellers pgbench_branches pgbench_history"

migrate() {   # side: creates database <side> from the template and applies that side's migrations
  local name=$1 f
  q -d postgres -c "CREATE DATABASE $name TEMPLATE plain STRATEGY file_copy"
  if [ -n "${side_lib[$name]}" ]; then
    q -d postgres -c "ALTER DATABASE $name SET dynamic_library_path = '$work/lib-$name:\$libdir'"
  fi
  q -d "$name" -c "CREATE SCHEMA fencing"
  for f in $(side_migration_files "$name"); do
    q -d "$name" -f "$f" >> "$work/$name/migrate.log" 2>&1 || { log "$name: $(basename "$f") failed:"; tail -5 "$work/$name/migrate.log" >&2; return 1; }
  done
  {
    echo "SELECT fencing.register_resource('bench');"
    for t in $tables; do echo "SELECT fencing.protect_table('$t', 'bench');"; done
    echo "SELECT fencing.enter('bench', $term);"
  } | q -d "$name" > "$work/$name/protect.log" 2>&1 || { log "$name: protecting failed:"; tail -5 "$work/$name/protect.log" >&2; return 1; }
  q -d "$name" -c "VACUUM ANALYZE" >/dev/null
}
set_guard() {   # side native|plpgsql
  local got
  if [ "$2" = native ]; then
    got=$(q -d "$1" -c "SELECT fencing.use_native_guard('${side_lib[$1]}')") || return 1
  else
    got=$(q -d "$1" -c "SELECT fencing.use_plpgsql_guard()") || return 1
  fi
  [ "$(q -d "$1" -c "SELECT fencing.guard_implementation()")" = "$2" ] || { log "$1: guard is not $2 after switching"; return 1; }
}
check_fence() {   # side guard: a write at the mark goes through, one at an older term does not
  local out
  out=$(q -d "$1" -c "BEGIN; SET LOCAL fencing.term = '$term'; UPDATE account SET balance = balance + 0 WHERE id = 1; COMMIT;" 2>&1) \
    || { log "$1/$2: a write at the mark was refused: $out"; return 1; }
  if out=$(q -d "$1" -v VERBOSITY=verbose -c "BEGIN; SET LOCAL fencing.term = '$((term - 1))'; UPDATE account SET balance = balance + 0 WHERE id = 1; COMMIT;" 2>&1); then
    log "$1/$2: a write at an older term went through: the fence is not in force"; return 1
  fi
  case "$out" in *FL001*) ;; *) log "$1/$2: a write at an older term failed, but not with FL001: $out"; return 1 ;; esac
}
declare -A guard_ok=()
for s in before after; do
  side_ok[$s]=false
  log "migrating '$s' (${side_desc[$s]})"
  if migrate "$s"; then
    side_ok[$s]=true
    for g in native plpgsql; do
      guard_ok[$s/$g]=false
      has "$guards" "$g" || continue
      if [ "$g" = native ] && [ -z "${side_lib[$s]}" ]; then continue; fi
      if set_guard "$s" "$g" && check_fence "$s" "$g"; then guard_ok[$s/$g]=true; fi
    done
  else
    log "WARNING: the $s migrations do not apply: no $s cells in this run"
  fi
done

# ---------------------------------------------------------------- pgbench scripts
cat > "$work/raw-plain.sql" <<EOF
\\set id random(1, $rows)
BEGIN;
UPDATE account SET balance = balance + 1 WHERE id = :id;
COMMIT;
EOF
cat > "$work/raw-fenced.sql" <<EOF
\\set id random(1, $rows)
BEGIN;
SET LOCAL fencing.term = '$term';
UPDATE account SET balance = balance + 1 WHERE id = :id;
COMMIT;
EOF
tpcb() {   # extra first statement
  cat <<EOF
\\set aid random(1, $((100000 * scale)))
\\set bid random(1, $scale)
\\set tid random(1, $((10 * scale)))
\\set delta random(-5000, 5000)
BEGIN;
$1
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
EOF
}
tpcb "" > "$work/tpcb-plain.sql"
tpcb "SET LOCAL fencing.term = '$term';" > "$work/tpcb-fenced.sql"

# ---------------------------------------------------------------- PgBouncer
bport=
if has "$parts" bouncer; then
  bport=$(free_port)
  mkdir -p "$work/bouncer"
  echo '"postgres" ""' > "$work/bouncer/userlist.txt"
  cat > "$work/bouncer/pgbouncer.ini" <<EOF
[databases]
plain = host=127.0.0.1 port=$port dbname=plain
before = host=127.0.0.1 port=$port dbname=before
after = host=127.0.0.1 port=$port dbname=after
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir =
auth_type = trust
auth_file = $work/bouncer/userlist.txt
pool_mode = transaction
max_client_conn = 200
default_pool_size = $((bouncer_clients + 4))
logfile = $work/bouncer/pgbouncer.log
pidfile = $work/bouncer/pgbouncer.pid
admin_users = postgres
EOF
  if [ "$(id -u)" -eq 0 ]; then chown -R postgres "$work/bouncer"; fi
  as_pg "$pgbouncer_bin" -d -q "$work/bouncer/pgbouncer.ini"
  for i in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$bport") 2>/dev/null && break; sleep 0.1; done
  log "PgBouncer $("$pgbouncer_bin" --version | head -1 | awk '{print $2}') on port $bport (pid $(cat "$work/bouncer/pgbouncer.pid"))"
fi

# ---------------------------------------------------------------- cells: id|db|script|clients|via|side|guard|wal
cells=()
add_fenced() {   # prefix script clients via wal
  local s g
  for g in native plpgsql; do
    for s in before after; do
      if [ "${guard_ok[$s/$g]:-false}" = true ]; then cells+=("$1_${s}_$g|$s|$2|$3|$4|$s|$g|$5"); fi
    done
  done
}
if has "$parts" raw; then
  for n in $clients; do
    w=0; [ "$n" = "$wal_clients" ] && w=1
    cells+=("raw$n|plain|raw-plain.sql|$n|direct|-|-|$w" "raw${n}_aa|plain|raw-plain.sql|$n|direct|-|-|$w")
    add_fenced "raw$n" raw-fenced.sql "$n" direct "$w"
  done
fi
if has "$parts" tpcb; then
  cells+=("tpcb|plain|tpcb-plain.sql|$tpcb_clients|direct|-|-|0")
  add_fenced tpcb tpcb-fenced.sql "$tpcb_clients" direct 0
fi
if has "$parts" bouncer; then
  cells+=("bnc|plain|raw-plain.sql|$bouncer_clients|bouncer|-|-|0")
  add_fenced bnc raw-fenced.sql "$bouncer_clients" bouncer 0
fi
ncells=${#cells[@]}
group_of() { local id=${1%%|*}; echo "${id%%_*}"; }
groups=()
for spec in "${cells[@]}"; do
  g=$(group_of "$spec"); case " ${groups[*]} " in *" $g "*) ;; *) groups+=("$g") ;; esac
done
ngroups=${#groups[@]}
log "$ncells cells in $ngroups groups x $rounds rounds x ${seconds}s: about $(( (ncells * rounds * (seconds * 10 + 6) / 10 + 59) / 60 )) min from here"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

results=$work/results.tsv
: > "$results"
lsn() { q -d postgres -c "SELECT pg_current_wal_lsn()"; }
multixact() { q -d postgres -c "SELECT next_multixact_id::text::bigint FROM pg_control_checkpoint()"; }
run_cell() {   # round cell-spec
  local r=$1 id db script n via side guard wal
  IFS='|' read -r id db script n via side guard wal <<< "$2"
  local p=$port j=$(( n < 2 ? n : 2 )) out="$work/out/$id.r$r.log" l0= l1= m0= m1= walb=- fpi=- mx=- mxrec=-
  [ "$via" = bouncer ] && p=$bport
  [ "$side" != - ] && { set_guard "$side" "$guard" || die "$side: cannot switch to the $guard guard"; }
  if [ "$wal" = 1 ]; then q -d postgres -c CHECKPOINT; m0=$(multixact); l0=$(lsn); fi
  "$bindir/pgbench" -h 127.0.0.1 -p "$p" -U postgres -n -M simple -c "$n" -j "$j" -T "$seconds" -f "$work/$script" "$db" > "$out" 2>&1 &
  bench_pid=$!
  if ! wait "$bench_pid"; then bench_pid=; tail -15 "$out" >&2; die "cell $id (round $r) failed; log above"; fi
  bench_pid=
  local tps tx failed
  tps=$(sed -nE 's/^tps = ([0-9.]+).*/\1/p' "$out" | head -1)
  tx=$(sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' "$out")
  failed=$(sed -nE 's/^number of failed transactions: ([0-9]+).*/\1/p' "$out")
  [ -n "$tps" ] && [ -n "$tx" ] || { cat "$out" >&2; die "cell $id: no tps in pgbench's output"; }
  [ "${failed:-0}" = 0 ] || { cat "$out" >&2; die "cell $id: $failed failed transactions"; }
  if [ "$wal" = 1 ]; then
    l1=$(lsn)
    walb=$(q -d postgres -c "SELECT pg_wal_lsn_diff('$l1', '$l0')::bigint")
    local stats
    stats=$("$bindir/pg_waldump" -p "$work/data/pg_wal" -s "$l0" -e "$l1" --stats=record 2>/dev/null || true)
    fpi=$(echo "$stats" | awk '$1 == "Total" {print $5}')
    mxrec=$(echo "$stats" | awk '$1 == "MultiXact/CREATE_ID" {print $2}')
    q -d postgres -c CHECKPOINT
    m1=$(multixact)
    mx=$((m1 - m0))
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$id" "$tps" "$tx" "$walb" "${fpi:--}" "$mx" "${mxrec:-0}" >> "$results"
  log "round $r  $id: $tps tps"
}
mkdir -p "$work/out"
for r in $(seq 1 "$rounds"); do
  for db in plain before after; do
    if [ "$db" = plain ] || [ "${side_ok[$db]}" = true ]; then q -d "$db" -c "VACUUM $(echo $tables | tr ' ' ',')"; fi
  done
  q -d postgres -c CHECKPOINT
  # The cells that are compared with each other run back to back (a group: one client count, TPC-B, PgBouncer), so a
  # ratio's two sides are measured within seconds; the order is rotated every round and reversed every other round.
  for gi in $(seq 0 $((ngroups - 1))); do
    g=${groups[$(( (gi + r - 1) % ngroups ))]}
    members=()
    for spec in "${cells[@]}"; do [ "$(group_of "$spec")" = "$g" ] && members+=("$spec"); done
    m=${#members[@]}; order=()
    for k in $(seq 0 $((m - 1))); do order+=("${members[$(( (k + r - 1) % m ))]}"); done
    if [ $((r % 2)) -eq 0 ]; then for k in $(seq $((m - 1)) -1 0); do run_cell "$r" "${order[$k]}"; done
    else for k in $(seq 0 $((m - 1))); do run_cell "$r" "${order[$k]}"; done; fi
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- report
col() { awk -F'\t' -v c="$1" -v f="$2" '$2 == c {print $1 "\t" $f}' "$results" | sort -n | cut -f2; }   # cell field -> per round
median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ratios() { paste <(col "$1" 3) <(col "$2" 3) | awk '$1 != "" && $2 > 0 {printf "%.4f\n", $1 / $2}'; }     # fenced unfenced
ratio_cell() {   # fenced unfenced -> "0.93 [0.90–0.95]"
  local v; v=$(ratios "$1" "$2")
  [ -n "$v" ] || { echo "n/a"; return; }
  echo "$v" | sort -g | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
    printf "%.2f [%.2f–%.2f]", m, v[1], v[NR]}'
}
tps_cell() { local v; v=$(col "$1" 3); [ -n "$v" ] && echo "$v" | median | awk '{printf "%.0f", $1}' || echo "n/a"; }
has_cell() { awk -F'\t' -v c="$1" '$2 == c {f = 1} END {exit !f}' "$results"; }

echo "## Raw SQL writers under pgbench: BEFORE vs AFTER ($(date '+%Y-%m-%d %H:%M'))"
echo
echo "- BEFORE: ${side_desc[before]}$([ "${side_ok[before]}" = true ] || echo ' — **did not apply**')"
echo "- AFTER: ${side_desc[after]}$([ "${side_ok[after]}" = true ] || echo ' — **did not apply**')"
echo "- $("$bindir/postgres" --version), fsync/synchronous_commit/full_page_writes on, autovacuum off (VACUUM per round);" \
     "$(nproc) vCPUs shared by server and pgbench; load average $load_start at the start, $load_end at the end"
echo "- $rounds rounds x ${seconds} s per cell, pgbench simple protocol, -j min(clients,2); in each round the cells compared with each"
echo "  other run back to back, their order rotated every round and reversed every other round."
echo "  Ratio = fenced tps / unfenced tps of the same round: median [min–max] over the rounds. A/A = the unfenced cell run twice."
echo "- Guards measured: $(for k in before/native before/plpgsql after/native after/plpgsql; do printf '%s=%s ' "$k" "${guard_ok[$k]:-false}"; done)"
echo
fenced_cols() {   # cell-prefix unfenced-cell: " tps | ratio |" for BEFORE/AFTER x native/PL/pgSQL
  local s g
  for g in native plpgsql; do
    for s in before after; do
      if has_cell "$1_${s}_$g"; then printf ' %s | %s |' "$(tps_cell "$1_${s}_$g")" "$(ratio_cell "$1_${s}_$g" "$2")"
      else printf ' n/a | n/a |'; fi
    done
  done
  echo
}
header() {
  echo "| $1 | unfenced tps | A/A ratio | BEFORE native tps | ratio | AFTER native tps | ratio | BEFORE PL/pgSQL tps | ratio | AFTER PL/pgSQL tps | ratio |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
}
if has "$parts" raw; then
  echo "### Single-row UPDATE: \`BEGIN; SET LOCAL fencing.term; UPDATE one of $rows rows; COMMIT\` vs the same without the SET LOCAL on an unprotected table"
  echo
  header clients
  for n in $clients; do
    printf '| %s | %s | %s |' "$n" "$(tps_cell "raw$n")" "$(ratio_cell "raw${n}_aa" "raw$n")"
    fenced_cols "raw$n" "raw$n"
  done
  echo
fi
if has "$parts" tpcb; then
  echo "### TPC-B (pgbench tpcb-like, scale $scale, $tpcb_clients clients; fenced = \`SET LOCAL fencing.term\` first, the four tables protected)"
  echo
  header clients
  printf '| %s | %s | – |' "$tpcb_clients" "$(tps_cell tpcb)"
  fenced_cols tpcb tpcb
  echo
fi
if has "$parts" bouncer; then
  echo "### Through PgBouncer (transaction pooling), single-row UPDATE, $bouncer_clients clients"
  echo
  header clients
  printf '| %s | %s | – |' "$bouncer_clients" "$(tps_cell bnc)"
  fenced_cols bnc bnc
  echo
fi
if has "$parts" raw && has_cell "raw$wal_clients"; then
  echo "### WAL and MultiXacts per transaction, single-row UPDATE at $wal_clients clients (median over the rounds)"
  echo
  echo "| cell | WAL bytes/tx | ratio | WAL bytes/tx without full-page images | ratio | MultiXacts/tx (pg_control) | MultiXact CREATE_ID records |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  per_tx() { paste <(col "$1" "$2") <(col "$1" 4) | awk '$1 != "-" && $2 > 0 {printf "%.4f\n", $1 / $2}'; }
  wal_nofpi() { paste <(col "$1" 5) <(col "$1" 6) <(col "$1" 4) | awk '$1 != "-" && $2 != "-" && $3 > 0 {printf "%.3f\n", ($1 - $2) / $3}'; }
  u_all=$(per_tx "raw$wal_clients" 5 | median); u_nofpi=$(wal_nofpi "raw$wal_clients" | median)
  for c in "raw$wal_clients" "raw${wal_clients}_aa" raw${wal_clients}_{before,after}_{native,plpgsql}; do
    has_cell "$c" || continue
    a=$(per_tx "$c" 5 | median); nf=$(wal_nofpi "$c" | median); mx=$(per_tx "$c" 7 | median)
    mr=$(col "$c" 8 | awk '{s += $1} END {print s + 0}')
    awk -v c="$c" -v a="$a" -v nf="$nf" -v ua="$u_all" -v un="$u_nofpi" -v mx="$mx" -v mr="$mr" 'BEGIN {
      printf "| %s | %.0f | %.2f | %.0f | %.2f | %.4f | %d |\n", c, a, a / ua, nf, nf / un, mx, mr }'
  done
  echo
  echo "(Each $wal_clients-client cell runs right after a CHECKPOINT, so its first write to each page logs a full-page image;"
  echo "the column without them compares the records themselves. MultiXact CREATE_ID records: summed over all rounds.)"
  echo
fi
echo "### Raw tps per round"
echo
printf '| cell |'; for r in $(seq 1 "$rounds"); do printf ' round %s |' "$r"; done; echo
printf '|---|'; for r in $(seq 1 "$rounds"); do printf -- '---:|'; done; echo
for spec in "${cells[@]}"; do
  c=${spec%%|*}
  printf '| %s |' "$c"; col "$c" 3 | awk '{printf " %.0f |", $1}'; echo
done
