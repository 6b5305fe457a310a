#!/usr/bin/env bash
# GRPO update throughput on a GPU: allot against transformers + PEFT (tokens/s, MFU and peak
# memory; aim 1.5x the HF+PEFT baseline and 40% MFU).
#
#   bench/gpu/grpo_bench_gpu.sh BUILD OUT     (BUILD: a -DALLOT_WITH_CUDA=ON build with the
#                                              allot_grpo_bench target built)
#   RUNS=3 CASES="agree a b c" PYTHON=python3 bench/gpu/grpo_bench_gpu.sh build-gpu "$OUT"
#
# Per case, allot_grpo_bench runs first and writes the batch it timed (ids, masks, advantages,
# rollout log-probs) with the model's shape; bench/gpu/grpo_hf.py then times the same update with
# transformers + PEFT on that batch, in the same run of this script. Both sides: random weights of
# the same shape (each its own), bfloat16, LoRA r 16 / alpha 32 on q/k/v/o and gate/up/down, one
# warm-up and RUNS timed updates, the median; the same FLOPs count (allot_grpo_bench's comment).
# allot runs its learner path as configured by default (packed sequences, chunked log-probs);
# HF runs TRL's (padded batch, logits of the completion positions, float32 log-softmax).
#
#   agree  tiny Qwen2, float32, allot's weights and adapter in the file: the first update's loss,
#          grad norm and entropy of both sides must agree
#   a      qwen2-0.5b, 2 prompts x group 8, prompt 256 tokens, completions U[64, 1024]
#   b      qwen2-1.5b, the same batch
#   c      qwen2-1.5b, 1 prompt x group 2, prompt 256, completions 16,128 (16,384 tokens each),
#          gradient checkpointing on both sides
#   d      qwen3-4b, as c: the third size and the anchor's workload (prime-rl: about 6.2k
#          tokens/s at 21.7% MFU in its LoRA count, LoRA r 16, 16k sequences, one H100)
#   e      qwen3-0.6b, the batch of a
# A case without checkpointing in which either side fails (out of memory, most likely) runs again
# with checkpointing on both sides, as "<case>-gc".
#
# CHECKPOINT_LAYERS="24 18": after each case with checkpointing, allot alone runs it again with
# only the first N decoder layers recomputed (model.checkpoint_layers; the others keep their
# activations), as "<case>-cl<N>": more memory, less recomputation. transformers has no such
# knob, so these rows have no HF side; the case's own row is the like-for-like one.
#
# PROFILE=1: each side profiles one more update after its timed ones (allot_grpo_bench --profile,
# grpo_hf.py --profile); bench/gpu/trace_summary.py writes where the GPU time went to
# OUT/<case>_profile.txt (the traces themselves stay in OUT as <case>_{allot,hf}.trace.json).
#
# Both processes get PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (unless set), which LibTorch
# reads as PyTorch does. Output: OUT/<case>_{allot,hf}.json (one JSON object each), their stderr
# logs, OUT/grpo_vs_hf.json and the table on stdout. A failure is reported and the next case runs;
# the exit status is non-zero if anything failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:?usage: grpo_bench_gpu.sh BUILD OUT}"
OUT="${2:?usage: grpo_bench_gpu.sh BUILD OUT}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
PY="${PYTHON:-python3}"
RUNS="${RUNS:-3}"
CASES="${CASES:-agree a b c}"
DEVICE="${DEVICE:-cuda}"  # cpu: a dry run of the script's plumbing
PROFILE="${PROFILE:-0}"
CHECKPOINT_LAYERS="${CHECKPOINT_LAYERS:-}"
BENCH="$BUILD/bench/trainer/allot_grpo_bench"
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
mkdir -p "$OUT"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
status=0
stage() { echo "== $* ($(date +%T))" >&2; }

# case_flags NAME: allot_grpo_bench's flags for the case (empty: unknown case).
case_flags() {
  local batch="--prompt-len 256 --completion-min 64 --completion-max 1024 --batch 16 --group 8"
  case "$1" in
    agree) echo "--model tiny --dtype float32" ;;
    a) echo "--model qwen2-0.5b $batch --grad-checkpointing 0" ;;
    b) echo "--model qwen2-1.5b $batch --grad-checkpointing 0" ;;
    c) echo "--model qwen2-1.5b --prompt-len 256 --completion-min 16128 --completion-max 16128" \
      "--batch 2 --group 2 --grad-checkpointing 1" ;;
    d) echo "--model qwen3-4b --prompt-len 256 --completion-min 16128 --completion-max 16128" \
      "--batch 2 --group 2 --grad-checkpointing 1" ;;
    e) echo "--model qwen3-0.6b $batch --grad-checkpointing 0" ;;
  esac
}

# run_case NAME FLAGS...: allot, then HF on the batch allot wrote; 0 when both succeeded.
# HF_SIDE=0 run_case ...: allot alone.
run_case() {
  local name="$1" ok=0 file hf="${HF_SIDE:-1}"
  shift
  file="$TMP/$name.safetensors"
  local write=(--write-batch "$file") runs=(--runs "$RUNS") prof_a=() prof_h=()
  if [[ "$hf" == 0 ]]; then
    write=()
  elif [[ "$name" == agree ]]; then
    write=(--write "$file")
    runs=(--runs 1)
  elif [[ "$PROFILE" == 1 ]]; then
    prof_a=(--profile "$OUT/${name}_allot.trace.json")
    prof_h=(--profile "$OUT/${name}_hf.trace.json")
  fi
  stage "$name: allot $*"
  if [[ -x "$BENCH" ]]; then
    timeout 180 "$ROOT/scripts/gpu/with_env.sh" "$BUILD" "$BENCH" --device "$DEVICE" --dtype bfloat16 --lora-targets all-linear --threads 8 \
      "${runs[@]}" "$@" "${write[@]}" "${prof_a[@]}" >"$OUT/${name}_allot.json" 2>"$OUT/${name}_allot.stderr" ||
      ok=1
  else
    echo "{\"side\": \"allot\", \"error\": \"missing $BENCH\"}" >"$OUT/${name}_allot.json"
    ok=1
  fi
  tail -3 "$OUT/${name}_allot.stderr" >&2 2>/dev/null
  cat "$OUT/${name}_allot.json"
  [[ "$hf" == 0 ]] && return "$ok"
  stage "$name: transformers + PEFT"
  if [[ -f "$file" ]]; then
    timeout 180 "$PY" "$ROOT/bench/gpu/grpo_hf.py" --read "$file" --device "$DEVICE" "${runs[@]}" \
      "${prof_h[@]}" >"$OUT/${name}_hf.json" 2>"$OUT/${name}_hf.stderr" || ok=1
    tail -3 "$OUT/${name}_hf.stderr" >&2
  else
    echo '{"side": "hf", "error": "allot wrote no batch"}' >"$OUT/${name}_hf.json"
    ok=1
  fi
  cat "$OUT/${name}_hf.json"
  rm -f "$file"
  if ((${#prof_a[@]})); then
    for side in allot hf; do
      [[ -f "$OUT/${name}_$side.trace.json" ]] &&
        "$PY" "$ROOT/bench/gpu/trace_summary.py" "$OUT/${name}_$side.trace.json" \
          --label "$name $side"
    done >"$OUT/${name}_profile.txt" 2>&1
    cat "$OUT/${name}_profile.txt" >&2
  fi
  return "$ok"
}

done_cases=()
for name in $CASES; do
  flags="$(case_flags "$name")"
  if [[ -z "$flags" ]]; then
    echo "grpo_bench_gpu: unknown case '$name' (expected agree, a, b, c, d, e)" >&2
    status=1
    continue
  fi
  ok=0
  # shellcheck disable=SC2086 # the flags are words
  run_case "$name" $flags || ok=1
  done_cases+=("$name")
  # The allot-only rows run whether or not the HF side of the case succeeded.
  if [[ "$flags" == *"--grad-checkpointing 1"* ]]; then
    for n in $CHECKPOINT_LAYERS; do
      # shellcheck disable=SC2086
      HF_SIDE=0 run_case "$name-cl$n" $flags --checkpoint-layers "$n" || status=1
      done_cases+=("$name-cl$n")
    done
  fi
  ((ok == 0)) && continue
  status=1
  if [[ "$flags" == *"--grad-checkpointing 0"* ]]; then
    # shellcheck disable=SC2086
    run_case "$name-gc" ${flags/--grad-checkpointing 0/--grad-checkpointing 1} || true
    done_cases+=("$name-gc")
  fi
done

stage "table"
"$PY" - "$OUT" "${done_cases[@]}" <<'EOF' || status=1
import json, sys

out, cases = sys.argv[1], sys.argv[2:]


def load(name):
    try:
        with open(f"{out}/{name}.json") as f:
            return json.loads(next(l for l in f if l.startswith("{")))
    except (OSError, StopIteration, ValueError) as e:
        return {"error": f"no result ({type(e).__name__})"}


def fmt(v, f):
    """v formatted as f, or "-" in the same width when there is no figure."""
    return format(v, f) if isinstance(v, (int, float)) else format("-", ">" + f.split(".")[0])


rows, ok, agreed = [], True, None  # agreed: None when the agree case did not run
for name in cases:
    a, h = load(f"{name}_allot"), load(f"{name}_hf")
    if name == "agree":
        print("agreement (tiny Qwen2, float32, identical weights and batch, first update):")
        for key in ("loss", "grad_norm", "entropy"):
            x, y = a.get(key), h.get(key)
            good = x is not None and y is not None and abs(x - y) <= 1e-6 + 1e-3 * abs(y)
            ok &= good
            verdict = "ok" if good else "DIFFER"
            print(f"  {key:9s} allot {fmt(x, '.7g')}  hf {fmt(y, '.7g')}  {verdict}")
        for side, r in (("allot", a), ("hf", h)):
            if "error" in r:
                print(f"  {side}: {r['error']}")
        agreed = ok
        rows.append({"case": name, "allot": a, "hf": h, "agree": ok})
        continue
    ta, th = a.get("tokens_per_s"), h.get("tokens_per_s")
    ratio = ta / th if ta and th else None
    rows.append({"case": name, "model": a.get("model") or h.get("model") or "-", "ratio": ratio,
                 "allot": a, "hf": h})
print()
print("GRPO update, LoRA r16 on all linear projections, bf16; tokens = real tokens per update;")
print("MFU = 6NL + 12AL^2 (PaLM, torchtitan); LoRA MFU = 4NL + 6N_lora L + 12AL^2 (prime-rl's);")
print("gc = decoder layers recomputed in backward (0: no checkpointing); -clN rows: allot alone")
print(f"peak = {rows[-1]['allot'].get('peak_tflops', 989.4) if rows else 989.4} TFLOP/s; "
      "median of timed updates after one warm-up")
head = (f"{'case':7s} {'model':11s} {'gc':>2s} {'tokens':>7s} {'allot tok/s':>11s} "
        f"{'hf tok/s':>9s} {'ratio':>6s} {'MFU allot/hf':>13s} {'LoRA MFU a/hf':>14s} "
        f"{'peak GiB allot/hf':>18s}")
print(head)
for r in rows:
    if r["case"] == "agree":
        continue
    a, h = r["allot"], r["hf"]

    def pct(s, k):
        return f"{100 * s[k]:.1f}%" if isinstance(s.get(k), (int, float)) else "-"

    def gib(s):
        v = s.get("gpu_peak_gib")
        return f"{v:.1f}" if isinstance(v, (int, float)) else "-"

    gc = a.get("checkpoint_layers", h.get("grad_checkpointing", "-"))
    tokens = a.get("tokens", h.get("tokens"))
    print(f"{r['case']:7s} {r['model']:11s} {gc!s:>2s} {fmt(tokens, '7.0f')} "
          f"{fmt(a.get('tokens_per_s'), '11.0f')} {fmt(h.get('tokens_per_s'), '9.0f')} "
          f"{fmt(r['ratio'], '6.2f')} {pct(a, 'mfu') + '/' + pct(h, 'mfu'):>13s} "
          f"{pct(a, 'mfu_lora') + '/' + pct(h, 'mfu_lora'):>14s} {gib(a) + '/' + gib(h):>18s}")
    for side, s in (("allot", a), ("hf", h)):
        if "error" in s and not (side == "hf" and "-cl" in r["case"]):
            print(f"        {side} failed: {s['error'][:150]}")
print("anchor: prime-rl, Qwen3-4B (case d), LoRA r16, 16k tokens, one H100: "
      "about 6.2k tok/s at 21.7% MFU (its LoRA count)")
with open(f"{out}/grpo_vs_hf.json", "w") as f:
    json.dump(rows, f, indent=1)
print(json.dumps({"bench": "grpo_vs_hf", "agree": agreed,
                  "ratios": {r["case"]: r.get("ratio") for r in rows if r["case"] != "agree"}}),
      flush=True)
sys.exit(0 if ok else 1)
EOF
exit "$status"
