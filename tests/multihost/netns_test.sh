#!/usr/bin/env bash
# allot across hosts: five test hosts as network namespaces joined by a bridge (hosts.sh):
# learner-0 and learner-1 (two Gloo ranks meeting at MASTER_ADDR = learner-0's veth address,
# GLOO_SOCKET_IFNAME=eth0), worker-a and worker-b (rollout workers) and endpoints (`allot serve`
# for the tiny world's tiers). The learner dials the workers with mutual TLS (certificates made
# here by openssl, one per worker for its address). Checked:
#   - a short GRPO run (configs/quickstart/coger.yaml with remote parts, coger_remote.yaml; two
#     ranks) completes: both ranks exit 0, metrics.jsonl has every step with its episodes, the
#     last checkpoint holds an adapter, and the Gloo ranks and the workers' trajectories really
#     crossed the veth links;
#   - a learner without a valid client certificate (none, or one another CA signed) is refused
#     by the workers: its run fails with a message naming the worker it could not reach;
#   - a short distributed DQN run (configs/quickstart/rlot.yaml, four episodes) completes with
#     its metrics and final checkpoint.
# About 30 s. Namespaces and processes are removed on every way out.
#
#   tests/multihost/netns_test.sh ALLOT_BINARY [--loopback] [--steps N]
# --loopback runs the same processes, certificates included, on 127.0.0.1 of this host (the
# reference for the network's per-step overhead, docs/benchmarks.md); --steps sets the GRPO
# run's length (default 3). The GRPO run's mean time/step_s, time/rollout_wait_s and time/sync_s
# are printed ("grpo time/step_s ...").
# Exit 0: passed; 77: skipped (not root, no iproute2/openssl, namespaces refused, no t0 tier).
set -uo pipefail
allot=$(realpath "$1")
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
loopback=0
steps=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --loopback) loopback=1 ;;
    --steps) steps=$2; shift ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
skip() { echo "SKIP: $*"; exit 77; }
for tool in openssl python3; do command -v "$tool" > /dev/null || skip "no $tool on PATH"; done
if [[ $loopback == 0 ]]; then
  [[ $(id -u) == 0 ]] || skip "network namespaces need root"
  command -v ip > /dev/null || skip "no ip (Debian's iproute2) on PATH"
fi

source "$root/tests/scripts/t0_pool.sh"  # $tmp/pool: t0 as every tier; skips without it
source "$root/tests/multihost/hosts.sh"
source "$root/tests/multihost/pki.sh"
out=$tmp
mkdir -p "$out/logs"
pids=()
cleanup() {
  local code=$?
  [[ ${#pids[@]} -gt 0 ]] && kill -TERM "${pids[@]}" 2> /dev/null
  wait 2> /dev/null
  mh_hosts_down
  rm -rf "$tmp"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() {
  echo "FAIL: $*"
  exit 1
}

hosts=(learner-0 learner-1 worker-a worker-b endpoints)
if [[ $loopback == 0 ]]; then
  if ! mh_hosts_up "${hosts[@]}" 2> "$out/logs/netns.log"; then
    mh_hosts_down
    skip "cannot make network namespaces here: $(cat "$out/logs/netns.log")"
  fi
  ifname=eth0
else
  for h in "${hosts[@]}"; do mh_addr[$h]=127.0.0.1; done
  ifname=lo
fi
on() {  # HOST CMD...: CMD on HOST
  local host=$1
  shift
  if [[ $loopback == 1 ]]; then "$@"; else mh_on "$host" "$@"; fi
}
start() {  # HOST LOG CMD...: CMD on HOST in the background, its output in LOG, its PID in pids
  local host=$1 log=$2
  shift 2
  # A simple command, not a function: $! is then CMD's own PID (ip netns exec execs it).
  if [[ $loopback == 1 ]]; then
    "$@" > "$log" 2>&1 &
  else
    ip netns exec "$(mh_ns "$host")" "$@" > "$log" 2>&1 &
  fi
  pids+=($!)
}
stop() {  # PID...: TERM and wait
  kill -TERM "$@" 2> /dev/null
  wait "$@" 2> /dev/null
}

pki=$tmp/pki
mh_pki "$pki" "worker-a=IP:$(mh_ip worker-a)" "worker-b=IP:$(mh_ip worker-b)" ||
  fail "openssl: $(tail -5 "$pki/openssl.log")"
# A second CA's client certificate: well formed, but not one the workers trust.
mh_pki "$pki/rogue" || fail "openssl: $(tail -5 "$pki/rogue/openssl.log")"

"$allot" tinyworld generate --out "$tmp/data" --train-per-bucket 1 --test-per-bucket 1 \
  --long-train 0 --long-test 0 > "$out/logs/generate.log" 2>&1 ||
  fail "allot tinyworld generate: $(tail -3 "$out/logs/generate.log")"
export ALLOT_TW_POOL=$tmp/pool ALLOT_TINYWORLD_DIR=$tmp/data ALLOT_QS_RUN_DIR=$tmp/qs
export ALLOT_QS_TRAIN_DATA=$tmp/data/train.jsonl ALLOT_QS_EVAL_DATA=$tmp/data/test.jsonl
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# The endpoints host: t0 (the policy), t1, t2 (CogER's levels) and t1r (RLoT's blocks).
ep=$(mh_ip endpoints)
for t in t0 t1 t2 t1r; do
  start endpoints "$out/logs/serve-$t.log" "$allot" serve --model "$tmp/pool/$t" --host "$ep" \
    --port 0 --served-model-name "$t" --threads 1
done
for t in t0 t1 t2 t1r; do
  url=""
  for _ in $(seq 600); do
    url=$(sed -n 's/^allot serve: listening on \(http[^ ]*\).*/\1/p' "$out/logs/serve-$t.log")
    [[ -n $url ]] && break
    sleep 0.1
  done
  [[ -n $url ]] || fail "allot serve $t did not start: $(tail -5 "$out/logs/serve-$t.log")"
  # Reached from a learner host, across the bridge.
  on learner-0 python3 scripts/quickstart_tools.py wait-http "$url/health" 60 ||
    fail "learner-0 cannot reach $t at $url"
  export "ALLOT_TW_${t^^}_URL=$url"
done
[[ $ALLOT_TW_T0_URL == http://$ep:* ]] || fail "t0 serves at $ALLOT_TW_T0_URL, not on $ep"

declare -A worker_pid
start_workers() {  # RECIPE: workers a and b, mutual TLS, as ALLOT_QS_WORKER_A/B
  local w
  for w in a b; do
    rm -f "$out/logs/worker-$w.addr"
    start "worker-$w" "$out/logs/worker-$w.log" "$allot" rollout-worker -c "$1" \
      --listen "$(mh_ip "worker-$w"):0" --set rollout.worker.metrics_listen=127.0.0.1:0 \
      --set "rollout.worker.port_file=$out/logs/worker-$w.addr" \
      --set "rollout.worker.auth.tls_cert=$pki/worker-$w.pem" \
      --set "rollout.worker.auth.tls_key=$pki/worker-$w.key" \
      --set "rollout.worker.auth.tls_ca=$pki/ca.pem"
    worker_pid[$w]=$!
  done
  for w in a b; do
    for _ in $(seq 300); do [[ -s $out/logs/worker-$w.addr ]] && break; sleep 0.1; done
    [[ -s $out/logs/worker-$w.addr ]] ||
      fail "rollout worker $w did not start: $(tail -5 "$out/logs/worker-$w.log")"
  done
  ALLOT_QS_WORKER_A=$(tr -d '\n' < "$out/logs/worker-a.addr")
  ALLOT_QS_WORKER_B=$(tr -d '\n' < "$out/logs/worker-b.addr")
  export ALLOT_QS_WORKER_A ALLOT_QS_WORKER_B
}
# The learner's side of mutual TLS: CLIENT is a PEM pair (learner, rogue/learner) or "" for none.
client_auth() {
  local a=(--set "rollout.dispatcher.auth.tls_ca=$pki/ca.pem")
  [[ -n $1 ]] && a+=(--set "rollout.dispatcher.auth.tls_cert=$pki/$1.pem"
    --set "rollout.dispatcher.auth.tls_key=$pki/$1.key")
  echo "${a[@]}"
}
bytes() {  # HOST: bytes it has sent onto the bridge (0 on loopback)
  if [[ $loopback == 1 ]]; then echo 0; else mh_bytes_sent "$1"; fi
}
# Gloo's rendezvous: each namespace has its own ports; on loopback a free one.
master_port=29500
[[ $loopback == 1 ]] && master_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# --- GRPO: two learner ranks on two hosts, two workers on two more. ---
start_workers tests/multihost/coger_remote.yaml
sent_l1=$(bytes learner-1)
sent_wa=$(bytes worker-a)
grpo=(train -c tests/multihost/coger_remote.yaml --name grpo --set "trainer.total_steps=$steps"
  --set grpo.group_size=4 --set grpo.prompts_per_step=2 --set "run.output_dir=$tmp/runs"
  --set checkpoint.every=1000)
rank_pids=()
for r in 0 1; do
  # shellcheck disable=SC2046  # client_auth's words are separate options
  start "learner-$r" "$out/logs/grpo-$r.log" env RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 \
    MASTER_ADDR="$(mh_ip learner-0)" MASTER_PORT="$master_port" GLOO_SOCKET_IFNAME=$ifname \
    "$allot" "${grpo[@]}" $(client_auth learner)
  rank_pids+=($!)
done
for r in 0 1; do
  wait "${rank_pids[$r]}" || fail "grpo rank $r failed: $(tail -15 "$out/logs/grpo-$r.log")"
done
run=$tmp/runs/grpo
[[ $(wc -l < "$run/metrics.jsonl") == "$steps" ]] ||
  fail "metrics.jsonl has $(wc -l < "$run/metrics.jsonl") lines, expected $steps"
python3 - "$run/metrics.jsonl" "$steps" << 'EOF' || fail "metrics.jsonl: see above"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == list(range(1, int(sys.argv[2]) + 1)), [r["step"] for r in rows]
for r in rows:
    assert r["episodes"] == 8 and r["episodes/failed"] == 0, r
    assert r["trained_tokens"] > 0 and r["grad_norm"] > 0, r
EOF
last=$(printf '%s/checkpoints/step-%012d' "$run" "$steps")
[[ -s $last/adapter/adapter_model.safetensors && -s $last/state.json ]] ||
  fail "no checkpoint with an adapter at $last: $(find "$run/checkpoints")"
grep -q "rank 1 of 2: $steps steps trained on its shard" "$out/logs/grpo-1.log" ||
  fail "rank 1 did not train on its shard: $(tail -5 "$out/logs/grpo-1.log")"
if [[ $loopback == 0 ]]; then
  # Rank 1 sent its gradients to rank 0 over Gloo, the workers their trajectories.
  l1=$(($(bytes learner-1) - sent_l1))
  wa=$(($(bytes worker-a) - sent_wa))
  [[ $l1 -gt 10000 && $wa -gt 10000 ]] ||
    fail "little traffic crossed the bridge: learner-1 sent $l1 bytes, worker-a $wa"
  echo "bridge traffic: learner-1 sent $l1 bytes, worker-a $wa"
fi
times=$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = rows[1:] or rows  # step 1 includes the first connections
mean = lambda k: sum(r[k] for r in rows) / len(rows)
print(" ".join(f"{k} {mean(k):.3f}" for k in ("time/step_s", "time/rollout_wait_s", "time/sync_s")))
' "$run/metrics.jsonl")
echo "grpo $times (means over steps 2..$steps, $([[ $loopback == 1 ]] && echo loopback || echo veth))"

# --- Refusal: a learner without a valid client certificate reaches no worker. ---
for client in "" rogue/learner; do
  name=refused-rogue
  [[ -z $client ]] && name=refused-none
  # shellcheck disable=SC2046
  on learner-0 "$allot" train -c tests/multihost/coger_remote.yaml --name "$name" \
    --set trainer.total_steps=1 --set grpo.group_size=4 --set grpo.prompts_per_step=2 \
    --set grpo.rollout_timeout_s=4 --set "run.output_dir=$tmp/runs" $(client_auth "$client") \
    > "$out/logs/$name.log" 2>&1 &&
    fail "a learner with client certificate '${client:-none}' trained: $(tail -5 "$out/logs/$name.log")"
  grep -q "$ALLOT_QS_WORKER_A" "$out/logs/$name.log" ||
    fail "the refused run (client certificate '${client:-none}') does not name worker $ALLOT_QS_WORKER_A: $(tail -5 "$out/logs/$name.log")"
  echo "refused (client certificate ${client:-none}): $(grep -m1 "$ALLOT_QS_WORKER_A" "$out/logs/$name.log")"
done

# --- DQN: the distributed navigator of configs/quickstart/rlot.yaml, four episodes. ---
stop "${worker_pid[a]}" "${worker_pid[b]}"
start_workers configs/quickstart/rlot.yaml
# shellcheck disable=SC2046
on learner-0 "$allot" train -c configs/quickstart/rlot.yaml --name dqn --set trainer.total_steps=4 \
  --set checkpoint.every=2 --set "run.output_dir=$tmp/runs" $(client_auth learner) \
  > "$out/logs/dqn.log" 2>&1 ||
  fail "dqn run failed: $(tail -15 "$out/logs/dqn.log")
--- worker a: $(tail -5 "$out/logs/worker-a.log")"
run=$tmp/runs/dqn
[[ -s $run/metrics.jsonl ]] || fail "the dqn run wrote no metrics.jsonl"
python3 - "$run/metrics.jsonl" << 'EOF' || fail "dqn metrics.jsonl: see above"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [1, 2, 3, 4], [r["step"] for r in rows]
assert all(r["episode/steps"] >= 1 for r in rows), rows
EOF
[[ -s $run/navigator.safetensors ]] || fail "the dqn run wrote no navigator.safetensors"
[[ -n $(find "$run/checkpoints" -mindepth 1 -maxdepth 1) ]] ||
  fail "the dqn run left no checkpoint (checkpoint.every=2): $(find "$run")"
echo "PASS: grpo ($steps steps, 2 ranks) and dqn (4 episodes) across $([[ $loopback == 1 ]] && echo loopback || echo "${#hosts[@]} namespaces on $mh_subnet.0/24") with mutual TLS; learners without a valid client certificate refused"
