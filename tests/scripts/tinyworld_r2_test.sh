#!/usr/bin/env bash
# Issue 15's result for R2-Reasoner, asserted: after the cold start (R2-Reasoner Sec. 4.1-4.2)
# and the alternating GRPO (Sec. 4.3) on the shipped tiny-world pool, the decomposer + allocator
# must reach the accuracy of the best single tier (the most accurate tier answering alone with
# chain of thought; the cheapest of equals) at a lower C_API (the pool's calls per task), on
# the decomposable test items (min_level <= 3, two solution steps or more).
#
#   1. serve t0, t1, t2; `allot eval --method t0,t1,t2`: each tier alone
#   2. `allot r2 decomposer-data` on the tiny world's reference subtasks; `allot r2
#      allocator-data --baseline t2`: the grouped search on the served pool labels each
#      subtask's tier (the cheapest allocation whose integrated answer is right)
#   3. `allot sft` of a LoRA on t0 with both roles' examples (configs/sft.yaml, scaled)
#   4. two rollout workers, `allot train -c configs/quickstart/r2.yaml` from that adapter
#   5. `allot eval --method allocator` with the cold-start adapter and the trained one
#
#   tests/scripts/tinyworld_r2_test.sh ALLOT_BINARY [--eval-items N] [--alloc-items N]
#       [--sft-steps N] [--steps N] [--out DIR]
# Exit 0: passed; 77: skipped (no shipped pool); anything else: failed. Label "results"
# (scripts/test.sh runs it only with ALLOT_RESULTS=1).
set -uo pipefail
allot=$(realpath "$1")
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
eval_items=48
alloc_items=16
sft_steps=150
steps=16
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --eval-items) eval_items=$2; shift 2 ;;
    --alloc-items) alloc_items=$2; shift 2 ;;
    --sft-steps) sft_steps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "tinyworld_r2_test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
cd "$root"
pool=assets/tinyworld/pool
for t in t0 t1 t2; do
  if [[ ! -f $pool/$t/config.json ]]; then echo "SKIP: no shipped tier $t"; exit 77; fi
done
data=${ALLOT_TINYWORLD_DIR:-runs/tinyworld/data}
for f in test.jsonl train.jsonl sft_train.jsonl; do
  if [[ ! -f $data/$f ]]; then echo "SKIP: no tiny world data $data/$f"; exit 77; fi
done
if [[ -z $out ]]; then
  out=$(mktemp -d)
  trap_rm=$out
else
  mkdir -p "$out"
  trap_rm=""
fi
out=$(realpath "$out")
mkdir -p "$out/logs" "$out/eval"
tools=scripts/r2_tinyworld_tools.py
recipe=configs/quickstart/r2.yaml
export ALLOT_TW_POOL=$(realpath "$pool")
say() { echo "==> [r2 $(date +%H:%M:%S)] $*"; }
started=$(date +%s)

pids=()
declare -A serve_pid
cleanup() {
  local code=$?
  [[ ${#pids[@]} -gt 0 ]] && kill -TERM "${pids[@]}" 2> /dev/null
  wait 2> /dev/null
  [[ -n $trap_rm ]] && rm -rf "$trap_rm"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() { echo "FAIL: $*"; exit 1; }

serve() {  # serve TIER [serve options...]: starts the tier, exports ALLOT_TW_<TIER>_URL
  local t=$1 url="" var
  shift
  rm -f "$out/logs/serve-$t.log"  # a restart must not read the last server's address
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$allot" serve --model "$ALLOT_TW_POOL/$t" --port 0 \
    --served-model-name "$t" --threads 1 "$@" > "$out/logs/serve-$t.log" 2>&1 &
  serve_pid[$t]=$!
  pids+=($!)
  for _ in $(seq 600); do
    url=$(sed -n 's/^allot serve: listening on \(http[^ ]*\).*/\1/p' "$out/logs/serve-$t.log" 2> /dev/null)
    [[ -n $url ]] && break
    kill -0 "${serve_pid[$t]}" 2> /dev/null || break
    sleep 0.1
  done
  [[ -n $url ]] || { tail -5 "$out/logs/serve-$t.log"; fail "allot serve for $t did not start"; }
  python3 scripts/quickstart_tools.py wait-http "$url/health" 60 || fail "$t not healthy"
  var=ALLOT_TW_$(echo "$t" | tr '[:lower:]' '[:upper:]')_URL
  export "$var=$url"
}

# --- data ---------------------------------------------------------------------------------
python3 "$tools" data "$data/test.jsonl" "$data/train.jsonl" "$data/sft_train.jsonl" "$out" \
  "$eval_items" "$alloc_items" || fail "data"
export ALLOT_QS_TRAIN_DATA=$out/train.jsonl ALLOT_QS_EVAL_DATA=$out/eval.jsonl
for t in t0 t1 t2; do serve "$t"; done
say "pool served: $ALLOT_TW_T0_URL $ALLOT_TW_T1_URL $ALLOT_TW_T2_URL"

# --- 1. each tier alone (one process per tier, so that they run side by side) --------------
say "single tiers on $eval_items test items"
eval_pids=()
for t in t0 t1 t2; do
  "$allot" eval "$out" -c "$recipe" --method "$t" --json "$out/eval/single-$t.json" \
    > "$out/logs/eval-$t.log" 2>&1 &
  eval_pids+=($!)
  pids+=($!)
done
for p in "${eval_pids[@]}"; do wait "$p" || fail "allot eval of a tier: see $out/logs/eval-t*.log"; done
python3 - "$out/eval" <<'PY'
import json, sys
d = sys.argv[1]
json.dump([json.load(open(f"{d}/single-{t}.json"))[0] for t in ("t0", "t1", "t2")],
          open(f"{d}/single.json", "w"), indent=2)
PY

# --- 2. cold-start data (App. B) -----------------------------------------------------------
say "decomposer data"
"$allot" r2 decomposer-data -c "$recipe" -i "$out/decomposer_in.jsonl" \
  -o "$out/decomposer_sft.jsonl" > "$out/logs/decomposer-data.log" 2>&1 ||
  { tail -5 "$out/logs/decomposer-data.log"; fail "allot r2 decomposer-data"; }
say "allocator data: the grouped search on the pool, $alloc_items train items"
"$allot" r2 allocator-data -c "$recipe" -i "$out/allocator_in.jsonl" \
  -o "$out/allocator_sft.jsonl" --baseline t2 --max-iterations 8 --skip-bad-lines \
  > "$out/logs/allocator-data.log" 2>&1 ||
  { tail -5 "$out/logs/allocator-data.log"; fail "allot r2 allocator-data"; }
tail -1 "$out/logs/allocator-data.log"
python3 "$tools" sft-mix "$out/decomposer_sft.jsonl" "$out/allocator_sft.jsonl" \
  "$out/cold_sft.jsonl" || fail "sft-mix"

# --- 3. SFT of the policy's LoRA on t0 -----------------------------------------------------
say "allot sft: $sft_steps steps"
OMP_NUM_THREADS=1 "$allot" sft -c configs/sft.yaml --name cold --set "run.output_dir=$out" \
  --set "model.path=$ALLOT_TW_POOL/t0" --set model.dtype=float32 \
  --set "sft.data=$out/cold_sft.jsonl" --set sft.format=prompt_completion \
  --set sft.epochs=0 --set "trainer.total_steps=$sft_steps" --set sft.batch_size=8 \
  --set sft.max_seq_len=1024 --set sft.optim.lr=2.0e-3 --set sft.optim.warmup_ratio=0.05 \
  --set sft.lora.r=16 --set sft.lora.lora_alpha=32 --set sft.lora.lora_dropout=0.0 \
  --set checkpoint.every=100000 --set logging.progress_bar=false \
  > "$out/logs/sft.log" 2>&1 || { tail -5 "$out/logs/sft.log"; fail "allot sft"; }
[[ -f $out/cold/adapter/adapter_config.json ]] || fail "no adapter in $out/cold/adapter"

# t0 again, with the cold start's adapter loaded (the executors keep the base model).
kill -TERM "${serve_pid[t0]}"
wait "${serve_pid[t0]}" 2> /dev/null
serve t0 --adapter "r2-cold=$out/cold/adapter"

# --- 4. alternating GRPO from the cold start -----------------------------------------------
for w in A B; do
  OMP_NUM_THREADS=1 "$allot" rollout-worker -c "$recipe" --listen 127.0.0.1:0 \
    --set rollout.worker.metrics_listen=127.0.0.1:0 \
    --set "rollout.worker.port_file=$out/logs/worker-$w.addr" > "$out/logs/worker-$w.log" 2>&1 &
  pids+=($!)
done
for w in A B; do
  for _ in $(seq 300); do [[ -s $out/logs/worker-$w.addr ]] && break; sleep 0.1; done
  [[ -s $out/logs/worker-$w.addr ]] || fail "rollout worker $w did not start"
  export "ALLOT_QS_WORKER_$w=$(tr -d '\n' < "$out/logs/worker-$w.addr")"
done
say "allot train: $steps alternating GRPO steps"
ALLOT_R2_COLD_START=$out/cold/adapter OMP_NUM_THREADS=1 "$allot" train -c "$recipe" \
  --set "run.output_dir=$out" --name train --set "trainer.total_steps=$steps" \
  > "$out/logs/train.log" 2>&1 || { tail -5 "$out/logs/train.log"; fail "allot train"; }
trained=$(python3 scripts/quickstart_tools.py latest-adapter "$ALLOT_TW_T0_URL" train) ||
  fail "no adapter published by the GRPO run"

# --- 5. the allocator: cold start, then trained --------------------------------------------
for a in r2-cold "$trained"; do
  say "allocator with adapter $a"
  "$allot" eval "$out" -c "$recipe" --method allocator --adapter "$a" \
    --json "$out/eval/allocator-$a.json" > "$out/logs/eval-$a.log" 2>&1 ||
    { tail -5 "$out/logs/eval-$a.log"; fail "allot eval --method allocator"; }
done
say "done in $(( $(date +%s) - started )) s"
python3 "$tools" check "$out/eval/single.json" "$out/eval/allocator-r2-cold.json" \
  "$out/eval/allocator-$trained.json"
code=$?
[[ $code == 0 ]] && { echo "PASS"; exit 0; }
echo "FAIL: the allocator does not reach the best single tier's accuracy at a lower C_API"
exit 1
