#!/usr/bin/env bash
# DeepTool's result, asserted: process-supervised GRPO on step-wise instances (Sec. 2.3,
# Eq. 5-11) improves on the cold start it starts from (Sec. 2.2): on the shipped tiny-world pool,
# the tool reasoner on t0 after GRPO answers more of the held-out arithmetic and word items than
# the cold-start adapter, in interleaved episodes with its code run in the sandbox. The untrained
# base t0 is reported beside them.
#
#   1. serve t0; expert trajectories from the train items (scripts/deeptool_tinyworld_tools.py
#      experts: one code step `print(<expression>)`, its real output, one answer step)
#   2. `allot eval --method tir` of the base t0 on the eval items (arithmetic and word)
#   3. `allot deeptool perturb --split sft` (MOSAIC, p = 0.1), `allot deeptool sft`, and
#      `allot sft` of a LoRA on t0 (configs/sft.yaml, scaled); t0 again, with that adapter
#   4. `allot deeptool perturb --split rl` (p = 0.2), `allot deeptool steps`: the RL instances;
#      two rollout workers, `allot train -c configs/quickstart/deeptool.yaml` from the adapter
#   5. `allot eval --method tir` with the cold-start adapter and the trained one
#
#   tests/scripts/tinyworld_deeptool_test.sh ALLOT_BINARY [--out DIR] [--train-items N]
#       [--eval-items N] [--sft-steps N] [--sft-lr X] [--lora-r N] [--steps N] [--set K=V]...
# (--set goes to allot train and to every allot eval.) Exit 0: passed; 77: skipped (no shipped t0 or no tiny-world
# data); anything else: failed. Label "results" (scripts/test.sh runs it only with
# ALLOT_RESULTS=1).
set -uo pipefail
allot=$(realpath "$1")
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
train_items=600
eval_items=100
sft_steps=600
sft_lr=2.0e-3
lora_r=32
steps=""
out=""
overrides=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --train-items) train_items=$2; shift 2 ;;
    --eval-items) eval_items=$2; shift 2 ;;
    --sft-steps) sft_steps=$2; shift 2 ;;
    --sft-lr) sft_lr=$2; shift 2 ;;
    --lora-r) lora_r=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --set) overrides+=(--set "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "tinyworld_deeptool_test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
cd "$root"
pool=assets/tinyworld/pool
if [[ ! -f $pool/t0/config.json ]]; then echo "SKIP: no shipped tier t0"; exit 77; fi
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
tools=scripts/deeptool_tinyworld_tools.py
recipe=configs/quickstart/deeptool.yaml
prompt=configs/prompts/tinyworld/deeptool/tir.txt
export ALLOT_TW_POOL=$(realpath "$pool")
say() { echo "==> [deeptool $(date +%H:%M:%S)] $*"; }
started=$(date +%s)
stage_start=$started
stage() {  # stage NAME: the seconds since the last stage, into $out/stages.txt
  local now
  now=$(date +%s)
  echo "$1 $((now - stage_start))" >> "$out/stages.txt"
  stage_start=$now
}
: > "$out/stages.txt"

# shellcheck source=tests/scripts/tinyworld_procs.sh
source "$root/tests/scripts/tinyworld_procs.sh"  # serve, restart, start_workers, fail

evaluate() {  # evaluate NAME [--adapter A]: interleaved episodes on the eval items
  local name=$1
  shift
  say "allot eval --method tir: $name"
  "$allot" eval "$out" -c "$recipe" --method tir "${overrides[@]}" "$@" --episodes "$eval_items" \
    --json "$out/eval/$name.json" \
    > "$out/logs/eval-$name.log" 2>&1 ||
    { tail -5 "$out/logs/eval-$name.log"; fail "allot eval --method tir ($name)"; }
  stage "eval-$name"
}

# --- 1. data: expert trajectories (arithmetic and word items; the facts need a search tool) --
python3 "$tools" experts "$data/train.jsonl" "$out/expert.jsonl" --limit "$train_items" ||
  fail "experts"
python3 "$tools" items "$data/test.jsonl" "$out/eval_items.jsonl" --limit "$eval_items" ||
  fail "eval items"
export ALLOT_QS_EVAL_DATA=$out/eval_items.jsonl
serve t0
say "t0 served: $ALLOT_TW_T0_URL"
stage data

# --- 2. the base model ---------------------------------------------------------------------
evaluate base

# --- 3. cold start: SFT on the expert steps (Sec. 2.2) ------------------------------------
"$allot" deeptool perturb --split sft --in "$out/expert.jsonl" --out "$out/expert_sft.jsonl" ||
  fail "allot deeptool perturb --split sft"
"$allot" deeptool sft --in "$out/expert_sft.jsonl" --out "$out/cold_sft.jsonl" \
  --prompt "$prompt" || fail "allot deeptool sft"
stage sft-data
say "allot sft: $sft_steps steps, LoRA r $lora_r, lr $sft_lr"
OMP_NUM_THREADS=1 "$allot" sft -c configs/sft.yaml --name cold --set "run.output_dir=$out" \
  --set "model.path=$ALLOT_TW_POOL/t0" --set model.dtype=float32 \
  --set "sft.data=$out/cold_sft.jsonl" --set sft.format=prompt_completion \
  --set sft.epochs=0 --set "trainer.total_steps=$sft_steps" --set sft.batch_size=8 \
  --set sft.max_seq_len=1024 --set "sft.optim.lr=$sft_lr" --set sft.optim.warmup_ratio=0.05 \
  --set "sft.lora.r=$lora_r" --set "sft.lora.lora_alpha=$((2 * lora_r))" \
  --set sft.lora.lora_dropout=0.0 \
  --set checkpoint.every=100000 --set logging.progress_bar=false \
  > "$out/logs/sft.log" 2>&1 || { tail -5 "$out/logs/sft.log"; fail "allot sft"; }
[[ -f $out/cold/adapter/adapter_config.json ]] || fail "no adapter in $out/cold/adapter"
stage sft

# t0 again, with the cold start's adapter loaded.
restart t0 --adapter "deeptool-cold=$out/cold/adapter"
evaluate cold --adapter deeptool-cold

# --- 4. process-supervised GRPO on step-wise instances (Sec. 2.3) --------------------------
"$allot" deeptool perturb --split rl --in "$out/expert.jsonl" --out "$out/expert_rl.jsonl" ||
  fail "allot deeptool perturb --split rl"
"$allot" deeptool steps --in "$out/expert_rl.jsonl" --out "$out/rl_steps.jsonl" ||
  fail "allot deeptool steps"
start_workers "$recipe"
stage rl-data
train_args=(train -c "$recipe" --set "run.output_dir=$out" --name train
  --set "grpo.lora.r=$lora_r" --set "grpo.lora.lora_alpha=$((2 * lora_r))" "${overrides[@]}")
[[ -n $steps ]] && train_args+=(--set "trainer.total_steps=$steps")
say "allot ${train_args[*]}"
ALLOT_DEEPTOOL_COLD_START=$out/cold/adapter ALLOT_DEEPTOOL_DATA=$out/rl_steps.jsonl \
  OMP_NUM_THREADS=1 "$allot" "${train_args[@]}" > "$out/logs/train.log" 2>&1 ||
  { tail -5 "$out/logs/train.log"; fail "allot train"; }
trained=$(python3 scripts/quickstart_tools.py latest-adapter "$ALLOT_TW_T0_URL" train) ||
  fail "no adapter published by the GRPO run"
stage grpo
python3 "$tools" curve "$out/train/metrics.jsonl" | tail -1

# --- 5. the cold start and the trained policy ----------------------------------------------
evaluate trained --adapter "$trained"
say "done in $(( $(date +%s) - started )) s (stages, s: $(tr '\n' ' ' < "$out/stages.txt"))"
python3 "$tools" check "$out/eval/base.json" "$out/eval/cold.json" "$out/eval/trained.json"
code=$?
[[ $code == 0 ]] && { echo "PASS"; exit 0; }
echo "FAIL: the GRPO-trained tool reasoner is not more accurate than its cold start"
exit 1
