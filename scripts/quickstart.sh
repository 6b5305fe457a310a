#!/usr/bin/env bash
# The quickstart: sets up (dependencies and build), makes the tiny world's data and trains the
# CogER router (configs/quickstart/coger.yaml) with GRPO + LoRA: `allot train`, which serves every
# tier of the tiny model pool and starts two rollout workers itself, then `allot eval` of the run,
# which prints the before/after table (the fixed levels L1..L4, random routing, the untrained and
# the trained router on a test subset); the two plot into the run directory (train/curves.png,
# eval/cost_accuracy.png). Every process is stopped on exit, on failure and on Ctrl-C.
#
# Usage: scripts/quickstart.sh [options]
#   --recipe NAME|FILE  configs/quickstart/NAME.yaml or a recipe file (default: coger); a CogER
#                       recipe (env coger) gets the before/after table, an RLoT recipe (env
#                       rlot) the table of direct, zero-shot CoT and eight fixed block sequences
#                       (and the navigator's three commonest patterns run as fixed sequences)
#                       against the trained navigator on the tool-free eval items
#                       (ALLOT_QS_RLOT_TRAILS trails each, default 1), any other is trained
#                       (allot train) against the same servers, an ATLAS recipe (env atlas,
#                       nothing to train) is evaluated (allot eval --method all) on the eval
#                       subset; r2 runs R2-Reasoner's whole pipeline (the cold start of the
#                       decomposer and allocator, alternating GRPO, evaluation against each
#                       tier alone) through tests/scripts/tinyworld_r2_test.sh into <run>/r2;
#                       deeptool runs DeepTool's whole pipeline (expert trajectories, the SFT
#                       cold start, step-wise GRPO, evaluation of base, cold start and trained
#                       t0) through tests/scripts/tinyworld_deeptool_test.sh into <run>/deeptool
#   --no-setup          skip scripts/setup.sh (dependencies and the build of `allot` alone)
#   --steps N           override trainer.total_steps
#   --eval-items N      test items per evaluation (default 96, spread over every difficulty)
#   --pool DIR          the tiers, one model directory each (default assets/tinyworld/pool)
#   --out DIR           run directory (default runs/quickstart-<time>)
#   --set KEY=VALUE     passed to allot train and to every allot eval (repeatable)
set -euo pipefail
cd "$(dirname "$0")/.."

recipe=coger
setup=1
steps=""
eval_items=96
pool=${ALLOT_TW_POOL:-assets/tinyworld/pool}
run_dir=""
overrides=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --recipe) recipe=$2; shift 2 ;;
    --no-setup) setup=0; shift ;;
    --steps) steps=$2; shift 2 ;;
    --eval-items) eval_items=$2; shift 2 ;;
    --pool) pool=$2; shift 2 ;;
    --out) run_dir=$2; shift 2 ;;
    --set) overrides+=(--set "$2"); shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 0 ;;
    *) echo "quickstart.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -f $recipe ]]; then
  recipe_file=$recipe
  recipe=$(basename "$recipe" .yaml)
else
  recipe_file=configs/quickstart/$recipe.yaml
fi
if [[ ! -f $recipe_file ]]; then
  echo "quickstart.sh: no recipe $recipe_file (have: $(ls configs/quickstart | tr '\n' ' '))" >&2
  exit 2
fi

# Only the allot binary is built here (the tests and benchmarks are half the build);
# scripts/test.sh builds the rest.
if [[ $setup == 1 ]]; then ALLOT_BUILD_TARGETS=${ALLOT_BUILD_TARGETS-allot} bash scripts/setup.sh; fi
ALLOT=${ALLOT:-${ALLOT_BUILD_DIR:-build}/apps/allot}
[[ -x $ALLOT ]] || { echo "quickstart.sh: $ALLOT not found (run scripts/setup.sh)" >&2; exit 1; }
ALLOT=$(realpath "$ALLOT")
tools=scripts/quickstart_tools.py

run_dir=${run_dir:-runs/quickstart-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$run_dir/logs" "$run_dir/eval"
run_dir=$(realpath "$run_dir")
logs=$run_dir/logs
export ALLOT_QS_RUN_DIR=$run_dir
say() { echo "==> [quickstart $(date +%H:%M:%S)] $*"; }
started=$(date +%s)

# --- cleanup: every process started here is stopped on exit, failure, Ctrl-C or TERM ---------
pids=()
source scripts/tinyworld_procs.sh  # tw_serve_start, tw_serve_wait, tw_start_workers (add to pids)
cleanup() {
  local code=$?
  trap - EXIT INT TERM
  if [[ ${#pids[@]} -gt 0 ]]; then
    kill -TERM "${pids[@]}" 2> /dev/null || true
    for _ in $(seq 150); do
      local alive=0
      for p in "${pids[@]}"; do kill -0 "$p" 2> /dev/null && alive=1; done
      [[ $alive == 0 ]] && break
      sleep 0.1
    done
    kill -KILL "${pids[@]}" 2> /dev/null || true
    wait 2> /dev/null || true
    echo "==> [quickstart] stopped ${#pids[@]} processes (logs: $logs)" >&2
  fi
  exit "$code"
}
trap cleanup EXIT
trap 'echo "==> [quickstart] interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

# Runs a command in the background, recorded for cleanup, and waits for it: a trapped signal
# interrupts `wait` at once (a foreground child would delay the trap until it exits).
run() {
  "$@" &
  local pid=$!
  pids+=("$pid")
  wait "$pid"
}

# --- data --------------------------------------------------------------------------------
data=${ALLOT_TINYWORLD_DIR:-runs/tinyworld/data}
# Regenerated only when it differs from the manifest: rewriting the corpus would make every
# process that opens the knowledge base at once re-stamp its search index.
if python3 "$tools" data-ok "$data" configs/tinyworld/manifest.json; then
  say "tiny world data: $data (matches configs/tinyworld/manifest.json)"
else
  say "tiny world data -> $data"
  ALLOT=$ALLOT ALLOT_TINYWORLD_DIR=$data bash scripts/make_tiny_world.sh > "$logs/data.log" 2>&1 ||
    { tail -5 "$logs/data.log" >&2; exit 1; }
fi
export ALLOT_TINYWORLD_DIR=$(realpath "$data")
python3 "$tools" split-data "$ALLOT_TINYWORLD_DIR/test.jsonl" "$ALLOT_TINYWORLD_DIR/train.jsonl" \
  "$run_dir" "$eval_items" 0
export ALLOT_QS_TRAIN_DATA=$run_dir/train.jsonl ALLOT_QS_EVAL_DATA=$run_dir/eval.jsonl
env_name=$("$ALLOT" config print "$recipe_file" 2> /dev/null |
           sed -n '/^env:/,/^[^ ]/s/^  name: *\([a-z0-9_]*\).*/\1/p' | head -1 || true)
if [[ $env_name == atlas && ( -n $steps || ${#overrides[@]} -gt 0 ) ]]; then
  echo "quickstart.sh: $recipe_file is an evaluation (env atlas): --steps and --set do not apply" >&2
  exit 2
fi
if [[ $env_name == r2 ]]; then
  # The tiers learned no R2 turn: the decomposer and allocator need their cold start (allot r2
  # decomposer-data | allocator-data, allot sft of a LoRA on t0) before the alternating GRPO.
  # The result test runs that pipeline with its own servers and workers; its exit 3 is a
  # finished run whose allocator missed the result (the table shows it).
  r2_args=(--out "$run_dir/r2" --eval-items "$eval_items" "${overrides[@]}")
  [[ -n $steps ]] && r2_args+=(--steps "$steps")
  say "R2-Reasoner: tests/scripts/tinyworld_r2_test.sh ${r2_args[*]}"
  code=0
  run bash tests/scripts/tinyworld_r2_test.sh "$ALLOT" "${r2_args[@]}" || code=$?
  [[ $code == 0 || $code == 3 ]] || exit "$code"
  say "done in $(( $(date +%s) - started )) s: $run_dir/r2"
  exit 0
fi
if [[ $env_name == rlot ]]; then  # the logic blocks call no tool (quickstart_tools.py)
  python3 "$tools" keep-tool-free "$ALLOT_QS_TRAIN_DATA" "$run_dir"/eval.jsonl "$run_dir"/eval-*.jsonl
  # The long sums (6-8 easy steps: more than five blocks reason through one at a time) join
  # both, about as many in the eval subset as each other difficulty has.
  python3 "$tools" add-items "$ALLOT_TINYWORLD_DIR/long_test.jsonl" \
    "$ALLOT_TINYWORLD_DIR/long_train.jsonl" "$run_dir" $(( eval_items / 7 )) 0
fi
if [[ $env_name == deeptool ]]; then
  # The tiers never saw DeepTool's think / code / observation steps: GRPO needs the cold start
  # first (expert trajectories, allot deeptool sft, allot sft of a LoRA on t0) and step-wise
  # instances as its data. The result test runs that pipeline with its own server and workers.
  dt_args=(--out "$run_dir/deeptool" --eval-items "$eval_items" "${overrides[@]}")
  [[ -n $steps ]] && dt_args+=(--steps "$steps")
  say "DeepTool: tests/scripts/tinyworld_deeptool_test.sh ${dt_args[*]}"
  run bash tests/scripts/tinyworld_deeptool_test.sh "$ALLOT" "${dt_args[@]}"
  say "done in $(( $(date +%s) - started )) s: $run_dir/deeptool"
  exit 0
fi

if [[ $env_name == coger ]]; then
  # --- CogER: `allot train` and `allot eval` start the recipe's servers and workers ----------
  export ALLOT_TW_POOL=$(realpath "$pool")
  train_args=(train -c "$recipe_file" --set "run.output_dir=$run_dir" --name train "${overrides[@]}")
  [[ -n $steps ]] && train_args+=(--set "trainer.total_steps=$steps")
  say "training the router: allot ${train_args[*]}"
  run "$ALLOT" "${train_args[@]}"
  say "before/after table on $eval_items test items: allot eval $run_dir/train"
  run "$ALLOT" eval "$run_dir/train" --episodes "$eval_items" --json "$run_dir/eval/table.json" \
    > "$run_dir/table.txt"
  echo
  cat "$run_dir/table.txt"
  # The plots (core/run_plots.h): `allot train` drew the training curves, `allot eval` the
  # cost-accuracy plane next to its table (each with its .gp script and .dat data).
  for png in "$run_dir/train/curves.png" "$run_dir/eval/cost_accuracy.png"; do
    [[ -f $png ]] && echo "plot: $png"
  done
  command -v gnuplot > /dev/null || echo "gnuplot not installed: no plots (the .dat files hold the data)"
  say "done in $(( $(date +%s) - started )) s (set-up excluded): $run_dir"
  exit 0
fi

if [[ $env_name == atlas ]]; then
  # ATLAS trains nothing: the orchestrator and the integrator ablation on the eval subset;
  # `allot eval` serves the recipe's tiers itself.
  export ALLOT_TW_POOL=$(realpath "$pool")
  eval_args=(eval "$run_dir" -c "$recipe_file" --method all --json "$run_dir/eval/atlas.json")
  say "allot ${eval_args[*]} ($eval_items test items)"
  run "$ALLOT" "${eval_args[@]}"
  say "done in $(( $(date +%s) - started )) s: $run_dir/eval/atlas.json"
  exit 0
fi

# --- servers: one `allot serve` per tier, on free ports ------------------------------------
needs_llm=1
[[ $recipe == chain ]] && needs_llm=0
if [[ $needs_llm == 1 ]]; then
  [[ -d $pool ]] || { echo "quickstart.sh: no model pool in $pool (see --pool)" >&2; exit 1; }
  export ALLOT_TW_POOL=$(realpath "$pool")
  tiers=()
  for dir in "$ALLOT_TW_POOL"/*/; do
    [[ -f $dir/config.json ]] && tiers+=("$(basename "$dir")")
  done
  [[ ${#tiers[@]} -gt 0 ]] || { echo "quickstart.sh: no tier directories in $pool" >&2; exit 1; }
  say "serving ${#tiers[@]} tiers: ${tiers[*]}"
  for t in "${tiers[@]}"; do tw_serve_start "$ALLOT" "$logs" "$t"; done  # all load at once
  for t in "${tiers[@]}"; do
    tw_serve_wait "$logs" "$t" || { echo "quickstart.sh: tier $t did not come up" >&2; exit 1; }
    echo "    $t: ${!tw_url_var} ($tw_url_var)"
  done
fi
if [[ $needs_llm == 1 ]]; then
  tw_start_workers "$ALLOT" "$logs" "$recipe_file" ||
    { echo "quickstart.sh: the rollout workers did not start" >&2; exit 1; }
  say "rollout workers: $ALLOT_QS_WORKER_A $ALLOT_QS_WORKER_B"
fi

"$ALLOT" config validate "$recipe_file" > /dev/null
# The learner serves its adapters as <run name>-v<N> (here train-v1, train-v2, ...).
train_name=train
train_args=(train -c "$recipe_file" --set "run.output_dir=$run_dir" --name "$train_name" "${overrides[@]}")
[[ -n $steps ]] && train_args+=(--set "trainer.total_steps=$steps")

# One `allot eval` per method and shard of the eval subset (eval-<k>.jsonl from split-data),
# all at once, so that the servers batch their requests together; each gets the run's --set
# overrides (an override of the env changes what every method is measured against); each writes
# eval/PHASE-METHOD-SHARD.json. eval_methods PHASE EVAL_DIR METHOD... (more eval arguments in
# the array eval_extra).
eval_extra=()
eval_methods() {
  local phase=$1 dir=$2 m name shard
  shift 2
  local eval_pids=()
  for m in "$@"; do
    name=${m//:/_}
    for shard in "$run_dir"/eval-*.jsonl; do
      shard=$(basename "$shard" .jsonl)
      ALLOT_QS_EVAL_DATA=$run_dir/$shard.jsonl "$ALLOT" eval "$dir" -c "$recipe_file" \
        --method "$m" "${overrides[@]}" "${eval_extra[@]}" --json "$run_dir/eval/$phase-$name-$shard.json" \
        > "$logs/eval-$phase-$name-$shard.log" 2>&1 &
      pids+=($!)
      eval_pids+=($!)
    done
  done
  for p in "${eval_pids[@]}"; do
    wait "$p" || { echo "quickstart.sh: allot eval failed; see $logs/eval-$phase-*.log" >&2;
                   exit 1; }
  done
}
if [[ $env_name == rlot ]]; then
  # --- RLoT: the baselines, training, the trained navigator --------------------------------
  # RLoT Sec. 4.1 and App. G: direct answering, zero-shot CoT, and fixed block sequences (every
  # single block, the plausible pairs, the paper's Decompose-Reason-Refine) against the
  # navigator, each with the same trails per problem (ALLOT_QS_RLOT_TRAILS, default 1: minutes
  # on two shared cores; RLoT Table 21 votes 3). One `allot eval` per method and shard, four
  # methods at a time, so that the server batches their requests.
  rlot_eval() {  # rlot_eval PHASE METHOD...
    local phase=$1 m batch=()
    shift
    eval_extra=(--trails "$rlot_trails")
    for m in "$@"; do
      batch+=("$m")
      if [[ ${#batch[@]} == 4 || $m == "${!#}" ]]; then
        eval_methods "$phase" "$run_dir/train" "${batch[@]}"
        batch=()
      fi
    done
  }
  rlot_trails=${ALLOT_QS_RLOT_TRAILS:-1}
  # Reason-Reason-Reason: the strongest single sequence measured on this subset (0.429), whatever
  # the navigator learns.
  baselines=(direct fixed:reason fixed:decompose fixed:debate fixed:reason-reason
             fixed:reason-reason-reason fixed:reason-refine fixed:debate-reason
             fixed:decompose-reason-refine)
  prompts_dir=$("$ALLOT" config print "$recipe_file" 2> /dev/null |
                sed -n 's/^ *prompts_dir: *//p' | head -1 || true)
  [[ -n $prompts_dir && $prompts_dir != /* ]] && prompts_dir=$(dirname "$recipe_file")/$prompts_dir
  if [[ -f $prompts_dir/zero_shot_cot.txt ]]; then baselines+=(cot); fi
  t0=$(date +%s)
  say "before training: ${baselines[*]} on $(wc -l < "$run_dir/eval.jsonl") tool-free test" \
      "items x $rlot_trails trails"
  rlot_eval before "${baselines[@]}"
  say "baselines evaluated in $(( $(date +%s) - t0 )) s"
  say "training the navigator: allot ${train_args[*]}"
  t0=$(date +%s)
  run "$ALLOT" "${train_args[@]}"
  python3 "$tools" train-summary "$run_dir/train/metrics.jsonl" || true
  say "trained in $(( $(date +%s) - t0 )) s; after training: the navigator"
  rlot_eval after navigator
  # The navigator's commonest block patterns join the fixed sequences: a navigator that learned
  # one fixed sequence must tie it, not beat a list that happens to lack it.
  mapfile -t own < <(python3 "$tools" rlot-own-sequences 3 "$run_dir"/eval/after-*.json -- \
                     "$run_dir"/eval/before-*.json)
  if [[ ${#own[@]} -gt 0 ]]; then
    say "the navigator's commonest block patterns as fixed sequences: ${own[*]}"
    rlot_eval before "${own[@]}"
  fi
  echo
  python3 "$tools" rlot-table "$run_dir" "$run_dir"/eval/before-*.json -- \
    "$run_dir"/eval/after-*.json
  echo "(accuracy: self-consistent over $rlot_trails trail(s) per problem, RLoT Sec. 4.1;" \
       "tokens and cost per problem over every trail, at the pool's prices)"
  say "done in $(( $(date +%s) - started )) s (set-up excluded): $run_dir"
  exit 0
fi
say "allot ${train_args[*]}"
run "$ALLOT" "${train_args[@]}"
if [[ -f $run_dir/train/metrics.jsonl ]]; then
  python3 "$tools" train-summary "$run_dir/train/metrics.jsonl" || true
fi
say "done in $(( $(date +%s) - started )) s: $run_dir/train"
