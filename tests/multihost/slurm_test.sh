#!/usr/bin/env bash
# docs/launch/slurm.sbatch on a real SLURM cluster made and started here (slurm_cluster.sh): its
# own munge key, config and state; slurmctld and two slurmd nodes, node-0 and node-1, as test
# hosts (network namespaces on a bridge, hosts.sh), as a heterogeneous job needs a node per
# component; a host `endpoints` serves the tiny world's tiers with `allot serve`. The sbatch
# file is submitted as written with only its sizes set on the command line: one node per
# component, 2 learner ranks and 2 rollout workers (its default ports, mutual TLS through
# ALLOT_TLS_DIR with certificates made here by openssl). Each node declares the CPUs and GPUs
# the file's components ask for (2 x 8 CPUs and 4 GPUs; 2 x 4 CPUs). `sbatch --wait` returns the
# job's exit code; the run's metrics (every step, 8 episodes each), its last checkpoint with an
# adapter, both ranks and both workers in the job's output are checked. Daemons, jobs and hosts
# are removed on every way out. About 40 s.
#
#   tests/multihost/slurm_test.sh ALLOT_BINARY
# Exit 0: passed; 77: skipped (SLURM, munge or iproute2 missing, not root, or the cluster does
# not start here); anything else: failed.
set -uo pipefail
allot=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
skip() { echo "SKIP: $*"; exit 77; }
for tool in slurmctld slurmd sbatch squeue sinfo scancel munged mungekey; do
  command -v "$tool" > /dev/null ||
    skip "no $tool on PATH (Debian's slurm-wlm package ships SLURM and munge)"
done
for tool in ip nsenter unshare openssl python3; do
  command -v "$tool" > /dev/null || skip "no $tool on PATH"
done
[[ $(id -u) == 0 ]] || skip "network namespaces and a root slurmd need root"

source "$root/tests/scripts/t0_pool.sh"  # $tmp/pool: t0 as every tier; skips without it
source "$root/tests/multihost/hosts.sh"
source "$root/tests/multihost/slurm_cluster.sh"
source "$root/tests/multihost/pki.sh"
out=$tmp
mkdir -p "$out/logs"
pids=()
cleanup() {
  local code=$?
  if [[ ${#pids[@]} -gt 0 ]]; then
    kill -TERM "${pids[@]}" 2> /dev/null
    wait "${pids[@]}" 2> /dev/null
  fi
  slurm_down
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

steps=3
# Component 0: 2 ranks x 8 CPUs and 4 GPUs; component 1: 2 workers x 4 CPUs (the file's values).
slurm_up "$tmp/slurm" 2 16 16000 4 endpoints 2> "$out/logs/slurm_up.log" ||
  skip "SLURM does not start here: $(cat "$out/logs/slurm_up.log")"

mh_pki "$tmp/pki" "worker=DNS:node-0,DNS:node-1" || fail "openssl: $(tail -5 "$tmp/pki/openssl.log")"

"$allot" tinyworld generate --out "$tmp/data" --train-per-bucket 1 --test-per-bucket 1 \
  --long-train 0 --long-test 0 > "$out/logs/generate.log" 2>&1 ||
  fail "allot tinyworld generate: $(tail -3 "$out/logs/generate.log")"
export ALLOT_TW_POOL=$tmp/pool ALLOT_TINYWORLD_DIR=$tmp/data ALLOT_QS_RUN_DIR=$tmp/qs
export ALLOT_QS_TRAIN_DATA=$tmp/data/train.jsonl ALLOT_QS_EVAL_DATA=$tmp/data/test.jsonl
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# The tiers on host `endpoints`, port 8000 + i.
i=0
for t in t0 t1 t2; do
  (slurm_exec endpoints "$allot" serve --model "$tmp/pool/$t" --host 0.0.0.0 --port $((8000 + i)) \
    --served-model-name "$t" --threads 1) > "$out/logs/serve-$t.log" 2>&1 &
  pids+=($!)
  export "ALLOT_TW_${t^^}_URL=http://endpoints:$((8000 + i))"
  i=$((i + 1))
done
for t in t0 t1 t2; do
  url_var=ALLOT_TW_${t^^}_URL
  (slurm_exec node-0 python3 scripts/quickstart_tools.py wait-http "${!url_var}/health" 60) ||
    fail "node-0 cannot reach $t at ${!url_var}: $(tail -5 "$out/logs/serve-$t.log")"
done

export ALLOT=$allot RUN_NAME=slurm-grpo ALLOT_TLS_DIR=$tmp/pki
slurm_on timeout 150 sbatch --wait --quiet --output="$out/logs/job.out" --chdir="$root" \
  --nodes=1 --ntasks-per-node=2 : --nodes=1 --ntasks-per-node=2 \
  docs/launch/slurm.sbatch tests/multihost/coger_remote.yaml --set "trainer.total_steps=$steps" \
  --set grpo.group_size=4 --set grpo.prompts_per_step=2 --set "run.output_dir=$tmp/runs" \
  > "$out/logs/sbatch.log" 2>&1
code=$?
job_out=$(cat "$out/logs/job.out" 2> /dev/null)
[[ $code == 0 ]] || fail "sbatch --wait exited $code: $(cat "$out/logs/sbatch.log")
--- job output:
$(tail -30 <<< "$job_out")"

run=$tmp/runs/slurm-grpo
[[ -s $run/metrics.jsonl ]] || fail "no metrics.jsonl in $run; job output: $(tail -20 <<< "$job_out")"
python3 - "$run/metrics.jsonl" "$steps" << 'EOF' || fail "metrics.jsonl: see above"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == list(range(1, int(sys.argv[2]) + 1)), [r["step"] for r in rows]
for r in rows:
    assert r["episodes"] == 8 and r["episodes/failed"] == 0, r
    assert r["trained_tokens"] > 0, r
EOF
last=$(printf '%s/checkpoints/step-%012d' "$run" "$steps")
[[ -s $last/adapter/adapter_model.safetensors && -s $last/state.json ]] ||
  fail "no checkpoint with an adapter at $last: $(find "$run/checkpoints" 2>&1)"
for r in 0 1; do
  grep -q "learner rank $r of 2" <<< "$job_out" || fail "no learner rank $r of 2 in the job output"
done
grep -q "rank 1 of 2: $steps steps trained on its shard" <<< "$job_out" ||
  fail "rank 1 did not train on its shard: $(tail -20 <<< "$job_out")"
workers=$(grep -c "allot rollout-worker .* listening on 0.0.0.0:" <<< "$job_out")
[[ $workers == 2 ]] || fail "$workers rollout workers listened, expected 2: $(grep -i worker <<< "$job_out")"
echo "PASS: sbatch docs/launch/slurm.sbatch (2 learner ranks, 2 rollout workers, mutual TLS) trained $steps steps"
