#!/usr/bin/env bash
# Builds the tiny world (issue 15), allot's own small benchmark, from one seed:
#   1. the data: tasks with train/test splits, the fictional knowledge corpus the search tool
#      indexes, and the SFT data of the tiny models (`allot tinyworld generate`), checked byte
#      for byte against configs/tinyworld/manifest.json;
#   2. the model pool: tiny Qwen2 transformers trained from scratch with `allot sft` on
#      sft_train.jsonl (not yet: the tier configs and their recipes are still to come).
#
# Usage: scripts/make_tiny_world.sh [--out DIR] [--seed N] [--no-check]
#   --out DIR   where the data goes (default: runs/tinyworld/data, or $ALLOT_TINYWORLD_DIR)
#   --seed N    another world; the reference check only applies to the default seed 1
#   --no-check  skip the comparison with the reference manifest
set -euo pipefail
cd "$(dirname "$0")/.."

ALLOT=${ALLOT:-${ALLOT_BUILD_DIR:-build}/apps/allot}
out=${ALLOT_TINYWORLD_DIR:-runs/tinyworld/data}
seed=1
check=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --no-check) check=0; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "make_tiny_world.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done
if [[ ! -x "$ALLOT" ]]; then
  echo "make_tiny_world.sh: $ALLOT not found; build first (scripts/setup.sh)" >&2
  exit 1
fi

echo "==> [tiny world] data: seed $seed -> $out"
args=(tinyworld generate --out "$out" --seed "$seed")
if [[ $check == 1 && $seed == 1 ]]; then
  args+=(--check configs/tinyworld/manifest.json)
fi
"$ALLOT" "${args[@]}"

echo "==> [tiny world] models: not built by this script yet (the pool's tier recipes are still to come)"
