#!/usr/bin/env bash
# Sets up (dependencies and build), then runs the whole test suite: every ctest label of the
# main build (unit, integration, chaos), then the libFuzzer targets for a bounded number of runs.
#
#   scripts/test.sh                 everything
#   scripts/test.sh -L unit         only one label (arguments go to ctest)
#   ALLOT_RESULTS=1 scripts/test.sh
#                                   also label "results": the tiny world's learning results
#                                   (the quickstart's router against the fixed levels; minutes)
#   ALLOT_SANITIZE=1 scripts/test.sh
#                                   also the ASan+UBSan and TSan runs (scripts/sanitize.sh;
#                                   their own build directories, so off by default: a clean
#                                   sanitizer build takes a good part of CI's time)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

BUILD_DIR=${ALLOT_BUILD_DIR:-build}
echo
echo "==> [test] ctest in ${BUILD_DIR}"
# Label "results" (the tiny world's learning results: minutes of training per test) runs only with
# ALLOT_RESULTS=1 or when named with -L.
if [ $# -eq 0 ] && [ "${ALLOT_RESULTS:-0}" != "1" ]; then
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" -LE results
else
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
fi

if [ $# -eq 0 ]; then
  bash scripts/fuzz.sh
fi

if [ "${ALLOT_SANITIZE:-0}" = "1" ]; then
  bash scripts/sanitize.sh asan
  bash scripts/sanitize.sh tsan
fi
