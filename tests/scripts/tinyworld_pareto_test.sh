#!/usr/bin/env bash
# Issue 15's result for CogER, asserted: after scripts/quickstart.sh trains the router on the
# shipped tiny-world pool, the trained router must Pareto-dominate the baselines on the test
# items it evaluates (CogER Sec. 5: accuracy against cost):
#   - at least as accurate as the most accurate fixed level L1..L4, at a lower mean cost;
#   - at least as accurate as random routing, at no higher mean cost. Random routing is a policy
#     whose cost and accuracy are random variables: they are asserted against its expectation on
#     these items, the means over L1..L4 (each query goes to each level with probability 1/4, and
#     the fixed levels answered every item greedily). The quickstart's one seeded draw is printed
#     beside it, not asserted: a draw over a hundred queries is noisy (a level gets 24 +- 4).
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
python3 - "$run_dir/eval" <<'PY'
import glob, json, os, sys
d = sys.argv[1]

def merged(phase, method):
    n = correct = cost = 0.0
    for p in glob.glob(os.path.join(d, f"{phase}-{method}-*.json")):
        for r in json.load(open(p)):
            if r["method"] == method:
                n += r["episodes"]
                correct += r["accuracy"] * r["episodes"]
                cost += r["cost_usd"]
    if n == 0:
        sys.exit(f"FAIL: no {phase} evaluation of {method} in {d}")
    return correct / n, cost / n

router = merged("after", "router")
fixed = {m: merged("before", m) for m in ("L1", "L2", "L3", "L4")}
draw = merged("before", "random")
rand = tuple(sum(fixed[m][k] for m in fixed) / 4 for k in (0, 1))
best = max(fixed, key=lambda m: (fixed[m][0], -fixed[m][1]))
print(f"trained router: accuracy {router[0]:.3f}, cost/query {router[1]:.3e}")
print(f"most accurate fixed level {best}: accuracy {fixed[best][0]:.3f}, cost/query {fixed[best][1]:.3e}")
print(f"random routing (expected): accuracy {rand[0]:.3f}, cost/query {rand[1]:.3e}")
print(f"random routing (one draw): accuracy {draw[0]:.3f}, cost/query {draw[1]:.3e} (not asserted)")
bad = []
if router[0] < fixed[best][0]:
    bad.append(f"router accuracy {router[0]:.3f} < fixed {best}'s {fixed[best][0]:.3f}")
if router[1] >= fixed[best][1]:
    bad.append(f"router cost {router[1]:.3e} >= fixed {best}'s {fixed[best][1]:.3e}")
if router[0] < rand[0]:
    bad.append(f"router accuracy {router[0]:.3f} < random routing's expected {rand[0]:.3f}")
if router[1] > rand[1]:
    bad.append(f"router cost {router[1]:.3e} > random routing's expected {rand[1]:.3e}")
if bad:
    sys.exit("FAIL: the trained router does not Pareto-dominate: " + "; ".join(bad))
print("PASS: the trained router Pareto-dominates every fixed level and random routing")
PY
