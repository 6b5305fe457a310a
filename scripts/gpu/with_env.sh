#!/usr/bin/env bash
# Runs a command with the library path of scripts/gpu/build.sh's programs (BUILD/env.sh), for
# allot's programs only: Python's torch and transformers keep the machine's own libraries.
#
#   scripts/gpu/with_env.sh BUILD_DIR COMMAND [ARG...]
set -euo pipefail
BUILD="${1:?usage: with_env.sh BUILD_DIR COMMAND [ARG...]}"
shift
# shellcheck disable=SC1091
if [[ -f "$BUILD/env.sh" ]]; then source "$BUILD/env.sh"; fi
exec "$@"
