# Sourced by the tiny-world result tests (tinyworld_r2_test.sh, tinyworld_deeptool_test.sh): the
# processes they start, `allot serve` per tier and two rollout workers, stopped on every way
# out. The caller has set: allot (the binary), out (the run folder, with logs/), ALLOT_TW_POOL,
# and trap_rm ("" or a folder to remove at exit).
pids=()
declare -A serve_pid
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

serve() {  # serve TIER [serve options...]: starts the tier, exports ALLOT_TW_<TIER>_URL
  local t=$1 url="" var
  shift
  rm -f "$out/logs/serve-$t.log"  # a restart must not read the last server's address
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$allot" serve --model "$ALLOT_TW_POOL/$t" --port 0 \
    --served-model-name "$t" --threads 1 "$@" > "$out/logs/serve-$t.log" 2>&1 &
  serve_pid[$t]=$!
  pids+=($!)
  for _ in $(seq 600); do
    url=$(sed -n 's/^allot serve: listening on \(http[^ ]*\).*/\1/p' "$out/logs/serve-$t.log" 2> /dev/null)
    [[ -n $url ]] && break
    kill -0 "${serve_pid[$t]}" 2> /dev/null || break
    sleep 0.1
  done
  [[ -n $url ]] || { tail -5 "$out/logs/serve-$t.log"; fail "allot serve for $t did not start"; }
  python3 scripts/quickstart_tools.py wait-http "$url/health" 60 || fail "$t not healthy"
  var=ALLOT_TW_$(echo "$t" | tr '[:lower:]' '[:upper:]')_URL
  export "$var=$url"
}

restart() {  # restart TIER [serve options...]: stops the tier's server, serves it again
  local t=$1
  kill -TERM "${serve_pid[$t]}"
  wait "${serve_pid[$t]}" 2> /dev/null
  serve "$@"
}

start_workers() {  # start_workers RECIPE: rollout workers A and B, as ALLOT_QS_WORKER_A/B
  local w
  for w in A B; do
    OMP_NUM_THREADS=1 "$allot" rollout-worker -c "$1" --listen 127.0.0.1:0 \
      --set rollout.worker.metrics_listen=127.0.0.1:0 \
      --set "rollout.worker.port_file=$out/logs/worker-$w.addr" > "$out/logs/worker-$w.log" 2>&1 &
    pids+=($!)
  done
  for w in A B; do
    for _ in $(seq 300); do [[ -s $out/logs/worker-$w.addr ]] && break; sleep 0.1; done
    [[ -s $out/logs/worker-$w.addr ]] || fail "rollout worker $w did not start"
    export "ALLOT_QS_WORKER_$w=$(tr -d '\n' < "$out/logs/worker-$w.addr")"
  done
}
