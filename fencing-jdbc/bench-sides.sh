# Sourced by bench-pgbench.sh and bench-instructions.sh (not run on its own): takes one version of the fencing
# migrations and its native guard into the benchmark's work folder, so that two versions can be measured side by side.
#
#   side_prepare NAME SPEC [NATIVE_DIR]
#     SPEC: a git revision of this repository (its migrations and migrations/native are read with git archive;
#           nothing is checked out), a repository root, or a migrations folder (.../db/fencing: its native guard is
#           then looked for in .../migrations/native, or given as NATIVE_DIR, a folder with build.sh and
#           fenceline_guard.c).
#     Copies the V*__*.sql and R__*.sql files into $work/NAME/sql (a snapshot: the tree may be edited meanwhile) and
#     builds that version's native guard with its own build.sh, in a copy under $work/NAME/native (nothing is written
#     into a source tree), into $work/lib-NAME/fenceline_guard.so. Sets side_desc[NAME] (where it came from) and
#     side_lib[NAME] (the library's absolute path, empty when it could not be built: PL/pgSQL only).
#   side_migration_files NAME   the files in Flyway's order: V*__ by version, then R__* by name.
# Needs: $repo (this repository's root), $work (the work folder), $major (the server's major version).
declare -A side_desc=() side_lib=()
side_prepare() {
  local name=$1 spec=$2 nat=${3:-} mig= native_src= dir
  dir="$work/$name"
  mkdir -p "$dir/sql" "$dir/native"
  if [ -d "$spec" ]; then
    spec=$(cd "$spec" && pwd)
    if [ -d "$spec/migrations/src/main/resources/db/fencing" ]; then
      mig=$spec/migrations/src/main/resources/db/fencing; native_src=$spec/migrations/native
    else
      mig=$spec
      case "$spec" in */src/main/resources/db/fencing) native_src=${spec%/src/main/resources/db/fencing}/native ;; esac
    fi
    side_desc[$name]="$mig as found at $(date '+%Y-%m-%d %H:%M')"
  else
    local commit
    commit=$(git -C "$repo" rev-parse --verify -q "$spec^{commit}") \
      || { echo "$spec: neither a folder nor a git revision of $repo" >&2; return 1; }
    mkdir -p "$dir/src"
    git -C "$repo" archive "$commit" migrations/src/main/resources/db/fencing migrations/native | tar -x -C "$dir/src"
    mig=$dir/src/migrations/src/main/resources/db/fencing; native_src=$dir/src/migrations/native
    side_desc[$name]="commit $(git -C "$repo" rev-parse --short "$commit")"
  fi
  [ -n "$nat" ] && native_src=$nat
  local f n=0
  for f in "$mig"/V*__*.sql "$mig"/R__*.sql; do [ -f "$f" ] && { cp "$f" "$dir/sql/"; n=$((n + 1)); }; done
  [ "$n" -gt 0 ] || { echo "$name: no V*__*.sql / R__*.sql in $mig" >&2; return 1; }
  side_lib[$name]=
  if [ -n "$native_src" ] && [ -f "$native_src/fenceline_guard.c" ] && [ -f "$native_src/build.sh" ]; then
    cp "$native_src/build.sh" "$native_src/fenceline_guard.c" "$dir/native/"
    mkdir -p "$dir/native/target"
    # The server headers build.sh would otherwise download: reuse an unpacked copy of an earlier build if there is one.
    local h
    for h in "$native_src/target/headers-$major" "$repo/migrations/native/target/headers-$major"; do
      if [ -d "$h" ] && [ ! -e "$dir/native/target/headers-$major" ]; then ln -s "$h" "$dir/native/target/headers-$major"; fi
    done
    if bash "$dir/native/build.sh" > "$dir/native/build.log" 2>&1; then
      mkdir -p "$work/lib-$name" && cp "$dir/native/target/fenceline_guard.so" "$work/lib-$name/"
      side_lib[$name]=$work/lib-$name/fenceline_guard.so
    else
      echo "WARNING: $name's native guard does not build (PL/pgSQL only for $name):" >&2
      tail -5 "$dir/native/build.log" >&2
    fi
  else
    echo "WARNING: no native guard source for $name (${native_src:-none}): PL/pgSQL only" >&2
  fi
}
side_migration_files() {
  ls "$work/$1/sql"/V*__*.sql | sort -V
  ls "$work/$1/sql"/R__*.sql 2>/dev/null | sort
}
