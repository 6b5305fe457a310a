#!/usr/bin/env bash
# `allot serve` decode throughput on a GPU against transformers' generate, same model, same
# batch sizes: decode tokens/s at 1, 32 and 256 concurrent requests.
#
#   bench/gpu/serve_bench_gpu.sh BUILD OUT      (BUILD: a -DALLOT_WITH_CUDA=ON build with the
#                                                allot_serve_bench target built)
#
# 1. bench/gpu/hf_generate.py --write: a random model of SHAPE (default qwen3-0.6b; also
#    qwen2-0.5b, qwen3-4b; bf16, Hugging Face format) in a temp directory, removed at exit
#    (MODEL_DIR=DIR keeps it there instead).
# 2. allot_serve_bench on it: cuda, bfloat16, N = 1, 32, 256 concurrent HTTP clients with one
#    request each, 128 prompt ids, 128 new tokens (ignore_eos), greedy; twice, with the decode
#    step replayed as a CUDA graph (serve.cuda_graphs true) and without (false).
# 3. hf_generate.py --bench: model.generate at batch 1, 32, 256, same lengths, greedy, sdpa.
# 4. A table of tokens/s per batch size and the ratio allot / transformers.
#
# Like for like: allot's figure is end to end through HTTP and JSON, with requests joining the
# running batch as they arrive (continuous batching); transformers' is one generate call on a
# ready batch. Both are bf16 on the same GPU in the same run; transformers uses neither CUDA
# graphs nor torch.compile; allot's first column does use graphs, its "eager" column does not. Output: OUT/*.jsonl (one JSON object per line) and OUT/serve_vs_hf.json.
# Each stage runs even when an earlier one failed; the exit status is non-zero if any failed.
# DEVICE=cpu (default cuda) and DTYPE run allot's side elsewhere, to check the script. Each
# stage has a time limit (WRITE_S, ALLOT_S twice, HF_S: 40 + 2 x 50 + 50 s, inside
# scripts/gpu/check.sh's 200 s for this stage); expected on an H100 about 15 + 2 x 15 + 25 s.
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
SHAPE="${SHAPE:-qwen3-0.6b}"
WRITE_S="${WRITE_S:-40}"
ALLOT_S="${ALLOT_S:-50}"
HF_S="${HF_S:-50}"
mkdir -p "$OUT"

if [[ -n "${MODEL_DIR:-}" ]]; then
  MODEL="$MODEL_DIR"
else
  TMP="$(mktemp -d)"
  trap 'rm -rf "$TMP"' EXIT
  MODEL="$TMP/$SHAPE-random"
fi
status=0
stage() { echo "== $* ($(date +%T))" >&2; }

stage "writing the model to $MODEL"
timeout "$WRITE_S" "$PY" "$ROOT/bench/gpu/hf_generate.py" --write "$MODEL" --shape "$SHAPE" | tee "$OUT/hf_write.jsonl" ||
  status=1

BENCH="$BUILD/bench/llm/allot_serve_bench"
# allot_serve.* with CUDA graphs (on a CUDA device), allot_serve_eager.* without.
for graphs in true false; do
  name=allot_serve
  [[ "$graphs" == false ]] && name=allot_serve_eager
  [[ "$DEVICE" == cpu && "$graphs" == true ]] && continue
  stage "allot serve, cuda_graphs $graphs"
  if [[ -x "$BENCH" && -f "$MODEL/config.json" ]]; then
    timeout "$ALLOT_S" "$ROOT/scripts/gpu/with_env.sh" "$BUILD" "$BENCH" --model-dir "$MODEL" --device "$DEVICE" --dtype "$DTYPE" --clients "$BATCHES" \
      --requests 1 --max-tokens "$NEW_TOKENS" --prompt-len "$PROMPT_LEN" --temperature 0 \
      --cuda-graphs "$graphs" 2>"$OUT/$name.stderr" | tee "$OUT/$name.txt" || status=1
    tail -5 "$OUT/$name.stderr" >&2
  else
    echo "serve_bench_gpu: missing $BENCH or $MODEL/config.json; skipping allot" >&2
    status=1
  fi
  grep '^{' "$OUT/$name.txt" >"$OUT/$name.jsonl" 2>/dev/null || true
done

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

def by_clients(name):
    return {r["clients"]: r for r in lines(name)
            if "tokens_per_s" in r and not r.get("one_at_a_time")}

allot = by_clients("allot_serve.jsonl")
eager = by_clients("allot_serve_eager.jsonl")
hf = {r["batch"]: r for r in lines("hf_generate.jsonl") if r.get("stage") == "generate"}
rows = []
# allot: with CUDA graphs; eager: without (the same binary, serve.cuda_graphs false).
print(f"{'batch':>6} {'allot tok/s':>12} {'hf tok/s':>10} {'allot/hf':>9} {'allot seqs/step':>16}"
      f" {'eager tok/s':>12} {'eager/hf':>9}")
for n in sorted(set(allot) | set(hf) | set(eager)):
    a, h, e = allot.get(n, {}), hf.get(n, {}), eager.get(n, {})
    at, ht, et = a.get("tokens_per_s"), h.get("tokens_per_s"), e.get("tokens_per_s")
    ratio = at / ht if at and ht else None
    eager_ratio = et / ht if et and ht else None
    rows.append({"batch": n, "allot_tokens_per_s": at, "hf_tokens_per_s": ht, "ratio": ratio,
                 "allot_seqs_per_step": a.get("seqs_per_step"),
                 "allot_failures": a.get("failures"),
                 "allot_eager_tokens_per_s": et, "eager_ratio": eager_ratio,
                 "allot_eager_failures": e.get("failures")})
    fmt = lambda v, w, p: f"{v:>{w}.{p}f}" if v is not None else f"{'-':>{w}}"
    print(f"{n:>6} {fmt(at, 12, 0)} {fmt(ht, 10, 0)} {fmt(ratio, 9, 2)} "
          f"{fmt(a.get('seqs_per_step'), 16, 1)} {fmt(et, 12, 0)} {fmt(eager_ratio, 9, 2)}")
with open(f"{out}/serve_vs_hf.json", "w") as f:
    json.dump(rows, f, indent=1)
print(json.dumps({"bench": "serve_vs_hf", "rows": rows}), flush=True)
EOF
exit "$status"
