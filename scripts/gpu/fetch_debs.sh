#!/usr/bin/env bash
# Downloads, without installing, the Debian 12 packages that a CUDA build of allot needs beyond
# what a PyTorch GPU machine has: the -dev packages scripts/setup.sh installs, except LibTorch,
# Gloo and ONNX (the wheel's LibTorch brings its own LibTorch and Gloo; the GPU build switches
# ONNX export off), with every library they depend on, minus the C library and the compiler
# runtime that the build machine has. scripts/gpu/build.sh unpacks them into its build folder.
#
#   scripts/gpu/fetch_debs.sh [DIR]        (default: .gpu/debs; run on Debian 12, as any user)
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR="${1:-.gpu/debs}"

# Keep in step with scripts/setup.sh's PACKAGES (pkgconf: build machines may lack pkg-config).
WANT=(
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libssl-dev
  libcurl4-openssl-dev libcpp-httplib-dev libpcre2-dev libutf8proc-dev libginac-dev
  libsqlite3-dev libgtest-dev libgmock-dev libbenchmark-dev pkgconf
)
# What every glibc system with a C++ compiler has; unpacking Debian's copies would shadow the
# build machine's own (newer) ones.
BASE='^(libc6|libc6-dev|libc-dev-bin|libcrypt1|libcrypt-dev|libgcc-s1|libstdc\+\+6|gcc-12-base|linux-libc-dev|libnsl2|libnsl-dev|libtirpc3|libtirpc-dev|libtirpc-common|rpcsvc-proto|libdb5\.3|libcom-err2|libkeyutils1|catch2)$'

mapfile -t closure < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "${WANT[@]}" | grep -v '^[ <]' | sort -u |
  grep -Ev "$BASE")
mkdir -p "$DIR"
rm -f "$DIR"/*.deb
(cd "$DIR" && apt-get download "${closure[@]}" 2>&1 >/dev/null | grep -v unsandboxed >&2 || true)
got=$(find "$DIR" -name '*.deb' | wc -l)
if [[ "$got" -ne "${#closure[@]}" ]]; then
  echo "fetch_debs: apt-get download fetched $got of ${#closure[@]} packages into $DIR" >&2
  exit 1
fi
echo "fetch_debs: ${#closure[@]} packages, $(du -sh "$DIR" | cut -f1) in $DIR"
