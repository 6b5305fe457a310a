#!/usr/bin/env bash
# The navigator's ONNX parity case, made on a CPU build with libonnx: the
# GPU build has ONNX export switched off, so the ONNX file and allot's reference Q-values are
# made here and bench/gpu/parity.py --onnx DIR checks them with onnxruntime there.
#
#   bench/gpu/navigator_onnx_case.sh [OUTDIR] [BUILD_DIR]
#       (defaults: .gpu/navigator, build; ALLOT_NO_BUILD=1 skips the build step)
#
# Writes OUTDIR/navigator.safetensors (a navigator after 20 DQN updates), OUTDIR/navigator.onnx
# (`allot export --format onnx` of it, through libonnx's checker) and OUTDIR/reference.json
# (128 states and the Q-values of LibTorch and of the plain C++ navigator). Takes seconds.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUTDIR="${1:-$ROOT/.gpu/navigator}"
BUILD="${2:-${ALLOT_BUILD_DIR:-build}}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"

if [[ -z "${ALLOT_NO_BUILD:-}" ]]; then
  cmake --build "$BUILD" --target allot_parity_dump -- -j2 >/dev/null
fi
rm -rf "$OUTDIR"
"$BUILD/bench/gpu/allot_parity_dump" --navigator "$OUTDIR" --seed "${SEED:-1}"
