#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each for a bounded number
# of iterations (ctest label "fuzz"). ALLOT_FUZZ_RUNS sets the iterations (default 20000),
# ALLOT_FUZZ_JOBS the build jobs (default: all cores), ALLOT_FUZZ_TARGETS the targets to build
# and run (default: all of them).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v clang++ >/dev/null 2>&1; then
  echo "==> [fuzz] clang++ not found: skipping the fuzz targets (scripts/setup.sh installs it)"
  exit 0
fi
export CCACHE_BASEDIR="$(pwd)" CCACHE_NOHASHDIR=1
FUZZ_DIR=${ALLOT_FUZZ_BUILD_DIR:-build-fuzz}
echo "==> [fuzz] configure ${FUZZ_DIR} with clang"
CC=clang CXX=clang++ cmake -S . -B "$FUZZ_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DALLOT_BUILD_FUZZ=ON -DALLOT_BUILD_BENCH=OFF -DALLOT_USE_PCH=OFF -DALLOT_WERROR=OFF \
  -DALLOT_FUZZ_RUNS="${ALLOT_FUZZ_RUNS:-20000}" >/dev/null
targets=${ALLOT_FUZZ_TARGETS:-allot_fuzz_all}
echo "==> [fuzz] build ${targets}"
# shellcheck disable=SC2086
cmake --build "$FUZZ_DIR" -j "${ALLOT_FUZZ_JOBS:-$(nproc)}" --target $targets
args=(--test-dir "$FUZZ_DIR" --output-on-failure -L fuzz)
if [ "$targets" != allot_fuzz_all ]; then
  args+=(-R "^fuzz\\.($(echo "$targets" | tr ' ' '|'))\$")
fi
echo "==> [fuzz] run"
ctest "${args[@]}"
