# Sourced by the tiny-world test scripts (tinyworld_r2_test.sh, tinyworld_deeptool_test.sh,
# r2_allocator_data_test.sh): the processes they start, `allot serve` per tier and two rollout
# workers (scripts/tinyworld_procs.sh, which scripts/quickstart.sh uses too), stopped on every
# way out. The caller has set: root (the repository), allot (the binary), out (the run folder,
# with logs/), ALLOT_TW_POOL, and trap_rm ("" or a folder to remove at exit).
pids=()
cleanup() {
  local code=$?
  [[ ${#pids[@]} -gt 0 ]] && kill -TERM "${pids[@]}" 2> /dev/null
  wait 2> /dev/null
  [[ -n $trap_rm ]] && rm -rf "$trap_rm"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() { echo "FAIL: $*"; exit 1; }

# shellcheck source=scripts/tinyworld_procs.sh
source "$root/scripts/tinyworld_procs.sh"  # tw_serve, tw_start_workers

serve() {  # serve TIER [serve options...]: starts the tier, exports ALLOT_TW_<TIER>_URL
  tw_serve "$allot" "$out/logs" "$@" || fail "allot serve for $1 did not start"
}

restart() {  # restart TIER [serve options...]: stops the tier's server, serves it again
  local t=$1
  kill -TERM "${serve_pid[$t]}"
  wait "${serve_pid[$t]}" 2> /dev/null
  serve "$@"
}

start_workers() {  # start_workers RECIPE: rollout workers A and B, as ALLOT_QS_WORKER_A/B
  tw_start_workers "$allot" "$out/logs" "$1" || fail "the rollout workers did not start"
}
