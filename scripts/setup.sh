#!/usr/bin/env bash
# Installs every dependency of allot from Debian 12's main archive (and npm for the test
# clients), then configures and builds into build/. Idempotent: a second run installs nothing
# and rebuilds only what changed. Run as root on a fresh Debian 12 machine.
#
# Environment:
#   ALLOT_BUILD_DIR   build directory (default: build)
#   ALLOT_BUILD_TYPE  CMake build type (default: RelWithDebInfo)
#   ALLOT_JOBS        parallel compile jobs (default: nproc)
#   ALLOT_SKIP_BUILD  set to 1 to install dependencies only
#   ALLOT_BUILD_TARGETS  build only these targets (space-separated; default: all, tests and
#                     benchmarks included). scripts/quickstart.sh builds only `allot`.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${ALLOT_BUILD_DIR:-build}
BUILD_TYPE=${ALLOT_BUILD_TYPE:-RelWithDebInfo}
JOBS=${ALLOT_JOBS:-$(nproc)}

step() { printf '\n==> [setup] %s\n' "$*"; }
die() { printf '\n!!! [setup] FAILED at step: %s\n' "$*" >&2; exit 1; }

# Every package allot needs, and why (docs/building.md has the longer story).
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git   # toolchain
  clang libclang-rt-14-dev                                   # libFuzzer targets
  libtorch-dev libgloo-dev                                   # learner: LibTorch 1.13 CPU, Gloo
  libopenblas0-pthread                # optimised BLAS for LibTorch's CPU GEMMs (5x batched decode)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler  # rollout protocol
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev            # configs, JSON, CLI
  libspdlog-dev libfmt-dev                                   # logging
  libssl-dev                                                 # sha256 for checkpoint manifests
  openssl                                                    # throwaway certificates in TLS tests
  libcurl4-openssl-dev libcpp-httplib-dev                    # LLM HTTP client and server
  libpcre2-dev libutf8proc-dev                               # BPE tokenizer
  libginac-dev                                               # symbolic maths (rewards, tools)
  libsqlite3-dev                                             # FTS5 knowledge search
  bubblewrap python3                                         # sandboxed code tool
  libonnx-dev                                                # navigator ONNX export
  libgtest-dev libgmock-dev libbenchmark-dev                 # tests and benchmarks
  gnuplot-nox                                                # GRPO runs' reward/cost curve PNG
  prometheus                          # tests: promtool check metrics, a real scrape of /metrics
  python3-protobuf                    # tests: TensorBoard events decoded by the protobuf runtime
  iproute2                            # tests: hosts as network namespaces (ip netns, veth, bridge)
  slurm-wlm                           # tests: a SLURM cluster (munge, slurmctld, slurmd) runs
                                      # docs/launch/slurm.sbatch; its system services are not used
)

step "checking the platform"
if [ "$(id -u)" -ne 0 ]; then
  die "checking the platform: run as root (apt-get install needs it)"
fi
if [ -r /etc/os-release ]; then
  . /etc/os-release
  if [ "${ID:-}" != "debian" ] || [ "${VERSION_ID:-}" != "12" ]; then
    echo "warning: allot is set up for Debian 12; this is ${PRETTY_NAME:-unknown}" >&2
  fi
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js runs the reference clients in tests (the machine's own node is fine when present).
if ! command -v node >/dev/null 2>&1; then missing+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi

if [ ${#missing[@]} -gt 0 ]; then
  step "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q || die "apt-get update"
  apt-get install -y -q --no-install-recommends "${missing[@]}" || die "apt-get install ${missing[*]}"
else
  step "all ${#PACKAGES[@]} Debian packages already installed"
fi

if [ -f tests/js/package.json ]; then
  if [ ! -d tests/js/node_modules ] || [ tests/js/package.json -nt tests/js/node_modules ]; then
    step "npm install (test clients in tests/js)"
    (cd tests/js && npm install --no-audit --no-fund --loglevel=error) || die "npm install in tests/js"
    touch tests/js/node_modules
  else
    step "npm packages in tests/js already installed"
  fi
fi

if [ "${ALLOT_SKIP_BUILD:-0}" = "1" ]; then
  step "ALLOT_SKIP_BUILD=1: not building"
  exit 0
fi

# ccache: key on paths relative to the checkout, so clones in other directories share hits.
export CCACHE_BASEDIR="$ROOT"
export CCACHE_NOHASHDIR=1

step "configure ${BUILD_DIR} (${BUILD_TYPE})"
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
  || die "cmake configure"

targets=()
for t in ${ALLOT_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
step "build with ${JOBS} jobs${ALLOT_BUILD_TARGETS:+ (targets: ${ALLOT_BUILD_TARGETS})}"
start=$(date +%s)
cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}" || die "build"
echo "build took $(( $(date +%s) - start )) s"
