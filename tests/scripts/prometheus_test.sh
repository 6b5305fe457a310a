#!/usr/bin/env bash
# allot's /metrics pages, read by the real Prometheus tools: `allot serve` (the t0 tier as t1r),
# two rollout workers and a short distributed learner run between them (configs/quickstart/
# rlot.yaml, four episodes, so that every series has data). `promtool check metrics` passes on
# every page; a Prometheus server on loopback (its own port and storage folder) scrapes them
# every second, and its HTTP API returns every series docs/rollout.md lists as always
# exported. Both ways: a family a page exports that the list lacks fails too, and so does a
# listed one that docs/rollout.md does not name. The learner has no /metrics page (its
# metrics go to metrics.jsonl and TensorBoard). About 30 s.
#
#   tests/scripts/prometheus_test.sh ALLOT_BINARY
# Exit 0: passed; 77: skipped (no prometheus or promtool, or no shipped t0 tier); else failed.
set -uo pipefail
allot=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
for tool in prometheus promtool curl; do
  if ! command -v "$tool" > /dev/null; then
    echo "SKIP: no $tool on PATH (Debian's prometheus package ships prometheus and promtool)"
    exit 77
  fi
done

# Always exported, with at least one sample after an episode (docs/rollout.md, "Metrics pages").
serve_series=(
  allot_serve_http_requests_total allot_serve_prompt_tokens_total
  allot_serve_generation_tokens_total allot_serve_num_requests_running
  allot_serve_num_requests_waiting allot_serve_batches_total allot_serve_batched_requests_total
  allot_serve_batch_requests allot_serve_batch_sequences allot_serve_time_to_first_token_seconds
  allot_serve_e2e_request_latency_seconds
)
worker_series=(
  allot_worker_episodes_total allot_worker_episodes_per_second allot_worker_in_flight_episodes
  allot_worker_unacked_trajectories allot_worker_capacity allot_worker_draining
  allot_worker_policy_version allot_worker_episode_seconds allot_worker_endpoint_latency_seconds
  allot_worker_endpoint_tokens_total allot_worker_endpoint_cost_usd_total
)
# Declared on every page, with samples only once an episode failed or a request was rejected.
on_event_series=(allot_worker_episode_failures_total allot_worker_rejected_total)
promised=("${serve_series[@]}" "${worker_series[@]}")

source "$root/tests/scripts/t0_pool.sh"  # $tmp/pool: t0 as every tier; skips without it
out=$tmp
trap_rm=$tmp
mkdir -p "$out/logs"
export ALLOT_TW_POOL=$tmp/pool
# shellcheck source=tests/scripts/tinyworld_procs.sh
source "$root/tests/scripts/tinyworld_procs.sh"  # serve, start_workers, fail; stops them at exit

# Every promised family is named in the docs.
for s in "${promised[@]}" "${on_event_series[@]}"; do
  grep -q "\`$s\`" docs/rollout.md || fail "docs/rollout.md does not name \`$s\`"
done

"$allot" tinyworld generate --out "$tmp/data" --train-per-bucket 1 --test-per-bucket 1 \
  --long-train 0 --long-test 0 > "$out/logs/generate.log" 2>&1 ||
  fail "allot tinyworld generate: $(tail -3 "$out/logs/generate.log")"
serve t1r
start_workers configs/quickstart/rlot.yaml
export ALLOT_QS_TRAIN_DATA=$tmp/data/train.jsonl ALLOT_QS_EVAL_DATA=$tmp/data/test.jsonl
OMP_NUM_THREADS=1 "$allot" train -c configs/quickstart/rlot.yaml --set trainer.total_steps=4 \
  --set "run.output_dir=$tmp/runs" > "$out/logs/train.log" 2>&1 ||
  fail "allot train: $(tail -10 "$out/logs/train.log")"

# The scrape targets: host:port of each /metrics page.
targets=("${ALLOT_TW_T1R_URL#http://}")
for w in A B; do
  port=$(sed -n 's/.*, metrics port \([0-9]*\)$/\1/p' "$out/logs/worker-$w.log")
  [[ -n $port && $port != 0 ]] || fail "worker $w logged no metrics port: $(cat "$out/logs/worker-$w.log")"
  targets+=("127.0.0.1:$port")
done

# promtool check metrics: exit 0 and nothing printed (lint problems exit 3 and are named).
exported=()
for t in "${targets[@]}"; do
  curl -sf "http://$t/metrics" > "$tmp/page.txt" || fail "GET http://$t/metrics failed"
  check=$(promtool check metrics < "$tmp/page.txt" 2>&1)
  code=$?
  [[ $code == 0 && -z $check ]] ||
    fail "promtool check metrics on http://$t/metrics (exit $code):"$'\n'"$check"
  mapfile -t -O "${#exported[@]}" exported < <(sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' "$tmp/page.txt")
done
for family in "${exported[@]}"; do
  [[ " ${promised[*]} ${on_event_series[*]} " == *" $family "* ]] ||
    fail "/metrics exports $family, which the list here and docs/rollout.md lack"
done

# A Prometheus server of its own: a free loopback port, its own storage, 1 s scrapes.
prom_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
{
  echo "global: {scrape_interval: 1s, scrape_timeout: 1s}"
  echo "scrape_configs:"
  echo "  - job_name: allot_serve"
  echo "    static_configs: [{targets: ['${targets[0]}']}]"
  echo "  - job_name: allot_worker"
  echo "    static_configs: [{targets: ['${targets[1]}', '${targets[2]}']}]"
} > "$tmp/prometheus.yml"
promtool check config "$tmp/prometheus.yml" > "$out/logs/promtool-config.log" 2>&1 ||
  fail "promtool check config: $(cat "$out/logs/promtool-config.log")"
prometheus --config.file="$tmp/prometheus.yml" --web.listen-address="127.0.0.1:$prom_port" \
  --storage.tsdb.path="$tmp/tsdb" > "$out/logs/prometheus.log" 2>&1 &
pids+=($!)
api=http://127.0.0.1:$prom_port/api/v1

query() {  # query PROMQL: the number of series in the instant vector
  curl -sf --get "$api/query" --data-urlencode "query=$1" |
    python3 -c 'import json, sys; r = json.load(sys.stdin); print(len(r["data"]["result"]) if r["status"] == "success" else -1)'
}
up=0
for _ in $(seq 300); do
  up=$(curl -sf "$api/targets" 2> /dev/null | python3 -c '
import json, sys
t = json.load(sys.stdin)["data"]["activeTargets"]
print(sum(x["health"] == "up" for x in t))' 2> /dev/null)
  # Up, and the first scrape's samples queryable.
  [[ ${up:-0} == 3 && $(query 'up == 1') == 3 ]] && break
  sleep 0.1
done
[[ ${up:-0} == 3 ]] || fail "Prometheus has ${up:-0} of 3 targets up: $(curl -s "$api/targets")
$(tail -5 "$out/logs/prometheus.log")"

missing=()
for s in "${serve_series[@]}"; do
  [[ $(query "{__name__=~\"${s}(_bucket|_sum|_count)?\",job=\"allot_serve\"}") -ge 1 ]] ||
    missing+=("$s")
done
for s in "${worker_series[@]}"; do
  [[ $(query "{__name__=~\"${s}(_bucket|_sum|_count)?\",job=\"allot_worker\"}") -ge 1 ]] ||
    missing+=("$s")
done
[[ ${#missing[@]} == 0 ]] || fail "Prometheus has no series for: ${missing[*]}"
# The run's four episodes were scraped, not just the families' names.
episodes=$(curl -sf --get "$api/query" --data-urlencode 'query=sum(allot_worker_episodes_total)' |
  python3 -c 'import json, sys; print(int(float(json.load(sys.stdin)["data"]["result"][0]["value"][1])))')
[[ $episodes -ge 4 ]] || fail "sum(allot_worker_episodes_total) = $episodes, expected >= 4"
# The learner has finished: nothing is decoding, and the gauge says so.
running=$(curl -sf --get "$api/query" --data-urlencode 'query=allot_serve_num_requests_running' |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["result"][0]["value"][1])')
[[ $running == 0 ]] || fail "allot_serve_num_requests_running = $running on an idle server"
echo "PASS: promtool check metrics clean on ${#targets[@]} pages; Prometheus has all ${#promised[@]} promised series ($episodes episodes)"
