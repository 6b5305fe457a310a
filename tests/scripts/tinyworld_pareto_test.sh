#!/usr/bin/env bash
# The tiny world's result for CogER, asserted: after scripts/quickstart.sh trains the router on
# the shipped tiny-world pool, on the test items it evaluates (CogER Sec. 5: accuracy against
# cost):
#   - the trained router is not dominated: no fixed level L1..L4 and no random routing is both
#     at least as accurate and at most as costly as the router (a baseline that ties it on both
#     counts dominates it too);
#   - it is at least as accurate as the most accurate fixed level, at a lower mean cost.
# Cheaper, less accurate levels (L1, L2) do not dominate the router, and the router does not
# dominate them: the claim is non-domination, not dominance over every baseline.
# Random routing is a policy whose cost and accuracy are random variables: it is judged by its
# expectation on these items, the means over L1..L4 (each query goes to each level with
# probability 1/4, and the fixed levels answered every item greedily). The quickstart's one
# seeded draw is printed beside it and checked too (a draw is one more baseline policy).
# Minutes of training and evaluation: ctest label "results" (scripts/test.sh runs it only with
# ALLOT_RESULTS=1).
#
#   tests/scripts/tinyworld_pareto_test.sh ALLOT_BINARY [quickstart options...]
#       (with --out DIR the quickstart's run directory is kept there)
# Exit 0: passed; 77: skipped (no shipped pool); anything else: failed.
set -uo pipefail
allot=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
for t in t0 t1 t2; do
  if [[ ! -f $root/assets/tinyworld/pool/$t/config.json ]]; then
    echo "SKIP: no shipped tier $t"
    exit 77
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run_dir=$tmp/run  # or the caller's --out, kept
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; ++i)); do
  [[ ${args[i]} == --out ]] && run_dir=${args[i + 1]}
done
ALLOT=$allot bash "$root/scripts/quickstart.sh" --no-setup --out "$run_dir" "$@" > "$tmp/out.log" 2>&1
code=$?
if [[ $code != 0 ]]; then
  echo "FAIL: scripts/quickstart.sh exited $code; its output:"
  tail -n 40 "$tmp/out.log"
  exit 1
fi
sed -n '/^method /,/^(means/p' "$tmp/out.log"
python3 - "$run_dir/eval/table.json" <<'PY'
import json, sys
rows = {r["label"]: r for r in json.load(open(sys.argv[1]))}  # allot eval RUN --json

def merged(label):
    if label not in rows:
        sys.exit(f"FAIL: no row '{label}' in {sys.argv[1]}")
    return rows[label]["accuracy"], rows[label]["mean_cost_usd"]

router = merged("router (trained)")
fixed = {m: merged("fixed " + m) for m in ("L1", "L2", "L3", "L4")}
draw = merged("random (one draw)")
rand = tuple(sum(fixed[m][k] for m in fixed) / 4 for k in (0, 1))
best = max(fixed, key=lambda m: (fixed[m][0], -fixed[m][1]))
print(f"trained router: accuracy {router[0]:.3f}, cost/query {router[1]:.3e}")
print(f"most accurate fixed level {best}: accuracy {fixed[best][0]:.3f}, cost/query {fixed[best][1]:.3e}")
print(f"random routing (expected): accuracy {rand[0]:.3f}, cost/query {rand[1]:.3e}")
print(f"random routing (one draw): accuracy {draw[0]:.3f}, cost/query {draw[1]:.3e}")
bad = []
baselines = dict(fixed)
baselines["random routing (expected)"] = rand
baselines["random routing (one draw)"] = draw
for name, (acc, cost) in baselines.items():
    if acc >= router[0] and cost <= router[1]:
        bad.append(f"{name} dominates the router: accuracy {acc:.3f} >= {router[0]:.3f} "
                   f"at cost {cost:.3e} <= {router[1]:.3e}")
if router[0] < fixed[best][0]:
    bad.append(f"router accuracy {router[0]:.3f} < fixed {best}'s {fixed[best][0]:.3f}")
if router[1] >= fixed[best][1]:
    bad.append(f"router cost {router[1]:.3e} >= fixed {best}'s {fixed[best][1]:.3e}")
if bad:
    sys.exit("FAIL: " + "; ".join(bad))
print("PASS: no fixed level and no random routing dominates the trained router, and it is at "
      f"least as accurate as the most accurate fixed level ({best}) at "
      f"{100 * router[1] / fixed[best][1]:.0f}% of its cost")
PY
