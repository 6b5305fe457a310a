#!/usr/bin/env bash
# scripts/quickstart.sh --recipe rlot end to end in about a minute: the smallest shipped tier
# stands in for t0, t1, t2 and t1r, 4 training episodes, 9 test items. The result test
# (tinyworld_rlot_test.sh, label results) takes half an hour; this one checks the wiring it
# relies on: the RLoT branch adds the long sums to the tool-free items, evaluates direct
# answering, zero-shot CoT and the seven fixed block sequences, trains, evaluates the
# navigator, then runs the navigator's commonest block
# patterns as fixed sequences (so that a navigator that learned one fixed sequence is compared
# with it), prints the table and stops every process.
#
#   tests/scripts/quickstart_rlot_test.sh ALLOT_BINARY
# Exit 0: passed; 77: skipped (no shipped t0 tier); anything else: failed.
set -uo pipefail
allot=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/scripts/t0_pool.sh"  # $tmp/pool: t0 as every tier
fail() {
  echo "FAIL: $*"
  echo "--- quickstart output:"
  tail -n 40 "$tmp/out.log"
  exit 1
}

ALLOT=$allot ALLOT_TINYWORLD_DIR=$tmp/data bash "$root/scripts/quickstart.sh" --no-setup \
  --recipe rlot --pool "$tmp/pool" --eval-items 9 --steps 4 --out "$tmp/run" > "$tmp/out.log" 2>&1
code=$?
[[ $code == 0 ]] || fail "scripts/quickstart.sh --recipe rlot exited $code"
grep -q "stopped [0-9]* processes" "$tmp/out.log" || fail "no cleanup report"
table=$tmp/run/table.txt
[[ -f $table ]] || fail "no table in $tmp/run"
python3 - "$table" <<'PY' || fail "the table is incomplete"
import sys
lines = open(sys.argv[1]).read().splitlines()
rows = {l.split()[0] for l in lines[1:] if l and not l.startswith("trained navigator's")}
want = ["direct", "cot", "fixed:reason", "fixed:decompose", "fixed:debate", "fixed:reason-reason",
        "fixed:reason-refine", "fixed:debate-reason", "fixed:decompose-reason-refine", "navigator"]
missing = [m for m in want if m not in rows]
pats = [l for l in lines if l.startswith("trained navigator's block patterns")]
if not pats:
    missing.append("the navigator's block patterns")
else:
    listed = pats[0].split(": ", 1)[1]
    if not listed.startswith("none"):
        # "P1 c1, P2 c2, ...", commonest first: the three commonest must be fixed rows.
        for entry in listed.split(", ")[:3]:
            m = "fixed:" + entry.rsplit(" ", 1)[0].lower()
            if m not in rows:
                missing.append(f"{m} (one of the navigator's commonest patterns)")
# Per-problem items reach the table: the oracle over the fixed sequences and the navigator's
# wins and losses against the best one.
if not any(l.startswith("per-problem best of the ") for l in lines):
    missing.append("the per-problem oracle line")
if not any(l.startswith("trained navigator against fixed:") for l in lines):
    missing.append("the navigator's wins and losses")
if missing:
    sys.exit("missing rows: " + "; ".join(missing) + "\n" + "\n".join(lines))
print("\n".join(lines))
PY
# The long sums (long_test.jsonl / long_train.jsonl) joined the eval subset and the training
# items, beside the tool-free items of every other difficulty.
for f in eval train; do
  grep -q '"difficulty":"long"' "$tmp/run/$f.jsonl" || fail "no long sum in $f.jsonl"
  grep -q '"difficulty":"add2"' "$tmp/run/$f.jsonl" || fail "no add2 item in $f.jsonl"
done
echo "PASS: the RLoT quickstart evaluated the baselines, the navigator and its own patterns"
