#!/usr/bin/env bash
# CUDA build of allot on a GPU machine that has PyTorch: LibTorch from the PyTorch wheel
# (torch.utils.cmake_prefix_path), NCCL from its nvidia-nccl wheel, and every other library
# from the Debian 12 packages scripts/gpu/fetch_debs.sh downloaded (unpacked into the build
# folder, nothing installed system-wide).
#
#   scripts/gpu/build.sh [BUILD_DIR] [TARGET...]     (default: build-gpu; all targets)
#   ALLOT_GPU_DEBS=.gpu/debs  JOBS=$(nproc)  PYTHON=python3
#
# Writes BUILD_DIR/env.sh, which sets LD_LIBRARY_PATH for running what it built.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BUILD="${1:-build-gpu}"
shift || true
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
DEBS="${ALLOT_GPU_DEBS:-.gpu/debs}"
[[ "$DEBS" = /* ]] || DEBS="$ROOT/$DEBS"
JOBS="${JOBS:-$(nproc)}"
PY="${PYTHON:-python3}"
DEPS="$BUILD/deps"
ARCH=x86_64-linux-gnu

die() { echo "gpu/build: $*" >&2; exit 1; }
step() { printf '==> [gpu/build] %s\n' "$*"; }

for tool in cmake ninja g++ "$PY"; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done
[[ -d "$DEBS" ]] && ls "$DEBS"/*.deb >/dev/null 2>&1 ||
  die "no .deb files in $DEBS (run scripts/gpu/fetch_debs.sh on a Debian 12 machine first)"

step "PyTorch"
read -r TORCH_VERSION TORCH_CUDA ABI TORCH_CMAKE TORCH_DIR < <("$PY" - <<'PYEOF'
import os, torch
print(torch.__version__, torch.version.cuda, int(torch._C._GLIBCXX_USE_CXX11_ABI),
      torch.utils.cmake_prefix_path, os.path.dirname(torch.__file__))
PYEOF
) || die "$PY cannot import torch"
echo "torch $TORCH_VERSION, CUDA $TORCH_CUDA, _GLIBCXX_USE_CXX11_ABI=$ABI, $TORCH_DIR"
[[ "$TORCH_CUDA" != None ]] || die "torch $TORCH_VERSION is a CPU build"
# Debian's libraries use the C++11 ABI (std::string, std::list); a wheel built with the old one
# cannot share a std::string with them.
[[ "$ABI" == 1 ]] || die "this torch uses the pre-C++11 libstdc++ ABI; Debian's libraries cannot link with it"

step "NCCL"
NCCL_LIB=$(find "$(dirname "$TORCH_DIR")/nvidia" -name 'libnccl.so*' 2>/dev/null | sort | head -n1)
[[ -n "$NCCL_LIB" ]] || die "no libnccl.so in the nvidia-nccl wheel next to torch"
export NCCL_HOME
NCCL_HOME=$(dirname "$(dirname "$NCCL_LIB")")
[[ -f "$NCCL_HOME/include/nccl.h" ]] || die "no nccl.h in $NCCL_HOME/include"
echo "$NCCL_LIB"

step "unpacking $(ls "$DEBS"/*.deb | wc -l) Debian packages into $DEPS"
rm -rf "$DEPS"
mkdir -p "$DEPS"
for deb in "$DEBS"/*.deb; do
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$deb" "$DEPS"
  else  # a .deb is an ar archive holding data.tar.*
    tmp=$(mktemp -d)
    (cd "$tmp" && ar x "$deb") && tar -xf "$tmp"/data.tar.* -C "$DEPS"
    rm -rf "$tmp"
  fi
done
LIBDIR="$DEPS/usr/lib/$ARCH"
# Debian's programs find Debian's libraries through wrappers, so that the build machine's own
# programs (cmake, the compiler) keep theirs. protoc passes the setting on to grpc_cpp_plugin.
mkdir -p "$DEPS/bin"
for tool in protoc pkgconf; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' \
    "$LIBDIR" "$DEPS/usr/bin/$tool" >"$DEPS/bin/$tool"
  chmod +x "$DEPS/bin/$tool"
done

# The wheel ships copies of fmt and protobuf headers in torch/include that differ from Debian's
# libraries: LibTorch is used through a copy of its CMake files whose include folder leaves
# those two out (the libraries themselves are the wheel's, through a link).
step "LibTorch view without the wheel's fmt and protobuf headers"
SDK="$BUILD/torch-sdk"
rm -rf "$SDK"
mkdir -p "$SDK/include"
cp -r "$TORCH_DIR/share" "$SDK/share"
ln -s "$TORCH_DIR/lib" "$SDK/lib"
for entry in "$TORCH_DIR"/include/*; do
  case "$(basename "$entry")" in fmt | google) ;; *) ln -s "$entry" "$SDK/include/" ;; esac
done
GLOO=ON
[[ -d "$TORCH_DIR/include/gloo" ]] || { GLOO=OFF; echo "no Gloo headers in the wheel: gloo backend off"; }

if command -v pkg-config >/dev/null; then
  PKG_CONFIG=$(command -v pkg-config)
else
  PKG_CONFIG="$DEPS/bin/pkgconf"
fi
export PKG_CONFIG_LIBDIR="$LIBDIR/pkgconfig:$DEPS/usr/share/pkgconfig"
export PKG_CONFIG_PATH=""
export PKG_CONFIG_SYSROOT_DIR="$DEPS"
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1

step "configure $BUILD"
cmake -S "$ROOT" -B "$BUILD" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$DEPS/usr;$SDK/share/cmake" \
  -DCMAKE_LIBRARY_ARCHITECTURE=$ARCH \
  -DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG" \
  -DProtobuf_PROTOC_EXECUTABLE="$DEPS/bin/protoc" \
  -DALLOT_WITH_CUDA=ON -DALLOT_WITH_GLOO=$GLOO -DALLOT_WITH_ONNX=OFF \
  -DALLOT_WERROR=OFF -DALLOT_USE_CCACHE=OFF \
  >"$BUILD/configure.log" 2>&1 || { tail -n 60 "$BUILD/configure.log"; die "configure failed"; }

# The wheel's libtorch.so exports its own copy of std::filesystem, and it comes before
# libstdc++ in allot's lookup order, so allot's calls bind to it; its remove_all(path, ec)
# calls through a null pointer (every test that removed a directory died). Preloading the
# system's libstdc++ puts it first.
STDCXX=$(ldconfig -p | awk '$1 == "libstdc++.so.6" && /x86-64/ {print $NF; exit}')
[[ -n "$STDCXX" ]] || STDCXX=$(g++ -print-file-name=libstdc++.so.6)
cat >"$BUILD/env.sh" <<ENVEOF
# Libraries of the CUDA build: Debian's unpacked packages, LibTorch, NCCL; libstdc++ first.
export LD_LIBRARY_PATH="$LIBDIR:$TORCH_DIR/lib:$(dirname "$NCCL_LIB")\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export LD_PRELOAD="$STDCXX\${LD_PRELOAD:+:\$LD_PRELOAD}"
ENVEOF

targets=("$@")
step "build ${targets[*]:-all} with $JOBS jobs"
# -k 0: a target that fails to compile does not stop the others.
if ((${#targets[@]})); then
  cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" -- -k 0
else
  cmake --build "$BUILD" -j "$JOBS" -- -k 0
fi

step "done: source $BUILD/env.sh before running $BUILD's programs"
