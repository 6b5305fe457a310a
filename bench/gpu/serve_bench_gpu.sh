#!/usr/bin/env bash
# `allot serve` decode throughput on a GPU against transformers' generate, same model, same
# batch sizes: decode tokens/s at 1, 32 and 256 concurrent requests.
#
#   bench/gpu/serve_bench_gpu.sh BUILD OUT      (BUILD: a -DALLOT_WITH_CUDA=ON build with the
#                                                allot_serve_bench target built)
#
# 1. bench/gpu/hf_generate.py --write: a random Qwen2-0.5B-shaped model (bf16, Hugging Face
#    format) in a temp directory, removed at exit (MODEL_DIR=DIR keeps it there instead).
# 2. allot_serve_bench on it: cuda, bfloat16, N = 1, 32, 256 concurrent HTTP clients with one
#    request each, 128 prompt ids, 128 new tokens (ignore_eos), greedy.
# 3. hf_generate.py --bench: model.generate at batch 1, 32, 256, same lengths, greedy, sdpa.
# 4. A table of tokens/s per batch size and the ratio allot / transformers.
#
# Like for like: allot's figure is end to end through HTTP and JSON, with requests joining the
# running batch as they arrive (continuous batching); transformers' is one generate call on a
# ready batch. Both are bf16 on the same GPU in the same run; neither uses CUDA graphs or
# torch.compile. Output: OUT/*.jsonl (one JSON object per line) and OUT/serve_vs_hf.json.
# Each stage runs even when an earlier one failed; the exit status is non-zero if any failed.
# DEVICE=cpu (default cuda) and DTYPE run allot's side elsewhere, to check the script. Each
# stage has a time limit (WRITE_S, ALLOT_S, HF_S: 40 + 50 + 50 s, inside scripts/gpu/check.sh's
# 150 s for this stage); expected on an H100 about 15 + 15 + 25 s.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:?usage: serve_bench_gpu.sh BUILD OUT}"
OUT="${2:?usage: serve_bench_gpu.sh BUILD OUT}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
PY="${PYTHON:-python3}"
BATCHES="${BATCHES:-1,32,256}"
PROMPT_LEN="${PROMPT_LEN:-128}"
NEW_TOKENS="${NEW_TOKENS:-128}"
DEVICE="${DEVICE:-cuda}"
DTYPE="${DTYPE:-bfloat16}"
WRITE_S="${WRITE_S:-40}"
ALLOT_S="${ALLOT_S:-50}"
HF_S="${HF_S:-50}"
mkdir -p "$OUT"

if [[ -n "${MODEL_DIR:-}" ]]; then
  MODEL="$MODEL_DIR"
else
  TMP="$(mktemp -d)"
  trap 'rm -rf "$TMP"' EXIT
  MODEL="$TMP/qwen2-0.5b-random"
fi
status=0
stage() { echo "== $* ($(date +%T))" >&2; }

stage "writing the model to $MODEL"
timeout "$WRITE_S" "$PY" "$ROOT/bench/gpu/hf_generate.py" --write "$MODEL" | tee "$OUT/hf_write.jsonl" ||
  status=1

stage "allot serve"
BENCH="$BUILD/bench/llm/allot_serve_bench"
if [[ -x "$BENCH" && -f "$MODEL/config.json" ]]; then
  timeout "$ALLOT_S" "$ROOT/scripts/gpu/with_env.sh" "$BUILD" "$BENCH" --model-dir "$MODEL" --device "$DEVICE" --dtype "$DTYPE" --clients "$BATCHES" \
    --requests 1 --max-tokens "$NEW_TOKENS" --prompt-len "$PROMPT_LEN" --temperature 0 \
    2>"$OUT/allot_serve.stderr" | tee "$OUT/allot_serve.txt" || status=1
  tail -5 "$OUT/allot_serve.stderr" >&2
else
  echo "serve_bench_gpu: missing $BENCH or $MODEL/config.json; skipping allot" >&2
  status=1
fi
grep '^{' "$OUT/allot_serve.txt" >"$OUT/allot_serve.jsonl" 2>/dev/null || true

stage "transformers generate"
timeout "$HF_S" "$PY" "$ROOT/bench/gpu/hf_generate.py" --bench "$MODEL" --batches "$BATCHES" \
  --prompt-len "$PROMPT_LEN" --new-tokens "$NEW_TOKENS" | tee "$OUT/hf_generate.txt" || status=1
grep '^{' "$OUT/hf_generate.txt" >"$OUT/hf_generate.jsonl" 2>/dev/null || true

stage "table"
"$PY" - "$OUT" <<'EOF' || status=1
import json, sys
out = sys.argv[1]

def lines(name):
    try:
        with open(f"{out}/{name}") as f:
            return [json.loads(l) for l in f if l.startswith("{")]
    except OSError:
        return []

allot = {r["clients"]: r for r in lines("allot_serve.jsonl")
         if "tokens_per_s" in r and not r.get("one_at_a_time")}
hf = {r["batch"]: r for r in lines("hf_generate.jsonl") if r.get("stage") == "generate"}
rows = []
print(f"{'batch':>6} {'allot tok/s':>12} {'hf tok/s':>10} {'allot/hf':>9} {'allot seqs/step':>16}")
for n in sorted(set(allot) | set(hf)):
    a, h = allot.get(n, {}), hf.get(n, {})
    at, ht = a.get("tokens_per_s"), h.get("tokens_per_s")
    ratio = at / ht if at and ht else None
    rows.append({"batch": n, "allot_tokens_per_s": at, "hf_tokens_per_s": ht, "ratio": ratio,
                 "allot_seqs_per_step": a.get("seqs_per_step"),
                 "allot_failures": a.get("failures")})
    fmt = lambda v, w, p: f"{v:>{w}.{p}f}" if v is not None else f"{'-':>{w}}"
    print(f"{n:>6} {fmt(at, 12, 0)} {fmt(ht, 10, 0)} {fmt(ratio, 9, 2)} "
          f"{fmt(a.get('seqs_per_step'), 16, 1)}")
with open(f"{out}/serve_vs_hf.json", "w") as f:
    json.dump(rows, f, indent=1)
print(json.dumps({"bench": "serve_vs_hf", "rows": rows}), flush=True)
EOF
exit "$status"
