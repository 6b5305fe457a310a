#!/usr/bin/env bash
# `allot r2 allocator-data` against served tiers (the smallest shipped tier standing in for t0,
# t1 and t2, configs/quickstart/r2.yaml's prompts): every line gets an allocation, and
# --only-correct drops the tasks that no allocation answered correctly (an answer no executor
# can reach), counting them, while keeping the others. Seconds.
#
#   tests/scripts/r2_allocator_data_test.sh ALLOT_BINARY
# Exit 0: passed; 77: skipped (no shipped t0 tier); anything else: failed.
set -uo pipefail
allot=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
source "$root/tests/scripts/t0_pool.sh"  # $tmp/pool: t0 as every tier
out=$tmp
trap_rm=$tmp
mkdir -p "$out/logs"
export ALLOT_TW_POOL=$tmp/pool
# shellcheck source=tests/scripts/tinyworld_procs.sh
source "$root/tests/scripts/tinyworld_procs.sh"  # serve, fail; stops the servers at exit
for t in t0 t1 t2; do serve "$t"; done

# Two tasks with their operations; the second one's answer is out of every executor's reach.
cat > "$tmp/in.jsonl" <<'JSONL'
{"question": "What is 2 + 3?", "answer": "5", "subtasks": ["2 + 0", "#1 + 3"]}
{"question": "What is 4 + 4?", "answer": "-77", "subtasks": ["4 + 0", "#1 + 4"]}
JSONL
run() {  # OUT_FILE [flags...]: allocator-data on in.jsonl, difficulties from t2's log-probs
  local o=$1
  shift
  "$allot" r2 allocator-data -c configs/quickstart/r2.yaml -i "$tmp/in.jsonl" -o "$o" \
    --baseline t2 --max-iterations 4 "$@" 2>&1
}
all=$(run "$tmp/all.jsonl") || fail "allocator-data: $all"
[[ $(wc -l < "$tmp/all.jsonl") == 2 ]] ||
  fail "without --only-correct: not one example per task: $all"
grep -q "Allocate the 2 subtasks" "$tmp/all.jsonl" ||
  fail "no allocator prompt in $(head -c 300 "$tmp/all.jsonl")"
kept=$(run "$tmp/kept.jsonl" --only-correct) || fail "allocator-data --only-correct: $kept"
# (whether t0 solves the first task is the tier's business: it is kept or dropped, and counted)
written=$(sed -n 's/^wrote \([0-9]*\) examples.*/\1/p' <<< "$kept")
dropped=$(sed -n 's/.*(\([0-9]*\) lines dropped: no correct allocation).*/\1/p' <<< "$kept")
[[ -n $dropped && $dropped -ge 1 ]] || fail "--only-correct reported no dropped task: $kept"
[[ $((written + dropped)) == 2 ]] || fail "--only-correct: $written written + $dropped dropped != 2"
[[ $(wc -l < "$tmp/kept.jsonl") == "$written" ]] || fail "--only-correct wrote other than it says"
if grep -q "4 + 4" "$tmp/kept.jsonl"; then fail "--only-correct kept the unreachable task"; fi
echo "PASS: $kept"
