#!/usr/bin/env bash
# The five paper recipes as shipped (configs/coger.yaml, r2.yaml, deeptool.yaml, rlot.yaml,
# atlas.yaml), end to end against the tiny world, two steps each. A user points a recipe at their
# own models and data and changes nothing else; so does this test: every --set below gives a
# model path, an endpoint URL, a data or output path, or a size (steps, batch and group sizes,
# token limits), plus model.device=cpu, the recipes' documented way to train on a CPU. A recipe
# that needs any other change to run is a bug.
#
#   1. Without its required keys each recipe fails `allot config validate` naming every one of
#      them, and nothing else; given them by --set, it validates.
#   2. The tiny world: `allot tinyworld generate` (small), and the shipped tiers served with
#      `allot serve` under the model names the recipes' endpoints use (router, medium, large,
#      the R2 pool's, ...). The copies raise the tiers' context from 1,024 positions to 8,192
#      (RoPE, no learned positions), so that the papers' prompts fit: the tiers never learned
#      those prompts, and this test asserts that the recipes run, not what they learn.
#   3. coger, r2, deeptool (its step instances from `allot deeptool perturb --split rl` and
#      `allot deeptool steps` over expert trajectories of the train items): `allot train`, two
#      GRPO steps each; rlot: the hard problems by `allot eval --keep-hard` (GSM8K lines of the
#      tool-free test items), then `allot train`, two DQN episodes; atlas: `allot eval --method
#      all` on two problems (ATLAS trains nothing).
#
#   tests/scripts/paper_recipes_test.sh ALLOT_BINARY [--keep DIR]
# Exit 0: passed; 77: skipped (no shipped tiers); anything else: failed. Label "integration".
set -uo pipefail
allot=$(realpath "$1")
shift
keep=""
[[ ${1:-} == --keep ]] && keep=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
# The recipes are read as a fresh shell reads them: none of their variables set.
while IFS= read -r var; do
  unset "$var"
done < <(env | sed -n 's/^\(\(ALLOT\|R2\)_[A-Z0-9_]*\)=.*/\1/p')
unset OPENAI_API_KEY DEEPSEEK_API_KEY DEEPSEEK_URL OPENAI_URL
for t in t0 t1 t2; do
  if [[ ! -f assets/tinyworld/pool/$t/config.json ]]; then
    echo "SKIP: no shipped tier assets/tinyworld/pool/$t"
    exit 77
  fi
done
if [[ -n $keep ]]; then
  mkdir -p "$keep"
  out=$(realpath "$keep")
  trap_rm=""
else
  out=$(mktemp -d)
  trap_rm=$out
fi
mkdir -p "$out/logs" "$out/pool" "$out/runs"
export ALLOT_TW_POOL=$out/pool
# shellcheck source=tests/scripts/tinyworld_procs.sh
source "$root/tests/scripts/tinyworld_procs.sh"  # serve, fail; stops every process at exit
started=$(date +%s)
timings=()
timed() {  # timed NAME: seconds since the last call, for the report
  local now
  now=$(date +%s)
  timings+=("$1 $((now - ${last:-$started}))s")
  last=$now
}

# --- 1. required keys --------------------------------------------------------------------------
urls() {  # urls N: endpoints[0..N-1].base_url
  local i
  for ((i = 0; i < $1; ++i)); do echo -n "endpoints[$i].base_url "; done
}
declare -A required=(
  [coger]="model.path $(urls 3)train_data.path"
  [r2]="model.path $(urls 8)train_data.path"
  [deeptool]="model.path $(urls 1)train_data.path"
  [rlot]="$(urls 2)train_data.path"
  [atlas]="$(urls 2)eval_data.path"
)
for r in coger r2 deeptool rlot atlas; do
  recipe=configs/$r.yaml
  if msg=$("$allot" config validate "$recipe" 2>&1); then
    fail "$recipe validated without its required keys"
  fi
  named=$(sed -n 's/^[^ ]*: \([^ ]*\): required, not set: .* (set [A-Z0-9_]* or --set .*$/\1/p' \
          <<< "$msg" | sort | tr '\n' ' ')
  want=$(tr ' ' '\n' <<< "${required[$r]}" | sort | tr '\n' ' ')
  [[ $named == "$want" ]] ||
    fail "$recipe: the error names [$named], expected [$want]:"$'\n'"$msg"
  [[ $(wc -l <<< "$msg") == $(wc -w <<< "${required[$r]}") ]] ||
    fail "$recipe: errors beyond the required keys:"$'\n'"$msg"
  sets=()
  for key in ${required[$r]}; do
    value=$out/given
    [[ $key == *base_url ]] && value=http://127.0.0.1:8000
    sets+=(--set "$key=$value")
  done
  "$allot" config validate "$recipe" "${sets[@]}" > "$out/logs/validate-$r.log" 2>&1 ||
    fail "$recipe with its required keys given by --set:"$'\n'"$(cat "$out/logs/validate-$r.log")"
  echo "ok   $recipe: requires ${required[$r]}"
done
timed validate

# --- 2. the tiny world -------------------------------------------------------------------------
data=$out/data
"$allot" tinyworld generate --out "$data" --train-per-bucket 4 --test-per-bucket 2 \
  --long-train 0 --long-test 0 > "$out/logs/generate.log" 2>&1 ||
  fail "allot tinyworld generate: $(tail -3 "$out/logs/generate.log")"
# Each served name is a copy of a tier: its weights and tokenizer, its config with 8,192
# positions.
declare -A tier_of=(
  [router]=t0 [medium]=t1 [large]=t2 [policy]=t0 [orchestrator]=t2 [solver]=t0
  [Qwen2.5-0.5B-Instruct]=t0 [Qwen2.5-1.5B-Instruct]=t0 [Qwen2.5-3B-Instruct]=t0
  [Qwen2.5-7B-Instruct]=t1 [Qwen2.5-14B-Instruct]=t1 [Qwen2.5-32B-Instruct]=t1
  [Qwen2.5-72B-Instruct]=t2 [deepseek-chat]=t2 [gpt-4o]=t2 [math-shepherd-mistral-7b-prm]=t0
)
for name in "${!tier_of[@]}"; do
  src=$root/assets/tinyworld/pool/${tier_of[$name]}
  mkdir -p "$out/pool/$name"
  ln -s "$src/model.safetensors" "$src/tokenizer.json" "$out/pool/$name/"
  python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
c["max_position_embeddings"] = 8192
json.dump(c, open(sys.argv[2], "w"), indent=2)' "$src/config.json" "$out/pool/$name/config.json" ||
    fail "config.json of $name"
done
for name in "${!tier_of[@]}"; do tw_serve_start "$allot" "$out/logs" "$name"; done
url() {  # url NAME: the URL of the server of NAME
  local v
  v=$(tw_url_var_name "$1")
  echo "${!v}"
}
for name in "${!tier_of[@]}"; do
  tw_serve_wait "$out/logs" "$name" || fail "allot serve for $name did not come up"
done
# The R2 pool's hosted models are served here too; allot serve asks for no key.
export DEEPSEEK_API_KEY=unused OPENAI_API_KEY=unused
timed serve

check_grpo() {  # check_grpo NAME: two steps, each trained on sampled tokens of its episodes
  python3 - "$out/runs/$1/metrics.jsonl" << 'PY' ||
import json, sys
steps = {}
for line in open(sys.argv[1]):
    j = json.loads(line)
    if "reward/mean" in j:
        steps[j["step"]] = j
assert sorted(steps) == [1, 2], f"steps logged: {sorted(steps)}"
for n, j in steps.items():
    assert j["episodes"] > j.get("episodes/failed", 0), f"step {n}: every episode failed"
    assert j["trained_tokens"] > 0, f"step {n}: no token trained"
PY
    fail "$1: $out/runs/$1/metrics.jsonl"$'\n'"$(tail -5 "$out/logs/$1.log")"
}
cpu=(--set model.device=cpu --set "run.output_dir=$out/runs")

# --- 3. CogER ----------------------------------------------------------------------------------
# G = 12 as shipped: 2 queries x 12 a step (the recipe's micro-batch, 24 episodes per pass, fits).
"$allot" train -c configs/coger.yaml "${cpu[@]}" \
  --set "model.path=$out/pool/router" \
  --set "endpoints[0].base_url=$(url router)" --set "endpoints[1].base_url=$(url medium)" \
  --set "endpoints[2].base_url=$(url large)" \
  --set "train_data.path=$data/train.jsonl" --set "env.coger.lmin.cache_path=$out/lmin.jsonl" \
  --set trainer.total_steps=2 --set grpo.prompts_per_step=2 --set grpo.grad_accum=1 \
  --set env.coger.router_max_tokens=24 \
  --set env.coger.limits.max_turn_tokens=24 \
  --set env.coger.cotool.selector_model.max_tokens=24 \
  > "$out/logs/coger.log" 2>&1 || fail "coger: allot train:"$'\n'"$(tail -15 "$out/logs/coger.log")"
check_grpo coger
timed coger

# --- 4. R2-Reasoner ----------------------------------------------------------------------------
# The cold start as the header gives it (Sec. 4.1-4.2): the roles' SFT data by `allot r2
# decomposer-data` and `allocator-data` (the tiny world's reference decompositions,
# scripts/r2_tinyworld_tools.py), one LoRA per role by `allot sft -c configs/sft.yaml`, two steps
# each; then the alternating GRPO from those adapters.
r2_sets=()
r2_models=(router Qwen2.5-0.5B-Instruct Qwen2.5-1.5B-Instruct Qwen2.5-3B-Instruct
           Qwen2.5-7B-Instruct Qwen2.5-14B-Instruct Qwen2.5-32B-Instruct Qwen2.5-72B-Instruct
           deepseek-chat gpt-4o)
for i in "${!r2_models[@]}"; do
  r2_sets+=(--set "endpoints[$i].base_url=$(url "${r2_models[$i]}")")
done
mkdir -p "$out/r2"
python3 scripts/r2_tinyworld_tools.py data test "$data/test.jsonl" "$data/train.jsonl" "$out/r2" 2 2 \
  > "$out/logs/r2-data.log" 2>&1 || fail "r2 data: $(tail -3 "$out/logs/r2-data.log")"
"$allot" r2 decomposer-data -c configs/r2.yaml -i "$out/r2/decomposer_in.jsonl" \
  -o "$out/r2/decomposer_sft.jsonl" > "$out/logs/r2-decomposer-data.log" 2>&1 ||
  fail "allot r2 decomposer-data: $(tail -3 "$out/logs/r2-decomposer-data.log")"
"$allot" r2 allocator-data -c configs/r2.yaml "${r2_sets[@]}" -i "$out/r2/allocator_in.jsonl" \
  -o "$out/r2/allocator_sft.jsonl" --baseline qwen2.5-7b --max-iterations 2 --skip-bad-lines \
  > "$out/logs/r2-allocator-data.log" 2>&1 ||
  fail "allot r2 allocator-data: $(tail -3 "$out/logs/r2-allocator-data.log")"
for role in decomposer allocator; do
  [[ -s $out/r2/${role}_sft.jsonl ]] || fail "r2: no $role SFT examples"
done
sft_sizes=(--set trainer.total_steps=2 --set sft.epochs=0 --set sft.batch_size=2)
"$allot" sft -c configs/sft.yaml --set "run.output_dir=$out/runs" \
  --set "model.path=$out/pool/router" --set "sft.data=$out/r2/decomposer_sft.jsonl" \
  "${sft_sizes[@]}" > "$out/logs/r2-sft-decomposer.log" 2>&1 ||
  fail "r2: allot sft (decomposer): $(tail -5 "$out/logs/r2-sft-decomposer.log")"
"$allot" sft -c configs/sft.yaml --set "run.output_dir=$out/runs" \
  --set "model.path=$out/pool/router" --set "sft.data=$out/r2/allocator_sft.jsonl" \
  --set run.name=sft-r2-allocator --set sft.lora.r=64 --set sft.optim.lr=3.0e-5 \
  "${sft_sizes[@]}" > "$out/logs/r2-sft-allocator.log" 2>&1 ||
  fail "r2: allot sft (allocator): $(tail -5 "$out/logs/r2-sft-allocator.log")"
"$allot" train -c configs/r2.yaml "${cpu[@]}" "${r2_sets[@]}" \
  --set "model.path=$out/pool/router" --set "train_data.path=$out/r2/train.jsonl" \
  --set "grpo.alternation.adapters[0].init_from=$out/runs/sft-r2-decomposer/adapter" \
  --set "grpo.alternation.adapters[1].init_from=$out/runs/sft-r2-allocator/adapter" \
  --set trainer.total_steps=2 --set grpo.group_size=2 \
  --set env.r2.decomposer_max_tokens=24 --set env.r2.allocator_max_tokens=24 \
  --set env.r2.subtask_max_tokens=24 --set env.r2.integrate_max_tokens=24 \
  --set env.r2.limits.max_turn_tokens=24 \
  > "$out/logs/r2.log" 2>&1 || fail "r2: allot train:"$'\n'"$(tail -15 "$out/logs/r2.log")"
check_grpo r2
timed r2

# --- 5. DeepTool -------------------------------------------------------------------------------
python3 scripts/deeptool_tinyworld_tools.py experts "$data/train.jsonl" "$out/expert.jsonl" \
  --limit 8 > "$out/logs/experts.log" 2>&1 ||
  fail "deeptool experts: $(tail -3 "$out/logs/experts.log")"
"$allot" deeptool perturb --split rl --in "$out/expert.jsonl" --out "$out/expert_rl.jsonl" \
  > "$out/logs/perturb.log" 2>&1 ||
  fail "allot deeptool perturb: $(tail -3 "$out/logs/perturb.log")"
"$allot" deeptool steps --in "$out/expert_rl.jsonl" --out "$out/rl_steps.jsonl" \
  > "$out/logs/steps.log" 2>&1 || fail "allot deeptool steps: $(tail -3 "$out/logs/steps.log")"
"$allot" train -c configs/deeptool.yaml "${cpu[@]}" \
  --set "model.path=$out/pool/policy" --set "endpoints[0].base_url=$(url policy)" \
  --set "train_data.path=$out/rl_steps.jsonl" \
  --set trainer.total_steps=2 --set grpo.group_size=2 --set grpo.prompts_per_step=2 \
  --set env.deeptool.step_max_tokens=24 \
  --set env.deeptool.max_prompt_tokens=4096 \
  > "$out/logs/deeptool.log" 2>&1 ||
  fail "deeptool: allot train:"$'\n'"$(tail -15 "$out/logs/deeptool.log")"
check_grpo deeptool
timed deeptool

# --- 6. RLoT -----------------------------------------------------------------------------------
# The tool-free test items as GSM8K lines (the recipe's preset): "<solution> #### <answer>".
python3 - "$data/test.jsonl" "$out/problems.jsonl" << 'PY' || fail "GSM8K problems"
import json, sys
items = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
items = [i for i in items if i.get("min_level", 1) <= 3][:12]
with open(sys.argv[2], "w") as f:
    for i in items:
        f.write(json.dumps({"question": i["question"],
                            "answer": f'{i.get("solution", "")} #### {i["answer"]}'}) + "\n")
PY
rlot_sets=(--set "endpoints[0].base_url=$(url Qwen2.5-14B-Instruct)"
           --set "endpoints[1].base_url=$(url math-shepherd-mistral-7b-prm)")
"$allot" eval hard -c configs/rlot.yaml --output-dir "$out/runs" "${rlot_sets[@]}" \
  --set "train_data.path=$out/problems.jsonl" --set "eval_data.path=$out/problems.jsonl" \
  --keep-hard "$out/hard.jsonl" > "$out/logs/rlot-hard.log" 2>&1 ||
  fail "rlot: allot eval --keep-hard:"$'\n'"$(tail -10 "$out/logs/rlot-hard.log")"
[[ -s $out/hard.jsonl ]] || fail "rlot: no hard problem: $(cat "$out/logs/rlot-hard.log")"
"$allot" train -c configs/rlot.yaml --set "run.output_dir=$out/runs" "${rlot_sets[@]}" \
  --set "train_data.path=$out/hard.jsonl" --set trainer.total_steps=2 \
  > "$out/logs/rlot.log" 2>&1 || fail "rlot: allot train:"$'\n'"$(tail -15 "$out/logs/rlot.log")"
episodes=$(grep -c '"step"' "$out/runs/rlot/metrics.jsonl" 2> /dev/null)
[[ ${episodes:-0} -ge 2 ]] || fail "rlot: $episodes episodes in $out/runs/rlot/metrics.jsonl"
timed rlot

# --- 7. ATLAS ----------------------------------------------------------------------------------
"$allot" eval atlas -c configs/atlas.yaml --output-dir "$out/runs" --method all --episodes 2 \
  --set "endpoints[0].base_url=$(url orchestrator)" --set "endpoints[1].base_url=$(url solver)" \
  --set "eval_data.path=$data/test.jsonl" \
  --set env.atlas.orchestrator_max_tokens=24 --set env.atlas.integrator_max_tokens=24 \
  --set "env.atlas.effort_tokens={low: 16, medium: 24, high: 32}" \
  --set env.atlas.limits.max_turn_tokens=32 --json "$out/atlas.json" \
  > "$out/logs/atlas.log" 2>&1 || fail "atlas: allot eval:"$'\n'"$(tail -15 "$out/logs/atlas.log")"
python3 - "$out/atlas.json" << 'PY' || fail "atlas: $(cat "$out/atlas.json")"
import json, sys
report = json.load(open(sys.argv[1]))
text = json.dumps(report)
assert "orchestrator" in text and "integrator" in text, "both methods reported"
PY
timed atlas

echo "PASS: the five paper recipes ran as shipped" \
  "(${timings[*]}; total $(( $(date +%s) - started ))s)"
