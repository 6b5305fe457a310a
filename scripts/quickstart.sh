#!/usr/bin/env bash
# Sets up (dependencies and build), then runs the main job on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

ALLOT=${ALLOT_BUILD_DIR:-build}/apps/allot
echo
echo "==> [quickstart] allot config validate configs/quickstart.yaml"
"$ALLOT" config validate configs/quickstart.yaml
echo "==> [quickstart] allot train --config configs/quickstart.yaml"
run_name="quickstart-$(date +%Y%m%d-%H%M%S)"
"$ALLOT" train --config configs/quickstart.yaml --name "$run_name" "$@"
