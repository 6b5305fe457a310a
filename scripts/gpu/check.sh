#!/usr/bin/env bash
# The GPU checks in one run, within a time budget: the CUDA build (scripts/gpu/build.sh), the
# GPU tests (ctest -L gpu), parity with transformers, PEFT and onnxruntime, the GRPO update
# against transformers + PEFT, `allot serve` decoding against transformers' generate, and the
# whole GRPO loop (`allot serve` + the learner) against the same loop in transformers + PEFT. Each stage gets what is left of the budget and a failed stage does
# not stop the next; OUT ends with one log per stage, summary.txt and logs.tgz (every log and
# JSON result, no checkpoints).
#
#   scripts/gpu/check.sh OUT [BUILD_DIR]          (BUILD_DIR default: build-gpu)
#   BUDGET_S=540  STAGES="build tests backtrace bindings parity grpo serve loop"
#   GRPO_CASES="agree a c b"  GRPO_S=230 (the grpo stage's own limit)
#   LOOP_CASES="qwen3-0.6b qwen3-4b"  LOOP_S=400 (the loop stage's own limit; the loop's own
#   settings, MAX_TOKENS and the rest, pass through: bench/gpu/grpo_loop_gpu.sh)
#
# Made beforehand on a Debian 12 machine with the CPU build: scripts/gpu/fetch_debs.sh (the
# packages build.sh unpacks, in .gpu/debs) and bench/gpu/navigator_onnx_case.sh (the navigator's
# ONNX case in .gpu/navigator: the CUDA build leaves ONNX export out).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:?usage: scripts/gpu/check.sh OUT [BUILD_DIR]}"
BUILD="${2:-build-gpu}"
BUDGET_S="${BUDGET_S:-540}"
STAGES="${STAGES:-build tests backtrace bindings parity grpo serve loop}"
mkdir -p "$OUT"
T0=$(date +%s)
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"

say() { echo "$*" | tee -a "$SUMMARY"; }
left() { echo $((BUDGET_S - ($(date +%s) - T0))); }

# stage NAME MAX_S CMD...: runs CMD under min(MAX_S, what is left - 10 s), logging to OUT/NAME.log.
stage() {
  local name=$1 max=$2
  shift 2
  [[ " $STAGES " == *" $name "* ]] || return 0
  local t=$(($(left) - 10))
  ((t > max)) && t=$max
  if ((t < 20)); then
    say "[$name] skipped: budget spent"
    return 1
  fi
  local s0 rc
  s0=$(date +%s)
  timeout --kill-after=5 "$t" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  say "[$name] exit $rc after $(($(date +%s) - s0)) s (limit $t s)"
  tail -n 25 "$OUT/$name.log" | sed "s/^/  $name| /" | tee -a "$SUMMARY"
  return $rc
}

{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__, "peft", peft.__version__)'
  g++ --version | head -n1
  cmake --version | head -n1
  grep PRETTY_NAME /etc/os-release
  echo "cores $(nproc)"
} 2>&1 | sed 's/^/machine| /' | tee -a "$SUMMARY"

# Only what the chosen stages run.
TARGETS=()
want() { [[ " $STAGES " == *" $1 "* ]]; }
want tests && TARGETS+=(allot_gpu_tests allot_decode_graph_tests)
want parity && TARGETS+=(allot_parity_dump)
want grpo && TARGETS+=(allot_grpo_bench)
want serve && TARGETS+=(allot_serve_bench)
want loop && TARGETS+=(allot allot_grpo_loop_bench)
stage build 360 scripts/gpu/build.sh "$BUILD" "${TARGETS[@]}"
# A target that failed to build fails its own stage; the others still run. Only allot's
# programs get the build's library path (scripts/gpu/with_env.sh): Python keeps the machine's.
if [[ -f "$BUILD/env.sh" ]]; then
  if ! stage tests 60 scripts/gpu/with_env.sh "$BUILD" ctest --test-dir "$BUILD" -L gpu \
    --output-on-failure --timeout 50 &&
    command -v cuda-gdb >/dev/null; then
    # A backtrace of the first test that ctest saw fail (a crash at exit shows only there). A
    # call through a null pointer leaves gdb nothing to unwind: the words on the stack name the
    # caller (the return address), and the other threads show what was still running.
    first=$(sed -n 's/^.*Test *#[0-9]*: \([A-Za-z0-9_.]*\) .*\*\*\*.*/\1/p' "$OUT/tests.log" | head -n1)
    if [[ -n "$first" ]]; then
      stage backtrace 60 scripts/gpu/with_env.sh "$BUILD" cuda-gdb -batch \
        -ex run -ex bt -ex 'info registers rip rsp' -ex 'x/32a $sp' \
        -ex 'thread apply all bt 8' \
        --args "$BUILD/tests/gpu/allot_gpu_tests" --gtest_filter="$first"
      # Symbols that one library's code binds in another copy: LibTorch's (the wheel) against
      # the unpacked Debian libraries, either way (scripts/gpu/foreign_bindings.py).
      stage bindings 60 bash -c 'LD_DEBUG=bindings scripts/gpu/with_env.sh "$1" \
        "$1/tests/gpu/allot_gpu_tests" --gtest_filter="$2" 2>&1 >/dev/null |
        python3 scripts/gpu/foreign_bindings.py "$1"' _ "$BUILD" "$first"
    fi
  fi
  stage parity 60 bench/gpu/parity.sh "$BUILD" "$OUT/parity"
  # The 16k-token case before the 1.5B batch: it is the one the published anchor measures.
  stage grpo "${GRPO_S:-230}" env CASES="${GRPO_CASES:-agree a c b}" bench/gpu/grpo_bench_gpu.sh "$BUILD" "$OUT/grpo"
  stage serve 200 bench/gpu/serve_bench_gpu.sh "$BUILD" "$OUT/serve"
  stage loop "${LOOP_S:-400}" env CASES="${LOOP_CASES:-qwen3-0.6b qwen3-4b}" \
    bench/gpu/grpo_loop_gpu.sh "$BUILD" "$OUT/loop"
fi
say "total $(($(date +%s) - T0)) s"
# Every log and JSON result in one small archive, without the checkpoints the stages wrote, for
# copying off the machine.
(cd "$OUT" && find . -type f \( -name '*.log' -o -name '*.json' -o -name '*.jsonl' \
  -o -name '*.txt' -o -name '*.stderr' \) -size -4M -print0 |
  tar czf logs.tgz --null -T -) || say "could not write $OUT/logs.tgz"
