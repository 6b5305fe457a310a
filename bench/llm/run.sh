#!/usr/bin/env bash
# LLM client benchmark: allot's C++ client against a Python asyncio (aiohttp) client, in the
# same run, both against the same loopback server that answers at once.
#
#   bench/llm/run.sh [BUILD_DIR]      (default: build; ALLOT_BUILD_DIR also works)
#
# Reports requests/s per core (requests divided by the client process's user+sys CPU seconds,
# which stays meaningful on a busy machine), client CPU overhead per request, and peak RSS with
# 4,096 requests in flight. Targets: >= 5x Python per core, < 50 us per request, < 200 MB RSS.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-${ALLOT_BUILD_DIR:-build}}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
N_CPP="${N_CPP:-50000}"
N_PY="${N_PY:-10000}"
CONC="${CONC:-64}"
PY=/usr/bin/python3

if ! "$PY" -c 'import aiohttp' 2>/dev/null; then
  echo "installing python3-aiohttp (Debian) ..." >&2
  SUDO=""
  [[ "$(id -u)" != 0 ]] && SUDO="sudo"
  $SUDO apt-get install -y python3-aiohttp >/dev/null
fi

# ALLOT_BENCH_NO_BUILD=1 skips the build (for a tree that is built under a lock of its own).
if [[ "${ALLOT_BENCH_NO_BUILD:-0}" != 1 ]]; then
  cmake --build "$BUILD" --target allot_llm_bench allot_llm_canned_server -- -j2 >/dev/null
fi
BENCH="$BUILD/bench/llm/allot_llm_bench"
SERVER="$BUILD/bench/llm/allot_llm_canned_server"

OUT="$(mktemp -d)"
"$SERVER" --threads 1 >"$OUT/server.txt" &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true; rm -rf "$OUT"' EXIT
for _ in $(seq 50); do
  grep -q PORT "$OUT/server.txt" 2>/dev/null && break
  sleep 0.1
done
PORT="$(awk '/PORT/{print $2}' "$OUT/server.txt")"
URL="http://127.0.0.1:$PORT"
echo "server: $URL (canned /v1/completions, keep-alive)"

# Short warm-up for both, then the measured runs.
"$BENCH" --url "$URL" --requests 2000 --concurrency "$CONC" >/dev/null
"$BENCH" --url "$URL" --requests "$N_CPP" --concurrency "$CONC" --threads 1 | tee "$OUT/cpp.json"
"$PY" "$ROOT/bench/llm/aiohttp_client.py" --url "$URL" --requests "$N_PY" --concurrency "$CONC" |
  tee "$OUT/py.json"
"$BENCH" --url "$URL" --requests 12288 --concurrency 4096 --threads 1 | tee "$OUT/cpp4096.json"

"$PY" - "$OUT" <<'PYEOF'
import json, sys, os
d = sys.argv[1]
cpp = json.load(open(os.path.join(d, "cpp.json")))
py = json.load(open(os.path.join(d, "py.json")))
big = json.load(open(os.path.join(d, "cpp4096.json")))
ratio = cpp["req_per_cpu_s"] / py["req_per_cpu_s"]
def mark(ok): return "PASS" if ok else "MISS"
print()
print(f"requests/s per core   allot {cpp['req_per_cpu_s']:>8.0f}   python-aiohttp {py['req_per_cpu_s']:>8.0f}"
      f"   ratio {ratio:5.1f}x  (target >= 5x)   {mark(ratio >= 5)}")
print("  like for like: the same figure; both clients run one thread against the same canned server"
      " with 64 requests in flight; what differs is the client: libcurl's multi interface driven"
      " from C++ vs asyncio + aiohttp")
print(f"wall requests/s       allot {cpp['req_per_s']:>8.0f}   python-aiohttp {py['req_per_s']:>8.0f}"
      f"   (server and clients share this machine's cores)")
print(f"client CPU/request    allot {cpp['cpu_us_per_req']:>8.1f} us   python-aiohttp {py['cpu_us_per_req']:>8.1f} us"
      f"   (target < 50 us)   {mark(cpp['cpu_us_per_req'] < 50)}")
print(f"4096 in flight        peak RSS {big['max_rss_mb']:.1f} MB, {big['cpu_us_per_req']:.1f} us/request,"
      f" errors {big['errors']}   (target < 200 MB)   {mark(big['max_rss_mb'] < 200)}")
PYEOF
