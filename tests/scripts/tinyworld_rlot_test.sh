#!/usr/bin/env bash
# The tiny world's result for RLoT, asserted: after scripts/quickstart.sh trains the navigator
# (configs/quickstart/rlot.yaml: the blocks on the shipped logic-block model t1r) on the tiny
# world, the trained navigator must beat, on the held-out test items it evaluates (the
# tool-free items and the long sums; self-consistent accuracy, RLoT Sec. 4.1):
#   - direct answering (RLoT's Direct QA: Terminate first);
#   - the best fixed block sequence the quickstart evaluates (Reason, Decompose, Debate,
#     Reason-Reason, Reason-Reason-Reason, Reason-Refine, Debate-Reason, RLoT App. G's
#     Decompose-Reason-Refine, and the trained navigator's own three commonest block patterns
#     run as fixed sequences):
#     strictly more accurate.
# A navigator that learned no more than one fixed sequence does not pass: that sequence is
# among the baselines, and the navigator ties it at best. Zero-shot CoT is printed, not
# asserted. Minutes of training and evaluation: ctest label "results" (scripts/test.sh runs it
# only with ALLOT_RESULTS=1).
#
#   tests/scripts/tinyworld_rlot_test.sh ALLOT_BINARY [quickstart options...]
#   ALLOT_RLOT_TEST_RUN=DIR tests/scripts/tinyworld_rlot_test.sh ALLOT_BINARY
#       checks the evaluations of a finished quickstart run in DIR instead of running one
# Exit 0: passed; 77: skipped (no shipped pool); anything else: failed.
set -uo pipefail
allot=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
if [[ ! -f $root/assets/tinyworld/pool/t1r/config.json ]]; then
  echo "SKIP: no shipped logic-block model t1r"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n ${ALLOT_RLOT_TEST_RUN:-} ]]; then
  run_dir=$ALLOT_RLOT_TEST_RUN
else
  run_dir=$tmp/run  # or the caller's --out, kept
  args=("$@")
  for ((i = 0; i + 1 < ${#args[@]}; ++i)); do
    [[ ${args[i]} == --out ]] && run_dir=${args[i + 1]}
  done
  ALLOT=$allot bash "$root/scripts/quickstart.sh" --no-setup --recipe rlot --out "$run_dir" "$@" \
    > "$tmp/out.log" 2>&1
  code=$?
  if [[ $code != 0 ]]; then
    echo "FAIL: scripts/quickstart.sh exited $code; its output:"
    tail -n 40 "$tmp/out.log"
    exit 1
  fi
  sed -n '/^method /,/^(accuracy/p' "$tmp/out.log"
fi
python3 - "$root/scripts" "$run_dir/eval" <<'PY'
import glob, os, sys
sys.path.insert(0, sys.argv[1])
import quickstart_tools as qt
d = sys.argv[2]
before = qt.load_rlot(glob.glob(os.path.join(d, "before-*.json")))
after = qt.load_rlot(glob.glob(os.path.join(d, "after-*.json")))
if "navigator" not in after:
    sys.exit(f"FAIL: no evaluation of the trained navigator in {d}")
nav = after["navigator"]
best = qt.best_fixed(before)
if best is None or "direct" not in before:
    sys.exit(f"FAIL: the baselines (direct, fixed sequences) were not evaluated in {d}")
bars = [("direct", before["direct"]), (f"best fixed sequence {best['method']}", best)]
print(f"trained navigator: accuracy {nav['accuracy']:.3f} ({nav['problems']} problems), "
      f"{nav['tokens_per_problem']:.0f} tokens/problem")
bad = []
for name, r in bars:
    print(f"{name}: accuracy {r['accuracy']:.3f}, {r['tokens_per_problem']:.0f} tokens/problem")
    if nav["accuracy"] <= r["accuracy"]:
        bad.append(f"navigator accuracy {nav['accuracy']:.3f} <= {name}'s {r['accuracy']:.3f}")
if "cot" in before:  # reported, not asserted: the result is against direct and fixed sequences
    cot = before["cot"]
    print(f"zero-shot cot (not asserted): accuracy {cot['accuracy']:.3f}, "
          f"{cot['tokens_per_problem']:.0f} tokens/problem")
if bad:
    sys.exit("FAIL: the trained navigator does not beat the baselines: " + "; ".join(bad))
print("PASS: the trained navigator beats direct answering and every fixed block sequence")
PY
