#!/usr/bin/env bash
# Builds the tiny world, allot's own small benchmark, from one seed:
#   1. the data: tasks with train/test splits, the fictional knowledge corpus the search tool
#      indexes, and the SFT data of the tiny models (`allot tinyworld generate`), checked byte
#      for byte against configs/tinyworld/manifest.json;
#   2. the model pool: tiny Qwen2 transformers (tiers t0 < t1 < t2) trained from random weights
#      by `allot sft` on sft_train.jsonl, one recipe per tier (configs/tinyworld/sft_<tier>.yaml,
#      model configs in configs/tinyworld/tiers/). With --practice each tier then trains a
#      second phase on sft_practice.jsonl, the arithmetic practice (configs/tinyworld/
#      practice.yaml, from the first phase's weights); the shipped pool has no second phase
#      (the practice pool was measured and not shipped: docs/results/tinyworld_pool.md). The weights
#      ship in assets/tinyworld/pool/<tier>/
#      with their sha256 in assets/tinyworld/pool/manifest.json; a tier whose shipped files match
#      the manifest is not trained again unless --retrain. Each tier trains on one CPU thread, so
#      a retrained tier is bit-identical to the shipped one on the same build; --jobs tiers train
#      side by side. Serve a tier with:
#        allot serve --model assets/tinyworld/pool/t0 --served-model-name t0 --port 8100
#      (configs/tinyworld/pool.yaml lists the endpoints with parameter counts and prices).
#   3. RLoT's logic-block model t1r: t1's weights trained a second phase on sft_rlot.jsonl
#      (configs/tinyworld/rlot_model.yaml: the arithmetic practice and the long sums' RLoT
#      calls), shipped beside the tiers in assets/tinyworld/pool/t1r; only the RLoT recipe
#      calls it. It starts once t1 is in the pool (trained by this run or shipped).
#
# Usage: scripts/make_tiny_world.sh [--out DIR] [--seed N] [--no-check] [--retrain]
#                                   [--tiers t0,t1,...] [--jobs N] [--pool DIR] [--data-only]
#                                   [--practice]
#        scripts/make_tiny_world.sh --check
#   --out DIR    where the data goes (default: runs/tinyworld/data, or $ALLOT_TINYWORLD_DIR)
#   --seed N     another world; the reference check only applies to the default seed 1, and
#                the pool is only (re)built for seed 1 unless --pool names another folder
#   --no-check   skip the comparison of the data with the reference manifest
#   --retrain    train every chosen tier even when its shipped weights match the manifest
#   --tiers LIST the tiers to build (default: all of them, t1r included)
#   --jobs N     tiers trained at the same time, one CPU thread each (default 2)
#   --pool DIR   where the weights and their manifest go (default: assets/tinyworld/pool)
#   --data-only  stop after the data
#   --practice   train the second phase too (use with --pool DIR: the shipped pool has none)
#   --manifest-only  write the pool manifest for the weights already in --pool (no training)
#   --check      only verify the weights in --pool against its manifest's sha256
#   Each training phase prints "phase k of N" with its step, rate, elapsed time and ETA every
#   $ALLOT_TW_PROGRESS_S seconds (default 30).
set -euo pipefail
cd "$(dirname "$0")/.."

ALLOT=${ALLOT:-${ALLOT_BUILD_DIR:-build}/apps/allot}
out=${ALLOT_TINYWORLD_DIR:-runs/tinyworld/data}
seed=1
check=1
retrain=0
jobs=2
pool=""
tiers="t0,t1,t2,t1r"  # the pool, smallest first, then RLoT's logic-block model
data_only=0
practice=0
check_only=0
manifest_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --no-check) check=0; shift ;;
    --retrain) retrain=1; shift ;;
    --tiers) tiers=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --pool) pool=$2; shift 2 ;;
    --data-only) data_only=1; shift ;;
    --practice) practice=1; shift ;;
    --check) check_only=1; shift ;;
    --manifest-only) manifest_only=1; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 0 ;;
    *) echo "make_tiny_world.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done
if [[ ! "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "make_tiny_world.sh: --jobs must be a positive integer, got '$jobs'" >&2
  exit 1
fi
IFS=',' read -r -a tier_list <<<"$tiers"
for t in "${tier_list[@]}"; do
  if [[ $t != t1r && ! -f configs/tinyworld/sft_$t.yaml ]]; then
    echo "make_tiny_world.sh: --tiers: no recipe configs/tinyworld/sft_$t.yaml" >&2
    exit 1
  fi
done
shipped=assets/tinyworld/pool
pool=${pool:-$shipped}
manifest=$pool/manifest.json

# Prints "<tier> <file>" for every file of the manifest's tiers whose sha256 differs (or that is
# missing), and "<tier> -" for a tier the manifest lacks. Empty output: all of them match.
mismatches() {  # <manifest> <tier>...
  python3 - "$@" <<'PY'
import hashlib, json, os, sys
path, tiers = sys.argv[1], sys.argv[2:]
try:
    manifest = json.load(open(path))
except (OSError, ValueError):
    manifest = {"tiers": []}
entries = {t["name"]: t for t in manifest.get("tiers", [])}
for tier in tiers:
    if tier not in entries:
        print(tier, "-")
        continue
    for name, f in entries[tier]["files"].items():
        file = os.path.join(os.path.dirname(path), tier, name)
        try:
            digest = hashlib.sha256(open(file, "rb").read()).hexdigest()
        except OSError:
            digest = ""
        if digest != f["sha256"]:
            print(tier, name)
PY
}

if [[ $check_only == 1 ]]; then
  echo "==> [tiny world] checking $pool against $manifest"
  bad=$(mismatches "$manifest" "${tier_list[@]}")
  if [[ -n "$bad" ]]; then
    echo "make_tiny_world.sh: these weights differ from $manifest (tier file; '-': not listed):" >&2
    echo "$bad" | sed 's/^/  /' >&2
    exit 1
  fi
  echo "every tier (${tier_list[*]}) matches $manifest"
  exit 0
fi

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
[[ $data_only == 1 ]] && exit 0
if [[ $seed != 1 && $pool == "$shipped" ]]; then
  echo "==> [tiny world] models: the shipped pool is seed 1's; pass --pool DIR to train on seed $seed"
  exit 0
fi

# Which tiers to train: those whose files do not match the manifest, or all with --retrain.
todo=()
[[ $manifest_only == 1 ]] && tier_list_train=() || tier_list_train=("${tier_list[@]}")
for t in "${tier_list_train[@]}"; do
  if [[ $retrain == 1 || -n "$(mismatches "$manifest" "$t")" ]]; then
    todo+=("$t")
  else
    echo "==> [tiny world] model $t: $pool/$t matches $manifest (--retrain trains it again)"
  fi
done

work=${ALLOT_TINYWORLD_RUNS:-runs/tinyworld/pool-runs}
mkdir -p "$work" "$pool"
# One thread per tier (sft.threads: 1 in every recipe) is what makes a retrained tier
# bit-identical; glibc's defaults return freed activations to the kernel after every step,
# which costs a third of the CPU time of these small models.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-4294967296}
export MALLOC_TRIM_THRESHOLD_=${MALLOC_TRIM_THRESHOLD_:-4294967296}
export MALLOC_TOP_PAD_=${MALLOC_TOP_PAD_:-536870912}
sft_phase() {  # <name> <what> <recipe> [--set ...]: one `allot sft` run into $work/<name>,
  # its log $work/<name>.log; says what failed, or the run's "done:" line
  # Every $progress_s seconds it prints its progress line from the log (`allot sft`'s bar
  # writes a plain line when its output is no terminal: step/total, rate, elapsed, eta).
  local name=$1 what=$2 recipe=$3 log=$work/$1.log k line waited=0
  shift 3
  "$ALLOT" sft -c "$recipe" --set run.output_dir="$work" --set run.name="tinyworld-$name" \
    --set logging.progress_bar=true "$@" >"$log" 2>&1 &
  local pid=$!
  k=$(flock "$work/.phases" sh -c 'echo x >> "$1"; wc -l < "$1"' _ "$work/.phases")
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    (( ++waited % progress_s == 0 )) || continue
    line=$(tr '\r' '\n' <"$log" | grep -E '[0-9]+/[0-9]+ \(' | tail -n 1)
    [[ -n $line ]] && echo "==> [tiny world] phase $k of $phases ($what): ${line#"${line%%[![:space:]]*}"}"
  done
  if ! wait "$pid"; then
    echo "make_tiny_world.sh: training $what failed; the log is $log:" >&2
    tail -n 20 "$log" >&2
    return 1
  fi
  echo "==> [tiny world] phase $k of $phases, model $what: $(grep -o 'done: .*' "$log" | head -n 1)"
}
train_tier() {  # <tier>: trains it under $work (two phases with --practice), copies it to $pool
  # (called where `set -e` does not apply, so every step checks its own status)
  # Phase 1 (configs/tinyworld/sft_<tier>.yaml): from random weights on sft_train.jsonl.
  # Phase 2, with --practice (configs/tinyworld/practice.yaml): from phase 1's model on
  # sft_practice.jsonl, the arithmetic practice.
  # t1r (configs/tinyworld/rlot_model.yaml): from the pool's t1, once this run has put it there,
  # on sft_rlot.jsonl.
  local t=$1 run=$work/tinyworld-$1 practice_run=$work/tinyworld-$1-practice
  rm -rf "$run" "$practice_run" || return 1
  local final=$run
  if [[ $t == t1r ]]; then
    while [[ " ${todo[*]} " == *" t1 "* && ! -f $work/t1.done ]]; do
      [[ -f $work/t1.failed ]] && { echo "make_tiny_world.sh: t1r needs t1, which failed" >&2; return 1; }
      sleep 5
    done
    sft_phase t1r "t1r (t1, then sft_rlot.jsonl)" configs/tinyworld/rlot_model.yaml \
      --set model.path="$pool/t1" --set sft.data="$out/sft_rlot.jsonl" || return 1
  else
    sft_phase "$t" "$t, phase 1" "configs/tinyworld/sft_$t.yaml" \
      --set sft.data="$out/sft_train.jsonl" || return 1
    if [[ $practice == 1 ]]; then
      final=$practice_run
      sft_phase "$t-practice" "$t, phase 2" configs/tinyworld/practice.yaml \
        --set model.path="$run/model" --set sft.data="$out/sft_practice.jsonl" || return 1
    fi
  fi
  rm -rf "$pool/$t.new" && mkdir -p "$pool/$t.new" && cp "$final/model/"* "$pool/$t.new/" &&
    rm -rf "$pool/$t" && mv "$pool/$t.new" "$pool/$t" || return 1
  touch "$work/$t.done"
}
if [[ ${#todo[@]} -gt 0 ]]; then
  echo "==> [tiny world] models: training ${todo[*]} ($jobs at a time, logs in $work)"
  # The largest tiers first, so that the small ones fill the other slots.
  # t1r waits for t1, so it is queued right after it: the slot t1 frees goes to t1r.
  rm -f "$work"/*.failed "$work"/*.done "$work/.phases"
  # The phases: one per tier, a second for each tier but t1r with --practice.
  phases=${#todo[@]}
  if [[ $practice == 1 ]]; then
    for t in "${todo[@]}"; do [[ $t == t1r ]] || phases=$((phases + 1)); done
  fi
  progress_s=${ALLOT_TW_PROGRESS_S:-30}
  order=()
  for ((i = ${#todo[@]} - 1; i >= 0; i--)); do
    [[ ${todo[$i]} == t1r ]] && continue
    order+=("${todo[$i]}")
    [[ ${todo[$i]} == t1 && " ${todo[*]} " == *" t1r "* ]] && order+=(t1r)
  done
  [[ " ${todo[*]} " == *" t1r "* && " ${order[*]} " != *" t1r "* ]] && order+=(t1r)
  for t in "${order[@]}"; do
    while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
    (train_tier "$t" || touch "$work/$t.failed") &
  done
  wait
  if compgen -G "$work/*.failed" >/dev/null; then exit 1; fi
fi

# The manifest: every shipped file's sha256 and size, each tier's parameter count and recipe.
previous=$pool/.previous-manifest.json
cp "$manifest" "$previous" 2>/dev/null || echo '{}' >"$previous"
python3 - "$pool" "$out/sft_train.jsonl" "$out/sft_practice.jsonl" "$out/sft_rlot.jsonl" \
  "$practice" "${tier_list[@]}" <<'PY'
import hashlib, json, os, struct, sys
pool, data, practice, rlot, with_practice, tiers = (sys.argv[1], sys.argv[2], sys.argv[3],
                                                    sys.argv[4], sys.argv[5] == "1", sys.argv[6:])
path = os.path.join(pool, "manifest.json")
try:
    old = {t["name"]: t for t in json.load(open(path)).get("tiers", [])}
except (OSError, ValueError):
    old = {}
def sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()
entries = dict(old)
for t in tiers:
    d = os.path.join(pool, t)
    with open(os.path.join(d, "model.safetensors"), "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    params = 0
    for name, v in header.items():
        if name != "__metadata__":
            n = 1
            for s in v["shape"]:
                n *= s
            params += n
    config = json.load(open(os.path.join(d, "config.json")))
    entries[t] = {
        "name": t,
        "recipe": ("configs/tinyworld/rlot_model.yaml" if t == "t1r"
                   else "configs/tinyworld/sft_%s.yaml" % t),
        "params": params,
        "hidden_size": config["hidden_size"],
        "num_hidden_layers": config["num_hidden_layers"],
        "files": {n: {"sha256": sha(os.path.join(d, n)), "bytes": os.path.getsize(os.path.join(d, n))}
                  for n in sorted(os.listdir(d))},
    }
    if t == "t1r":
        entries[t]["base"] = "t1"
    elif with_practice:
        entries[t]["practice_recipe"] = "configs/tinyworld/practice.yaml"
order = sorted(entries.values(), key=lambda e: e["params"])
manifest = {"sft_data_sha256": sha(data), "tiers": order}
if any(e["name"] == "t1r" for e in order):
    manifest["sft_rlot_sha256"] = sha(rlot)
if any("practice_recipe" in e for e in order):
    manifest["sft_practice_sha256"] = sha(practice)
with open(path + ".tmp", "w") as f:
    f.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
os.replace(path + ".tmp", path)
total = sum(f["bytes"] for e in order for f in e["files"].values())
print("==> [tiny world] %s: %s; %.1f MB in all" %
      (path, ", ".join("%s %d params" % (e["name"], e["params"]) for e in order), total / 1e6))
PY
for t in "${todo[@]}"; do
  if [[ -z "$(mismatches "$previous" "$t")" ]]; then
    echo "==> [tiny world] model $t: bit-identical to the weights it replaced"
  elif grep -q "\"$t\"" "$previous"; then
    echo "==> [tiny world] model $t: differs from the previous manifest's weights"
  fi
done
rm -f "$previous"
