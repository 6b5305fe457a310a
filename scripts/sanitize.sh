#!/usr/bin/env bash
# Sanitizer runs of the test suite, each in a build directory of its own:
#
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/): the
#                              unit and integration tests of the binaries below
#   scripts/sanitize.sh tsan   ThreadSanitizer (build-tsan/): the concurrent parts only, i.e.
#                              the dispatcher, the worker, the serve engine and the LLM client
#
# Only the test binaries that are needed are built (a clean sanitizer build of everything costs
# more than CI has). ALLOT_SANITIZE_TARGETS overrides the list, ALLOT_SANITIZE_JOBS the build
# jobs, ALLOT_SANITIZE_FILTER the ctest -R filter. scripts/test.sh runs both when
# ALLOT_SANITIZE=1. Suppressions (tests/sanitizers/) cover only libraries built without the
# sanitizer; each entry says why.
set -euo pipefail
cd "$(dirname "$0")/.."

kind=${1:-}
case "$kind" in
  asan)
    mode=address
    dir=${ALLOT_ASAN_BUILD_DIR:-build-asan}
    targets=${ALLOT_SANITIZE_TARGETS:-"allot_core_tests allot_llm_tests allot_rewards_tests allot_tools_tests allot_datasets_tests allot_envs_tests allot_rollout_tests"}
    filter=${ALLOT_SANITIZE_FILTER:-}
    ;;
  tsan)
    mode=thread
    dir=${ALLOT_TSAN_BUILD_DIR:-build-tsan}
    targets=${ALLOT_SANITIZE_TARGETS:-"allot_rollout_tests allot_llm_tests allot_serve_tests"}
    # The concurrent parts: dispatcher, worker (service and processes), serve engine (batching,
    # the server's threads) and the LLM client (event loops, retries, breaker).
    filter=${ALLOT_SANITIZE_FILTER:-"^(Dispatcher|Staleness|WorkerService|RolloutProcessIntegration|ClosedEpisodes|ServeTest|ServeBatchingIntegration|ServeClient|ClientTest|ClientIntegration)"}
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan" >&2
    exit 2
    ;;
esac

jobs=${ALLOT_SANITIZE_JOBS:-$(nproc)}
supp="$(pwd)/tests/sanitizers"
export CCACHE_BASEDIR="$(pwd)" CCACHE_NOHASHDIR=1
# Set before the build too: gtest_discover_tests runs each test binary after linking it, and a
# leak report from an uninstrumented library at that exit would fail the build.
export OPENBLAS_NUM_THREADS=1
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export LSAN_OPTIONS="suppressions=${supp}/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=${supp}/ubsan.supp"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=${supp}/tsan.supp"

echo "==> [sanitize] configure ${dir} (ALLOT_SANITIZE=${mode})"
# No -Werror: GCC 12 warns falsely under instrumentation (maybe-uninitialized inside <regex>
# with -fsanitize=address, seen in tests/rollout/rollout_test_util.cc); the main build keeps it.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DALLOT_SANITIZE="$mode" \
  -DALLOT_BUILD_BENCH=OFF -DALLOT_BUILD_FUZZ=OFF -DALLOT_WERROR=OFF >/dev/null
echo "==> [sanitize] build ${targets}"
# shellcheck disable=SC2086
cmake --build "$dir" -j "$jobs" --target $targets

label="asan"
[ "$mode" = thread ] && label="tsan"
args=(--test-dir "$dir" --output-on-failure -L "$label" -j "$jobs")
[ -n "$filter" ] && args+=(-R "$filter")
# Tests whose assertions are resource bounds calibrated for uninstrumented code (RSS, reached
# concurrency, wall-clock deadlines): sanitizer shadow memory and slowdown break those bounds,
# not the code. ALLOT_SANITIZE_EXCLUDE overrides (empty: run everything).
exclude=${ALLOT_SANITIZE_EXCLUDE-"TwoThousandConcurrentRequestsCompleteCorrectly"}
[ -n "$exclude" ] && args+=(-E "$exclude")
echo "==> [sanitize] ctest ${args[*]}"
# Only the tests of binaries that were built: ctest lists the others as "not run".
ctest "${args[@]}" --no-tests=error
