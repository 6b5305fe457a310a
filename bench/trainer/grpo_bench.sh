#!/usr/bin/env bash
# GRPO update benchmark: allot's update against the same update in plain PyTorch
# (Debian's python3-torch), same tiny Qwen2 + LoRA, same weights, same batch, same threads.
#
#   bench/trainer/grpo_bench.sh [BUILD_DIR]      (default: build; ALLOT_BUILD_DIR also works)
#   THREADS=1 RUNS=5 SEED=7 ALLOT_NO_BUILD=1 bench/trainer/grpo_bench.sh
#
# allot_grpo_bench writes the weights, the adapter and the batch to a safetensors file;
# grpo_torch.py reads it. The first update of each side is the agreement check (loss, grad norm
# and entropy on identical weights must agree); the next RUNS updates are timed. Throughput is
# real (non-pad) tokens per second of process CPU time, which stays meaningful on a busy
# machine; wall-clock figures are printed beside it. Peak memory is the process's resident-set
# high-water mark (VmHWM), and its growth over the resident set just before the first update.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-${ALLOT_BUILD_DIR:-build}}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
PY=/usr/bin/python3
THREADS="${THREADS:-1}"
RUNS="${RUNS:-5}"
SEED="${SEED:-7}"

# ALLOT_BENCH_NO_INSTALL=1 (ctest's GrpoBenchAgreement): exit 77, skipped, instead of installing.
if ! "$PY" -c 'import torch' 2>/dev/null; then
  if [[ -n "${ALLOT_BENCH_NO_INSTALL:-}" ]]; then
    echo "grpo_bench: PyTorch is missing (python3-torch); skipped" >&2
    exit 77
  elif [[ "$(id -u)" == 0 ]]; then
    echo "installing python3-torch (Debian) ..." >&2
    apt-get install -y python3-torch >/dev/null
  else
    echo "grpo_bench: PyTorch is missing; run: sudo apt-get install -y python3-torch" >&2
    exit 2
  fi
fi

# ALLOT_NO_BUILD=1: use the binary as built (e.g. when builds go through a shared lock).
[[ -n "${ALLOT_NO_BUILD:-}" ]] || cmake --build "$BUILD" --target allot_grpo_bench -- -j2 >/dev/null
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
export OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS"

BENCH="$BUILD/bench/trainer/allot_grpo_bench"
"$BENCH" --write "$OUT/case.safetensors" --threads "$THREADS" --runs "$RUNS" --seed "$SEED" \
  --packing 1 >"$OUT/allot.json"
"$BENCH" --threads "$THREADS" --runs "$RUNS" --seed "$SEED" --packing 0 >"$OUT/allot_padded.json"
"$PY" "$ROOT/bench/trainer/grpo_torch.py" --read "$OUT/case.safetensors" --threads "$THREADS" \
  --runs "$RUNS" >"$OUT/torch.json"

"$PY" - "$OUT" <<'PYEOF'
import json, os, sys
d = sys.argv[1]
a, ap, t = (json.load(open(os.path.join(d, f))) for f in ("allot.json", "allot_padded.json", "torch.json"))
print(f"GRPO update, tiny Qwen2 (hidden 256, 4 layers, vocab 1536, tied) + LoRA r16 on q/k/v/o, "
      f"PyTorch {t['torch_version']}, {a['threads']} thread(s), median of {a['runs']} updates")
print(f"batch {a['batch']} sequences, {a['tokens']:.0f} real tokens ({a['trainable_tokens']} trainable) "
      f"padded to {a['padded_len']} ({a['batch'] * a['padded_len']} slots)")
# Agreement: 1e-5 relative (the loss, a difference of near-equal terms, also 1e-7 absolute);
# float32 rounding of the two sides' different orders of summation stays near 1e-7.
ok = True
for key in ("loss", "grad_norm", "entropy"):
    worst = 0.0
    for name, s in (("allot", a), ("allot unpacked", ap)):
        diff = abs(s[key] - t[key])
        slack = 1e-7 if key == "loss" else 0.0
        ok &= diff <= slack + 1e-5 * abs(t[key])
        worst = max(worst, diff / max(abs(t[key]), 1e-12))
    print(f"  first update {key:9s} allot {a[key]:.7g}  unpacked {ap[key]:.7g}  pytorch {t[key]:.7g}"
          f"  (largest relative difference {worst:.1e})")
print(f"  agreement on identical weights (1e-5 relative): {'yes' if ok else 'NO'}")
print(f"{'':22s}{'tok/CPU-s':>10s}{'tok/s wall':>11s}{'peak RSS MiB':>13s}{'growth MiB':>11s}")
for name, s in (("allot (packed)", a), ("allot (padded)", ap), ("pytorch", t)):
    print(f"  {name:20s}{s['tokens_per_cpu_s']:10.0f}{s['tokens_per_s']:11.0f}"
          f"{s['rss_peak_mib']:13.0f}{s['rss_peak_mib'] - s['rss_base_mib']:11.0f}")
r = a["tokens_per_cpu_s"] / t["tokens_per_cpu_s"]
rp = ap["tokens_per_cpu_s"] / t["tokens_per_cpu_s"]
print(f"  ratio allot/pytorch (CPU time): {r:.2f}x (target >= 1.5x: {'PASS' if r >= 1.5 else 'MISS'});"
      f" like for like, padded path {rp:.2f}x")
print("  what differs: allot packs the batch (real tokens only, attention per sequence) and forms"
      " log-probs in chunks; PyTorch runs the padded update with full logits, as TRL-style"
      " trainers do on CPU; same weights, batch, loss, LibTorch and OpenBLAS")
print(f"  peak-memory growth allot/pytorch: "
      f"{(a['rss_peak_mib'] - a['rss_base_mib']) / (t['rss_peak_mib'] - t['rss_base_mib']):.2f}")
sys.exit(0 if ok else 1)
PYEOF
