#!/usr/bin/env bash
# scripts/quickstart.sh leaves no process behind: on Ctrl-C while the router trains,
# on TERM, and when a step fails after the servers and workers are up. The script runs in its
# own session, so every process it started (allot serve per tier, two rollout workers, evals,
# the learner) shares the session id and can be counted afterwards.
#
#   tests/scripts/quickstart_test.sh ALLOT_BINARY CASE     CASE: sigint | sigterm | failure
# Exit 0: passed; 77: skipped (no shipped t0 tier); anything else: failed.
set -uo pipefail
allot=$1
case_name=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/scripts/t0_pool.sh"  # $tmp/pool: t0 as every tier

args=(--no-setup --pool "$tmp/pool" --eval-items 4 --out "$tmp/run")
case $case_name in
  sigint | sigterm) args+=(--steps 200) ;;
  failure) args+=(--set grpo.group_size=1) ;;  # allot train refuses it: G >= 2
  *) echo "unknown case $case_name"; exit 2 ;;
esac
# A background job of a non-interactive shell starts with SIGINT ignored, which a script cannot
# trap; a terminal's Ctrl-C reaches a script with the default disposition, so restore it.
ALLOT=$allot ALLOT_TINYWORLD_DIR=$tmp/data python3 -c '
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execvp(sys.argv[1], sys.argv[1:])' bash "$root/scripts/quickstart.sh" "${args[@]}" \
  > "$tmp/out.log" 2>&1 &
pid=$!

fail() {
  echo "FAIL: $*"
  echo "--- quickstart output:"
  cat "$tmp/out.log"
  pkill -KILL -s "$pid" 2> /dev/null
  exit 1
}

if [[ $case_name != failure ]]; then
  # Interrupt only once the learner runs, with every server and worker up.
  for _ in $(seq 1200); do
    grep -q "starting run 'train'" "$tmp/out.log" && break
    kill -0 "$pid" 2> /dev/null || fail "the quickstart ended before training started"
    sleep 0.1
  done
  grep -q "starting run 'train'" "$tmp/out.log" || fail "training did not start within 120 s"
  sleep 1
  running=$(pgrep -s "$pid" | wc -l)
  # The script, three servers, two workers and the learner at least.
  [[ $running -ge 7 ]] || fail "expected >= 7 processes in the session, found $running"
  if [[ $case_name == sigint ]]; then kill -INT "$pid"; else kill -TERM "$pid"; fi
fi

for _ in $(seq 600); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
kill -0 "$pid" 2> /dev/null && fail "the quickstart did not exit within 60 s"
wait "$pid"
code=$?
case $case_name in
  sigint) [[ $code == 130 ]] || fail "exit code $code after SIGINT, expected 130" ;;
  sigterm) [[ $code == 143 ]] || fail "exit code $code after SIGTERM, expected 143" ;;
  failure) [[ $code != 0 ]] || fail "a failed training step exited 0" ;;
esac
grep -q "stopped [0-9]* processes" "$tmp/out.log" || fail "no cleanup report"
sleep 0.5
left=$(pgrep -s "$pid" | wc -l)
[[ $left == 0 ]] || fail "$left processes of the quickstart are still running: $(pgrep -a -s "$pid")"
echo "PASS: $case_name (exit $code, no process left)"
