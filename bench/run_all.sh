#!/usr/bin/env bash
# Every CPU benchmark in bench/ next to its comparison, several alternating rounds each, as one
# dated table in docs/benchmarks.md ("Last measured"). Uses the binaries as built in BUILD.
#
#   [ROUNDS=N] bench/run_all.sh [BUILD] [--rounds N] [--only grpo,dqn,llm,tokenizer,rollout,serve]
#                    [--no-write | --out FILE]
#
# Defaults: 5 rounds; per round GRPO 3 timed updates per side, DQN 2 s per side, tokenizer 2 s
# per side, 20,000 LLM client requests (aiohttp 4,000), 50,000 + 5,000 rollout trajectories,
# serve at 1, 8 and 32 clients. A round of all six takes about 2 minutes on the 2-core machine,
# the whole run 10-12 minutes. Needs python3-torch, python3-aiohttp (the scripts install them as root) and
# tests/js/node_modules (scripts/setup.sh).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/run_all.py" "$@"
