# Sourced by scripts/quickstart.sh and the tiny-world test scripts (tests/scripts): starts the
# processes of a tiny-world run, `allot serve` per tier and two rollout workers, on free ports.
# Each started PID is appended to the caller's array `pids` (the caller stops them) and a
# tier's server PID is kept in serve_pid[TIER]. The functions print what went wrong to stderr
# and return 1; the caller decides how to fail. Needs ALLOT_TW_POOL (the tier folders).
declare -gA serve_pid
tw_tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/quickstart_tools.py

tw_url_var_name() {  # TIER: the variable that holds the tier's URL, ALLOT_TW_<TIER>_URL
  echo "ALLOT_TW_$(echo "$1" | tr '[:lower:]' '[:upper:]' | tr -c 'A-Z0-9\n' '_')_URL"
}

tw_serve_start() {  # ALLOT LOGDIR TIER [serve options...]: starts serving $ALLOT_TW_POOL/TIER
  local allot=$1 logs=$2 t=$3
  shift 3
  rm -f "$logs/serve-$t.log"  # a restart must not read the last server's address
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$allot" serve --model "$ALLOT_TW_POOL/$t" --port 0 \
    --served-model-name "$t" --threads 1 "$@" > "$logs/serve-$t.log" 2>&1 &
  serve_pid[$t]=$!
  pids+=($!)
}

# LOGDIR TIER: waits until the tier answers, exports ALLOT_TW_<TIER>_URL and names that variable
# in tw_url_var.
tw_serve_wait() {
  local logs=$1 t=$2 url=""
  for _ in $(seq 600); do
    url=$(sed -n 's/^allot serve: listening on \(http[^ ]*\).*/\1/p' "$logs/serve-$t.log" \
      2> /dev/null)
    [[ -n $url ]] && break
    kill -0 "${serve_pid[$t]}" 2> /dev/null || break
    sleep 0.1
  done
  if [[ -z $url ]]; then
    echo "allot serve for $t did not start:" >&2
    tail -5 "$logs/serve-$t.log" >&2
    return 1
  fi
  if ! python3 "$tw_tools" wait-http "$url/health" 60; then
    echo "$t is not healthy at $url" >&2
    return 1
  fi
  tw_url_var=$(tw_url_var_name "$t")
  export "$tw_url_var=$url"
}

tw_serve() {  # ALLOT LOGDIR TIER [serve options...]: tw_serve_start, then tw_serve_wait
  tw_serve_start "$@" && tw_serve_wait "$2" "$3"
}

tw_start_workers() {  # ALLOT LOGDIR RECIPE: workers A and B, exported as ALLOT_QS_WORKER_A/B
  local allot=$1 logs=$2 recipe=$3 w
  for w in A B; do
    rm -f "$logs/worker-$w.addr"
    OMP_NUM_THREADS=1 "$allot" rollout-worker -c "$recipe" --listen 127.0.0.1:0 \
      --set rollout.worker.metrics_listen=127.0.0.1:0 \
      --set "rollout.worker.port_file=$logs/worker-$w.addr" > "$logs/worker-$w.log" 2>&1 &
    pids+=($!)
  done
  for w in A B; do
    for _ in $(seq 300); do [[ -s $logs/worker-$w.addr ]] && break; sleep 0.1; done
    if [[ ! -s $logs/worker-$w.addr ]]; then
      echo "rollout worker $w did not start:" >&2
      tail -5 "$logs/worker-$w.log" >&2
      return 1
    fi
    export "ALLOT_QS_WORKER_$w=$(tr -d '\n' < "$logs/worker-$w.addr")"
  done
}
