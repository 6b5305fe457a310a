#!/usr/bin/env bash
# A recipe's local parts (apps/local_parts.h): `allot train` on configs/quickstart/coger.yaml
# serves three tiers itself (`endpoints[i].serve`, the smallest shipped tier as each) and starts two rollout workers (`rollout.local_workers: 2`) on free ports, streams their
# logs into the run's logs/ and stops them, whatever way the run ends. `allot train` runs in a
# session of its own, so every process it started can be counted afterwards.
#
#   tests/scripts/local_parts_test.sh ALLOT_BINARY CASE
#     success   a two-step run exits 0, its logs are there, and no process is left
#     sigterm   SIGTERM mid-run: exit 143, no process left
#     sigint    SIGINT mid-run: exit 130, no process left
#     badserve  a tier that cannot load fails the run naming the endpoint and its log
#     baseurl   `serve` together with `base_url` is refused naming the key
# Exit 0: passed; 77: skipped (no shipped t0 tier); anything else: failed.
set -uo pipefail
allot=$(realpath "$1")
case_name=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
source "$root/tests/scripts/t0_pool.sh"  # $tmp/pool: t0 as every tier
recipe=configs/quickstart/coger.yaml
export ALLOT_TW_POOL=$tmp/pool OMP_NUM_THREADS=1
out=$tmp/out.log
run=$tmp/runs/local

fail() {
  echo "FAIL: $*"
  echo "--- allot output:"
  tail -n 30 "$out"
  [[ -n ${pid:-} ]] && pkill -KILL -s "$pid" 2> /dev/null
  exit 1
}

if [[ $case_name == baseurl ]]; then
  if "$allot" config validate "$recipe" --set 'endpoints[0].base_url=http://127.0.0.1:9' > "$out" 2>&1; then
    fail "serve with base_url validated"
  fi
  grep -q "endpoints\[0\].base_url has no effect with endpoints\[0\].serve" "$out" ||
    fail "the error does not name endpoints[0].base_url"
  echo "PASS: baseurl ($(grep -o 'endpoints\[0\].base_url has no effect[^(]*' "$out"))"
  exit 0
fi

"$allot" tinyworld generate --out "$tmp/data" --train-per-bucket 2 --test-per-bucket 1 \
  --long-train 0 --long-test 0 > "$tmp/generate.log" 2>&1 ||
  { echo "FAIL: allot tinyworld generate: $(tail -3 "$tmp/generate.log")"; exit 1; }
export ALLOT_TINYWORLD_DIR=$tmp/data ALLOT_QS_TRAIN_DATA=$tmp/data/train.jsonl
export ALLOT_QS_EVAL_DATA=$tmp/data/test.jsonl ALLOT_QS_RUN_DIR=$tmp

args=(train -c "$recipe" --set "run.output_dir=$tmp/runs" --name local
      --set grpo.prompts_per_step=2 --set grpo.group_size=2 --set logging.progress_bar=false)
case $case_name in
  success) args+=(--set trainer.total_steps=2) ;;
  sigterm | sigint) args+=(--set trainer.total_steps=500) ;;
  badserve) mkdir -p "$tmp/not-a-model"
            args+=(--set "endpoints[1].serve.model=$tmp/not-a-model" --set trainer.total_steps=2) ;;
  *) echo "unknown case $case_name"; exit 2 ;;
esac
# In a session of its own, SIGINT at its default disposition (a background job of a
# non-interactive shell starts with SIGINT ignored).
python3 -c '
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execvp(sys.argv[1], sys.argv[1:])' "$allot" "${args[@]}" > "$out" 2>&1 &
pid=$!

if [[ $case_name == sigterm || $case_name == sigint ]]; then
  # Interrupt once every part is up (the servers are waited for first, then the workers) and
  # the learner has had time to send episodes.
  for _ in $(seq 1200); do
    [[ -s $run/logs/worker-1.addr ]] && break
    kill -0 "$pid" 2> /dev/null || fail "allot train ended before its workers were up"
    sleep 0.1
  done
  [[ -s $run/logs/worker-1.addr ]] || fail "the local workers were not up within 120 s"
  sleep 3
  running=$(pgrep -s "$pid" | wc -l)
  # allot train, three servers, two workers.
  [[ $running -ge 6 ]] || fail "expected >= 6 processes in the session, found $running: $(pgrep -a -s "$pid")"
  if [[ $case_name == sigint ]]; then kill -INT "$pid"; else kill -TERM "$pid"; fi
fi

for _ in $(seq 1800); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
kill -0 "$pid" 2> /dev/null && fail "allot train did not exit within 180 s"
wait "$pid"
code=$?
sleep 0.5
left=$(pgrep -s "$pid" | wc -l)
[[ $left == 0 ]] || fail "$left processes of the run are still running: $(pgrep -a -s "$pid")"
case $case_name in
  success)
    [[ $code == 0 ]] || fail "allot train exited $code"
    for f in serve-t0.log serve-t1.log serve-t2.log worker-0.log worker-1.log; do
      [[ -s $run/logs/$f ]] || fail "no log $run/logs/$f"
    done
    grep -q "allot serve: listening on http://127.0.0.1:" "$run/logs/serve-t0.log" ||
      fail "serve-t0.log does not say where it listened"
    # The run's config.yaml keeps the serve blocks (resume and eval start them again), not the
    # ports this run happened to get.
    grep -q "serve:" "$run/config.yaml" || fail "config.yaml lost the serve blocks"
    grep -q "local_workers: 2" "$run/config.yaml" || fail "config.yaml lost rollout.local_workers"
    # ... and loads again as `allot resume` and `allot eval RUN` load it.
    "$allot" config print "$run/config.yaml" > "$tmp/print.log" 2>&1 ||
      fail "the run's config.yaml does not load: $(cat "$tmp/print.log")"
    grep -q "local_workers: 2" "$tmp/print.log" || fail "config print lost rollout.local_workers"
    # `allot eval RUN` serves the run's endpoints again, the trained adapter on the router's, and
    # prints the before/after table (apps/coger_table.h).
    python3 -c '
import os, sys
os.setsid()
os.execvp(sys.argv[1], sys.argv[1:])' "$allot" eval "$run" --episodes 3 --json "$tmp/table.json" \
      > "$tmp/eval.log" 2>&1 &
    pid=$!
    wait "$pid" || fail "allot eval exited $?: $(tail -5 "$tmp/eval.log")"
    for row in "fixed L1" "fixed L4" "random (expected)" "random (one draw)" \
               "router (untrained)" "router (trained)" "per difficulty"; do
      grep -q "^$row[ :]" "$tmp/eval.log" || fail "the table lacks '$row': $(cat "$tmp/eval.log")"
    done
    [[ -s $run/logs/eval-serve-t0.log ]] || fail "no log $run/logs/eval-serve-t0.log"
    left=$(pgrep -s "$pid" | wc -l)
    [[ $left == 0 ]] || fail "$left processes of allot eval are still running"
    ;;
  sigint) [[ $code == 130 ]] || fail "exit code $code after SIGINT, expected 130" ;;
  sigterm) [[ $code == 143 ]] || fail "exit code $code after SIGTERM, expected 143" ;;
  badserve)
    [[ $code != 0 ]] || fail "a tier that cannot load exited 0"
    grep -q "endpoint 't1' (allot serve)" "$out" || fail "the error does not name endpoint 't1'"
    grep -q "$run/logs/serve-t1.log" "$out" || fail "the error does not name serve-t1.log"
    ;;
esac
echo "PASS: $case_name (exit $code, no process left)"
