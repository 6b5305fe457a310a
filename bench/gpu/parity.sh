#!/usr/bin/env bash
# allot against transformers, PEFT and onnxruntime, on the GPU machine.
#
#   bench/gpu/parity.sh BUILD_DIR OUT [NAVIGATOR_CASE]
#       (NAVIGATOR_CASE defaults to .gpu/navigator, made by navigator_onnx_case.sh on
#        a CPU build with libonnx; skipped with a note when absent)
#
# Runs allot_parity_dump for a random Qwen2, Qwen3 and Llama on CUDA (on the CPU when CUDA
# cannot be used), then parity.py on each and on the navigator case. OUT receives the cases,
# dump_<family>_<device>.json/.log and parity.jsonl (one JSON object per line, then the table).
# ATTN=eager applies the criteria to transformers' eager attention instead of sdpa (the kernel
# allot uses for unpadded batches on LibTorch 2). The exit status is parity.py's: 0 when every
# criterion holds.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:?usage: parity.sh BUILD_DIR OUT [NAVIGATOR_CASE]}"
OUT="${2:?usage: parity.sh BUILD_DIR OUT [NAVIGATOR_CASE]}"
NAV="${3:-$ROOT/.gpu/navigator}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
DUMP="$BUILD/bench/gpu/allot_parity_dump"
dump() { "$ROOT/scripts/gpu/with_env.sh" "$BUILD" "$DUMP" "$@"; }
start=$(date +%s.%N)

dirs=()
for family in qwen2 qwen3 llama; do
  case_dir="$OUT/$family"
  ok=0
  for device in cuda cpu; do
    rm -rf "$case_dir"
    log="$OUT/dump_${family}_$device"
    if dump --family "$family" --out "$case_dir" --device "$device" --seed 1 \
        >"$log.json" 2>"$log.log"; then
      ok=1
      cat "$log.json"
      break
    fi
    echo "parity.sh: allot_parity_dump --family $family --device $device failed:" >&2
    tail -n 5 "$log.log" >&2
  done
  [[ $ok == 1 ]] && dirs+=("$case_dir")
done

args=("${dirs[@]}")
if [[ -f "$NAV/navigator.onnx" && -f "$NAV/reference.json" ]]; then
  args+=(--onnx "$NAV")
else
  echo "parity.sh: no navigator case in $NAV (make it with bench/gpu/navigator_onnx_case.sh" \
    "on a CPU build with libonnx)" >&2
fi
rc=0
if [[ ${#dirs[@]} -lt 3 ]]; then
  echo "parity.sh: allot_parity_dump failed for some family; see $OUT/dump_*.log" >&2
  rc=1
fi
"$PY" "$ROOT/bench/gpu/parity.py" --attn "${ATTN:-sdpa}" "${args[@]}" 2>&1 | tee "$OUT/parity.jsonl"
prc=${PIPESTATUS[0]}
[[ $prc == 0 ]] || rc=$prc
echo "parity.sh: $(awk "BEGIN {printf \"%.1f\", $(date +%s.%N) - $start}") s, exit $rc"
exit $rc
