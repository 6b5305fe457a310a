#!/usr/bin/env bash
# R2-Reasoner's tiny-world result, asserted: after the cold start (R2-Reasoner Sec. 4.1-4.2)
# and the alternating GRPO (Sec. 4.3) on the shipped tiny-world pool, the decomposer + allocator
# must reach the accuracy of the best single tier (the most accurate tier answering alone with
# chain of thought; the cheapest of equals) at a lower C_API (the pool's calls per task), on
# the decomposable test items (min_level <= 3, two solution steps or more), after the GRPO run
# of every seed in --seeds (one cold start; each seed's run trains from it).
# The settings (--alloc-items, --steps, --alpha) are chosen with --split val: the same pipeline
# scored on a validation split of the train items that no cold-start example and no GRPO
# prompt comes from, the test items unread (docs/results/r2.md: the settings tried and what
# each gave).
#
#   1. serve t0, t1, t2; `allot eval --method t0,t1,t2`: each tier alone
#   2. `allot r2 decomposer-data` on the tiny world's reference subtasks; `allot r2
#      allocator-data --baseline t2`: the grouped search on the served pool labels each
#      subtask's tier (the cheapest allocation whose integrated answer is right)
#   3. `allot sft` of a LoRA on t0 with both roles' examples (configs/sft.yaml, scaled)
#   4. two rollout workers, `allot train -c configs/quickstart/r2.yaml` from that adapter
#   5. `allot eval --method allocator` with the cold-start adapter and each trained one
#
#   tests/scripts/tinyworld_r2_test.sh ALLOT_BINARY [--eval-items N] [--alloc-items N]
#       [--sft-steps N] [--steps N] [--alpha A] [--seeds S,S,...] [--split test|val]
#       [--policy-tier T] [--pool DIR] [--out DIR] [--set K=V]...
# (--seeds: the GRPO runs' run.seed, 0,1,2 by default; --split: the items evaluated, test by
# default, val for choosing the settings.)
# (--policy-tier: the tier whose LoRA is the decomposer and allocator, t0 by default;
# --pool: the tiers, assets/tinyworld/pool by default.)
# (--set goes to allot train and to every allot eval.) Exit 0: passed; 3: ran, and an
# allocator missed the result (the table says by how much, for each seed); 77: skipped (no
# shipped pool); anything else: failed. Label "results" (scripts/test.sh runs it only with
# ALLOT_RESULTS=1); scripts/quickstart.sh --recipe r2 runs it too.
set -uo pipefail
allot=$(realpath "$1")
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
eval_items=48
# Chosen on the validation split (seed 0; docs/results/r2.md: the seven settings tried and what
# each gave): none met the test's criterion there, and of those at least as accurate as the best
# single tier, 128 items and 64 steps had the lowest C_API. 128 items give the cold start 37
# labelled allocations (91 have none); 64 alternating steps are 32 per role (switching every 4).
alloc_items=128
sft_steps=400
steps=64
# Eq. 7's alpha: the quantile of the baseline's token probabilities. R2's 0.3 suits long
# answers; a tier's answer here is ~26 bytes of which only the digits are uncertain, so the
# 0.3-quantile is always a boilerplate token and every subtask came out easy (32 of 32).
alpha=0.02
seeds=0,1,2
split=test
policy_tier=t0
pool=assets/tinyworld/pool
out=""
overrides=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --eval-items) eval_items=$2; shift 2 ;;
    --alloc-items) alloc_items=$2; shift 2 ;;
    --sft-steps) sft_steps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --alpha) alpha=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --split) split=$2; shift 2 ;;
    --policy-tier) policy_tier=$2; shift 2 ;;
    --pool) pool=$(realpath "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --set) overrides+=(--set "$2"); shift 2 ;;
    *) echo "tinyworld_r2_test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
cd "$root"
for t in t0 t1 t2; do
  if [[ ! -f $pool/$t/config.json ]]; then echo "SKIP: no shipped tier $t"; exit 77; fi
done
data=${ALLOT_TINYWORLD_DIR:-runs/tinyworld/data}
for f in test.jsonl train.jsonl; do
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
case $split in
  test|val) ;;
  *) echo "tinyworld_r2_test.sh: --split must be test or val, got '$split'" >&2; exit 2 ;;
esac
IFS=, read -r -a seed_list <<< "$seeds"
[[ ${#seed_list[@]} -gt 0 ]] || { echo "tinyworld_r2_test.sh: --seeds is empty" >&2; exit 2; }
for s in "${seed_list[@]}"; do
  [[ $s =~ ^[0-9]+$ ]] ||
    { echo "tinyworld_r2_test.sh: --seeds takes integers, got '$seeds'" >&2; exit 2; }
done
case $policy_tier in
  t0|t1|t2) ;;
  *) echo "tinyworld_r2_test.sh: --policy-tier must be t0, t1 or t2, got '$policy_tier'" >&2; exit 2 ;;
esac
# The policy's base and endpoint, for allot train and every allot eval (the recipe says t0).
# (First, so that the caller's --set wins.)
overrides=(--set "model.path=$ALLOT_TW_POOL/$policy_tier" --set "grpo.policy_endpoint=$policy_tier"
  --set "env.r2.policy_endpoint=$policy_tier" "${overrides[@]}")
say() { echo "==> [r2 $(date +%H:%M:%S)] $*"; }
started=$(date +%s)

# shellcheck source=tests/scripts/tinyworld_procs.sh
source "$root/tests/scripts/tinyworld_procs.sh"  # serve, restart, start_workers, fail

# --- data ---------------------------------------------------------------------------------
# eval.jsonl: the test items, or with --split val the validation items (test.jsonl unread).
python3 "$tools" data "$split" "$data/test.jsonl" "$data/train.jsonl" "$out" "$eval_items" \
  "$alloc_items" || fail "data"
export ALLOT_QS_TRAIN_DATA=$out/train.jsonl ALLOT_QS_EVAL_DATA=$out/eval.jsonl
for t in t0 t1 t2; do serve "$t"; done
say "pool served: $ALLOT_TW_T0_URL $ALLOT_TW_T1_URL $ALLOT_TW_T2_URL"

# --- 1. each tier alone (one process per tier, so that they run side by side) --------------
say "single tiers on $eval_items $split items"
eval_pids=()
for t in t0 t1 t2; do
  "$allot" eval "$out" -c "$recipe" --method "$t" "${overrides[@]}" --json "$out/eval/single-$t.json" \
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
  -o "$out/allocator_sft.jsonl" --baseline t2 --alpha "$alpha" --max-iterations 8 \
  --skip-bad-lines --only-correct \
  > "$out/logs/allocator-data.log" 2>&1 ||
  { tail -5 "$out/logs/allocator-data.log"; fail "allot r2 allocator-data"; }
tail -1 "$out/logs/allocator-data.log"
python3 "$tools" sft-mix "$out/decomposer_sft.jsonl" "$out/allocator_sft.jsonl" \
  "$out/cold_sft.jsonl" || fail "sft-mix"

# --- 3. SFT of the policy's LoRA on its tier (t0) -------------------------------------------
say "allot sft: $sft_steps steps"
OMP_NUM_THREADS=1 "$allot" sft -c configs/sft.yaml --name cold --set "run.output_dir=$out" \
  --set "model.path=$ALLOT_TW_POOL/$policy_tier" --set model.dtype=float32 \
  --set "sft.data=$out/cold_sft.jsonl" --set sft.format=prompt_completion \
  --set sft.epochs=0 --set "trainer.total_steps=$sft_steps" --set sft.batch_size=8 \
  --set sft.max_seq_len=1024 --set sft.optim.lr=2.0e-3 --set sft.optim.warmup_ratio=0.05 \
  --set sft.lora.r=16 --set sft.lora.lora_alpha=32 --set sft.lora.lora_dropout=0.0 \
  --set checkpoint.every=100000 --set logging.progress_bar=false \
  > "$out/logs/sft.log" 2>&1 || { tail -5 "$out/logs/sft.log"; fail "allot sft"; }
[[ -f $out/cold/adapter/adapter_config.json ]] || fail "no adapter in $out/cold/adapter"

# The policy's tier again, with the cold start's adapter loaded (the executors keep the base
# model).
restart "$policy_tier" --adapter "r2-cold=$out/cold/adapter"

# --- 4. alternating GRPO from the cold start, one run per seed; 5. each trained allocator ----
start_workers "$recipe"
policy_url_var=ALLOT_TW_${policy_tier^^}_URL
evaluate() {  # NAME ADAPTER: the allocator with that adapter, into eval/allocator-NAME.json
  say "allocator with adapter $2"
  "$allot" eval "$out" -c "$recipe" --method allocator "${overrides[@]}" --adapter "$2" \
    --json "$out/eval/allocator-$1.json" > "$out/logs/eval-$1.log" 2>&1 ||
    { tail -5 "$out/logs/eval-$1.log"; fail "allot eval --method allocator"; }
}
evaluate r2-cold r2-cold
trained_json=()
for seed in "${seed_list[@]}"; do
  run=train-s$seed
  say "allot train: $steps alternating GRPO steps, run.seed $seed"
  ALLOT_R2_COLD_START=$out/cold/adapter OMP_NUM_THREADS=1 "$allot" train -c "$recipe" \
    --set "run.output_dir=$out" --name "$run" --set "trainer.total_steps=$steps" \
    --set "run.seed=$seed" "${overrides[@]}" > "$out/logs/$run.log" 2>&1 ||
    { tail -5 "$out/logs/$run.log"; fail "allot train (run.seed $seed)"; }
  # Each role trained its own adapter (Sec. 4.3), published as <run>-<role>-v<N>.
  trained=""
  for role in decomposer allocator; do
    name=$(python3 scripts/quickstart_tools.py latest-adapter "${!policy_url_var}" "$run-$role") ||
      fail "no $role adapter published by the GRPO run $run"
    trained+="${trained:+,}$role=$name"
  done
  evaluate "trained-s$seed" "$trained"
  trained_json+=("$out/eval/allocator-trained-s$seed.json")
done
say "done in $(( $(date +%s) - started )) s"
say "$split items: the best single tier against the allocator trained with each seed"
python3 "$tools" check "$out/eval/single.json" "$out/eval/allocator-r2-cold.json" -- \
  "${trained_json[@]}"
code=$?
[[ $code == 0 ]] && { echo "PASS"; exit 0; }
[[ $code == 1 ]] || fail "the check could not read the evaluations (exit $code)"
echo "FAIL: an allocator does not reach the best single tier's accuracy at a lower C_API"
exit 3
