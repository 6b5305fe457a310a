#!/usr/bin/env bash
# The whole GRPO loop on one GPU, allot against its Python equivalent: sample, score, update,
# publish, sample again.
#
#   bench/gpu/grpo_loop_gpu.sh BUILD OUT     (BUILD: a -DALLOT_WITH_CUDA=ON build with the allot
#                                             and allot_grpo_loop_bench targets built)
#   CASES="qwen3-0.6b qwen3-4b" STEPS=3 WARMUP=1 PROMPTS=4 GROUP=8 MAX_TOKENS=1024
#   WARMUP_MAX_TOKENS=64 PROMPT_LEN=256 MICRO_BATCH=8 DEVICE=cuda DTYPE=bfloat16
#
# Per case (a random model of that shape):
# 1. bench/gpu/hf_generate.py --write --shape CASE writes it (bf16, Hugging Face format), and
#    allot_grpo_loop_bench --write-tokenizer gives it a byte-level tokenizer.json.
# 2. allot: `allot serve` on the GPU is the policy endpoint (a process of its own, bf16, every
#    episode of a step decoded together), and allot_grpo_loop_bench is the learner on the same
#    GPU (GrpoTrainer, LoRA r 16, in-process rollout workers running the tag env's rule reward):
#    each step samples PROMPTS x GROUP episodes of up to MAX_TOKENS tokens, updates, publishes
#    the adapter to the server and proves it served.
# 3. Python: bench/gpu/grpo_loop_hf.py runs the same steps in one process as TRL does without
#    vLLM (transformers' generate from the PEFT model, the same reward and loss).
# Both take STEPS steps of which the first WARMUP (with WARMUP_MAX_TOKENS tokens) are not timed.
# nvidia-smi samples each process's GPU memory every second (the peak is reported per process).
# Output: OUT/<case>_{allot,hf}.json, the logs, OUT/grpo_loop.json and a table on stdout: the
# medians of episodes/s, generated tokens/s, update tokens/s (trained completion tokens over
# the update's own time) and the step's split, and the ratio allot / Python. A failed stage is
# reported and the next one runs; the exit status is non-zero if anything failed. Stage limits:
# WRITE_S (60), ALLOT_S (240), HF_S (300) seconds. MODEL_FROM=DIR copies DIR instead of writing a
# model (with DEVICE=cpu DTYPE=float32: a check of the script's plumbing without a GPU).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:?usage: grpo_loop_gpu.sh BUILD OUT}"
OUT="${2:?usage: grpo_loop_gpu.sh BUILD OUT}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
[[ "$OUT" = /* ]] || OUT="$(pwd)/$OUT"
PY="${PYTHON:-python3}"
CASES="${CASES:-qwen3-0.6b qwen3-4b}"
STEPS="${STEPS:-3}"
WARMUP="${WARMUP:-1}"
PROMPTS="${PROMPTS:-4}"
GROUP="${GROUP:-8}"
MAX_TOKENS="${MAX_TOKENS:-1024}"
WARMUP_MAX_TOKENS="${WARMUP_MAX_TOKENS:-64}"
PROMPT_LEN="${PROMPT_LEN:-256}"
MICRO_BATCH="${MICRO_BATCH:-8}"
DEVICE="${DEVICE:-cuda}"
DTYPE="${DTYPE:-bfloat16}"
WRITE_S="${WRITE_S:-60}"
ALLOT_S="${ALLOT_S:-240}"
HF_S="${HF_S:-300}"
PORT="${PORT:-18765}"
BENCH="$BUILD/bench/gpu/allot_grpo_loop_bench"
ALLOT="$BUILD/apps/allot"
RUN=("$ROOT/scripts/gpu/with_env.sh" "$BUILD")
[[ -f "$BUILD/env.sh" ]] || RUN=()  # a CPU build: its programs need no environment
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
mkdir -p "$OUT"
TMP="$(mktemp -d)"
SERVE_PID="" SMI_PID=""
cleanup() {
  [[ -n "$SERVE_PID" ]] && kill "$SERVE_PID" 2>/dev/null
  [[ -n "$SMI_PID" ]] && kill "$SMI_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
status=0
stage() { echo "== $* ($(date +%T))" >&2; }
common=(--steps "$STEPS" --warmup "$WARMUP" --prompts-per-step "$PROMPTS" --group "$GROUP"
  --prompt-len "$PROMPT_LEN" --max-tokens "$MAX_TOKENS" --warmup-max-tokens "$WARMUP_MAX_TOKENS"
  --micro-batch "$MICRO_BATCH")

# smi_start FILE / smi_stop: every second, each compute process's name and used GPU MiB (in
# FILE) and the whole GPU's used MiB (in FILE.total).
smi_start() {
  if command -v nvidia-smi >/dev/null; then
    (nvidia-smi --query-compute-apps=process_name,used_memory --format=csv,noheader,nounits \
      -l 1 >"$1" 2>/dev/null &
      nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -l 1 >"$1.total" \
        2>/dev/null &
      wait) &
    SMI_PID=$!
  fi
}
smi_stop() {
  [[ -n "$SMI_PID" ]] && pkill -P "$SMI_PID" 2>/dev/null
  wait "$SMI_PID" 2>/dev/null
  SMI_PID=""
}
# peak_mib FILE NAME: the most GPU memory a process whose executable's name is NAME held in
# FILE's samples; NAME "total": the whole GPU's (empty: never seen).
peak_mib() {
  if [[ "$2" == total ]]; then
    awk '$1 + 0 > m { m = $1 + 0 } END { if (m) print m }' "$1.total" 2>/dev/null
  else
    awk -F', *' -v name="$2" '{ n = $1; sub(/.*\//, "", n) }
      n == name && $2 + 0 > m { m = $2 + 0 } END { if (m) print m }' "$1" 2>/dev/null
  fi
}
# mem_json FILE NAME...: {"NAME": peak MiB or null, ...} with "total" among the names.
mem_json() {
  local file=$1 sep="" name v
  shift
  printf '{'
  for name in "$@"; do
    v=$(peak_mib "$file" "$name")
    printf '%s"%s": %s' "$sep" "$name" "${v:-null}"
    sep=", "
  done
  printf '}\n'
}

# table CASE...: the table of the cases run so far, on stdout and in OUT/grpo_loop.json (after
# each case, so that a case cut short by the time limit keeps the ones before it).
table() {
  "$PY" - "$OUT" "$@" <<'PYEOF'
import json, sys
out, cases = sys.argv[1], sys.argv[2:]

def load(name):
    try:
        with open(f"{out}/{name}") as f:
            return json.loads(f.read() or "{}")
    except (OSError, ValueError):
        return {}

keys = ["episodes_per_s", "generated_tokens_per_s", "update_tokens_per_s", "step_s"]
rows = []
for case in cases:
    a, h = load(f"{case}_allot.json"), load(f"{case}_hf.json")
    am, hm = a.get("median", {}), h.get("median", {})
    row = {"case": case, "allot": am, "hf": hm,
           "allot_error": a.get("error"), "hf_error": h.get("error"),
           "memory_mib": {"allot": load(f"{case}_allot_mem.json"),
                          "hf": load(f"{case}_hf_mem.json")},
           "hf_torch_peak_gib": h.get("gpu_peak_gib"),
           "allot_delivery": [{k: v for k, v in s.items() if k.startswith("delivery/")}
                              for s in a.get("per_step", [])]}
    for k in keys:
        if am.get(k) and hm.get(k):
            row[f"ratio/{k}"] = am[k] / hm[k] if k != "step_s" else hm[k] / am[k]
    rows.append(row)
    fmt = lambda v: f"{v:,.1f}" if isinstance(v, (int, float)) else "-"
    print(f"{case}: allot / transformers+PEFT (median of timed steps)")
    for k in keys:
        print(f"  {k:24s} {fmt(am.get(k)):>12} {fmt(hm.get(k)):>12}   "
              f"ratio {fmt(row.get('ratio/' + k))}")
    print("  allot step split: " + ", ".join(f"{k[6:]} {100 * v:.0f}%"
                                             for k, v in sorted(am.items())
                                             if k.startswith("share/")))
    print("  transformers step split: " + ", ".join(f"{k[6:]} {100 * v:.0f}%"
                                                    for k, v in sorted(hm.items())
                                                    if k.startswith("share/")))
    print(f"  GPU memory (MiB, nvidia-smi peak): {row['memory_mib']}")
with open(f"{out}/grpo_loop.json", "w") as f:
    json.dump(rows, f, indent=1)
print(json.dumps({"bench": "grpo_loop", "rows": rows}), flush=True)
PYEOF
}

done_cases=()
for case in $CASES; do
  model="$TMP/$case"
  stage "$case: writing the model"
  if [[ -n "${MODEL_FROM:-}" ]]; then
    cp -r "$MODEL_FROM" "$model"
  else
    timeout "$WRITE_S" "$PY" "$ROOT/bench/gpu/hf_generate.py" --write "$model" --shape "$case" \
      >"$OUT/${case}_write.jsonl"
  fi
  if [[ ! -f "$model/config.json" ]] ||
    ! "${RUN[@]}" "$BENCH" --write-tokenizer "$model"; then
    echo "grpo_loop_gpu: could not write the $case model" >&2
    status=1
    continue
  fi

  stage "$case: allot serve + allot learner"
  "${RUN[@]}" "$ALLOT" serve --model "$model" --served-model-name "$case" --port "$PORT" \
    --device "$DEVICE" --dtype "$DTYPE" --max-batch $((PROMPTS * GROUP)) \
    >"$OUT/${case}_serve.log" 2>&1 &
  SERVE_PID=$!
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break
    kill -0 "$SERVE_PID" 2>/dev/null || break
    sleep 0.5
  done
  smi_start "$OUT/${case}_allot_smi.csv"
  timeout "$ALLOT_S" "${RUN[@]}" "$BENCH" --model-dir "$model" \
    --url "http://127.0.0.1:$PORT" --served-name "$case" --run-dir "$TMP/run-$case" \
    --device "$DEVICE" --dtype "$DTYPE" "${common[@]}" \
    >"$OUT/${case}_allot.txt" 2>"$OUT/${case}_allot.stderr" &
  wait $! || status=1
  smi_stop
  kill "$SERVE_PID" 2>/dev/null
  wait "$SERVE_PID" 2>/dev/null
  SERVE_PID=""
  grep '^{"bench"' "$OUT/${case}_allot.txt" | tail -n1 >"$OUT/${case}_allot.json"
  # The learner's own per-step metrics, also when it was cut short.
  cp "$TMP/run-$case/metrics.jsonl" "$OUT/${case}_allot_metrics.jsonl" 2>/dev/null
  # allot: the server; allot_grpo_loop_bench: the learner; total: the whole GPU.
  mem_json "$OUT/${case}_allot_smi.csv" allot allot_grpo_loop_bench total \
    >"$OUT/${case}_allot_mem.json"
  tail -n 3 "$OUT/${case}_allot.stderr" >&2

  stage "$case: transformers + PEFT"
  smi_start "$OUT/${case}_hf_smi.csv"
  timeout "$HF_S" "$PY" "$ROOT/bench/gpu/grpo_loop_hf.py" --model-dir "$model" --device "$DEVICE" \
    "${common[@]}" >"$OUT/${case}_hf.txt" 2>"$OUT/${case}_hf.stderr" &
  wait $! || status=1
  smi_stop
  grep '^{"bench"' "$OUT/${case}_hf.txt" | tail -n1 >"$OUT/${case}_hf.json"
  mem_json "$OUT/${case}_hf_smi.csv" python3 total >"$OUT/${case}_hf_mem.json"
  tail -n 3 "$OUT/${case}_hf.stderr" >&2
  rm -rf "$model" "$TMP/run-$case"
  done_cases+=("$case")
  stage "table"
  table "${done_cases[@]}" || status=1
done

exit "$status"
