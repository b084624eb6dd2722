#!/usr/bin/env bash
# Verifies the protocol model exhaustively with spin: the correct model must satisfy P1-P4, and every variant with
# one defence removed must produce a counterexample for the property that defence protects. Prints one line per
# check and, last, "N passed, M failed"; exits non-zero unless every check gave the expected result.
# Build products go to model/target/ and are removed afterwards (kept, with the trails, when a check failed).
# Needs spin (Debian package `spin`; scripts/ensure-spin.sh) and gcc.
set -euo pipefail
cd "$(dirname "$0")"
for tool in spin gcc; do
  command -v "$tool" >/dev/null 2>&1 || { echo "model/check.sh: $tool is not installed (run scripts/ensure-spin.sh)" >&2; exit 2; }
done

TARGET="$PWD/target"
rm -rf "$TARGET"
mkdir -p "$TARGET"
cleanup_on_signal() { trap - INT TERM; kill $(jobs -p) 2>/dev/null; wait; rm -rf "$TARGET"; exit 130; }
trap cleanup_on_signal INT TERM

# Bounds: per check, pan's depth (-m) and memory (-DMEMLIM, MB); per check a wall-clock limit in seconds.
DEPTH=10000
MEMLIM=2048
LIMIT_SECONDS=100
# The fence model's two bounds (model/README.md, "Bounds"): ONE_TX, one transaction per client with up to 6
# statements and savepoints nested 2 deep; TWO_TX, two transactions per client (server sessions used again) with
# up to 2 statements each.
ONE_TX="-DMAXTX=1 -DMAXST=6 -DMAXDEPTH=2"
TWO_TX="-DMAXTX=2 -DMAXST=2 -DMAXDEPTH=1"

# The fence's pan.c compiles in ~2 s at -O0 but ~16 s at -O2, which its short searches never win back; the
# election's compiles quickly and searches longer, so it gets -O2.
cflags() { case "$1" in fence.pml) echo "-O0 -w -DMEMLIM=$MEMLIM" ;; *) echo "-O2 -w -DMEMLIM=$MEMLIM" ;; esac; }
JOBS="${FENCELINE_MODEL_JOBS:-2}"

P1='term>=highest'
P2='unaudited==0'
P3='assertion violated  !(((leading[0]'

# name | model | expected ("holds", or a text the violation report must contain: proof that the counterexample
# is for the property the variant attacks) | spin -D flags | search (safety, or liveness under weak fairness)
CHECKS=(
  # The correct model.
  "fence|fence.pml|holds|$ONE_TX|safety"
  "fence-two-txns|fence.pml|holds|$TWO_TX|safety"
  "election-safety|election.pml|holds||safety"
  "election-liveness|election.pml|holds|-DLIVENESS|liveness"
  # The coordinator's lease-revocation bug: P3 must fail. P1 holds regardless: the fence model lets every client
  # write at any time, whatever the election says (fence, fence-two-txns).
  "election-etcd-lease-bug|election.pml|$P3|-DETCD_BUG|safety"
  # Mutations: one defence removed each.
  "mutation-read-before-lock|fence.pml|$P1|$ONE_TX -DREAD_BEFORE_LOCK|safety"
  "mutation-no-lock-at-commit|fence.pml|$P1|$ONE_TX -DNO_LOCK_AT_COMMIT|safety"
  "mutation-advance-no-wait|fence.pml|$P1|$ONE_TX -DADVANCE_NO_WAIT|safety"
  "mutation-partition-no-guard|fence.pml|$P1|$ONE_TX -DPARTITION_UNGUARDED|safety"
  "mutation-prepared-releases|fence.pml|$P1|$ONE_TX -DPREPARED_RELEASES|safety"
  "mutation-cache-savepoint|fence.pml|$P1|$ONE_TX -DCACHE_SURVIVES_SAVEPOINT|safety"
  "mutation-cache-exact-subid|fence.pml|$P1|$ONE_TX -DCACHE_EXACT_SUBXACT|safety"
  "mutation-cache-survives-txn|fence.pml|$P1|$TWO_TX -DCACHE_SURVIVES_TXN|safety"
  "mutation-rr-plain-read|fence.pml|$P1|$ONE_TX -DRR_PLAIN_READ|safety"
  "mutation-audit-in-txn|fence.pml|$P2|$ONE_TX -DAUDIT_IN_TXN|safety"
  "mutation-no-margin|election.pml|$P3|-DNO_MARGIN|safety"
)

# Runs one search in target/NAME: spin -a, gcc, pan (bounded by depth, memory and time).
search() {
  local name="$1" model="$2" flags="$3" mode="$4" dir="$TARGET/$1"
  mkdir -p "$dir"
  cp "$model" "$dir/"
  cd "$dir"
  local started=$SECONDS CFLAGS
  CFLAGS=$(cflags "$model")
  # shellcheck disable=SC2086
  if ! spin $flags -a "$model" >spin.log 2>&1; then echo "spin failed" >pan.out; return 0; fi
  if [ "$mode" = liveness ]; then
    gcc $CFLAGS -DNFAIR=3 -o pan pan.c >>spin.log 2>&1 || { echo "gcc failed" >pan.out; return 0; }
    timeout "$LIMIT_SECONDS" ./pan -m$DEPTH -a -f >pan.out 2>&1 || true
  else
    gcc $CFLAGS -DSAFETY -o pan pan.c >>spin.log 2>&1 || { echo "gcc failed" >pan.out; return 0; }
    timeout "$LIMIT_SECONDS" ./pan -m$DEPTH >pan.out 2>&1 || true
  fi
  echo $((SECONDS - started)) >seconds
}

# Judges one finished search and prints its line.
judge() {
  local name="$1" expect="$2" dir="$TARGET/$1" out="$TARGET/$1/pan.out" errors states verdict
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out" | head -1)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$out" | head -1)
  if [ -z "$errors" ]; then
    verdict="no verdict ($(head -c 200 "$out"); time limit ${LIMIT_SECONDS}s; see $dir)"
  elif grep -q "max search depth too small\|out of memory" "$out"; then
    verdict="incomplete search (depth bound $DEPTH or memory $MEMLIM MB reached; see $out)"
  elif [ "$expect" = holds ]; then
    [ "$errors" = 0 ] && verdict=ok || verdict="unexpected counterexample: $(grep -m1 'violated\|cycle\|invalid end' "$out")"
  elif [ "$errors" != 0 ] && grep -qF "$expect" "$out"; then
    verdict=ok
  elif [ "$errors" = 0 ]; then
    verdict="expected a counterexample ($expect), the search found none"
  else
    verdict="counterexample for the wrong property: $(grep -m1 'violated\|cycle\|invalid end' "$out")"
  fi
  if [ "$verdict" = ok ] && [ "$expect" = holds ]; then
    printf 'PASS  %-27s holds (%s states, %ss)\n' "$name" "$states" "$(cat "$dir/seconds")"
  elif [ "$verdict" = ok ]; then
    printf 'PASS  %-27s counterexample: %s (%ss)\n' "$name" \
      "$(grep -m1 -o 'assertion violated.*(at depth [0-9]*)\|acceptance cycle (at depth [0-9]*)' "$out" \
         | sed 's/assertion violated *//')" "$(cat "$dir/seconds")"
  else
    printf 'FAIL  %-27s %s\n' "$name" "$verdict"
    return 1
  fi
}

echo "spin model check: $(spin -V | head -1); $JOBS jobs"
running=0
for c in "${CHECKS[@]}"; do
  IFS='|' read -r name model expect flags mode <<<"$c"
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
  ( search "$name" "$model" "$flags" "$mode" ) &
  running=$((running + 1))
done
wait

passed=0
failed=0
for c in "${CHECKS[@]}"; do
  IFS='|' read -r name model expect flags mode <<<"$c"
  if judge "$name" "$expect"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done

if [ "$failed" -eq 0 ]; then
  rm -rf "$TARGET"
else
  echo "build products and trails kept in $TARGET (replay: cd $TARGET/NAME && spin <flags> -t -p MODEL.pml)"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
