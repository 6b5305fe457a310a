#!/usr/bin/env bash
# Sets up (dependencies and build), then runs the whole test suite: every ctest label of the
# main build (unit, integration), then the libFuzzer targets for a bounded number of runs.
#
#   scripts/test.sh                 everything
#   scripts/test.sh -L unit         only one label (arguments go to ctest)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

BUILD_DIR=${ALLOT_BUILD_DIR:-build}
echo
echo "==> [test] ctest in ${BUILD_DIR}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"

if [ $# -eq 0 ]; then
  bash scripts/fuzz.sh
fi
