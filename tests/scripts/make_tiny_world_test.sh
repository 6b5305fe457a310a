#!/usr/bin/env bash
# scripts/make_tiny_world.sh's pool stage end to end on the smallest tier, shortened: an `allot`
# shim passes every `allot sft` two steps (--set trainer.total_steps=2), so both phases run for
# real in seconds. Checks that with --practice phase 2 (configs/tinyworld/practice.yaml) starts
# from phase 1's model and trains on sft_practice.jsonl, that the pool receives phase 2's model
# (not phase 1's), that the manifest records it and the practice data, that a second run
# without --retrain trains nothing, and that without --practice the pool gets phase 1's model
# and a manifest that names no practice. Then RLoT's t1r from a freshly trained t1.
#   tests/scripts/make_tiny_world_test.sh ALLOT_BINARY
set -uo pipefail
allot=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$tmp/allot" <<SHIM
#!/usr/bin/env bash
if [[ \$1 == sft ]]; then
  "$allot" "\$@" --set trainer.total_steps=2 --set checkpoint.every=1 --set sft.optim.warmup_steps=1
  code=\$?
  sleep 2  # past one progress period (ALLOT_TW_PROGRESS_S=1): the bar's last line gets printed
  exit \$code
fi
exec "$allot" "\$@"
SHIM
chmod +x "$tmp/allot"
cd "$root" || exit 1
run() {
  ALLOT=$tmp/allot ALLOT_TINYWORLD_DIR=$tmp/data ALLOT_TINYWORLD_RUNS=$tmp/runs \
    ALLOT_TW_PROGRESS_S=1 bash scripts/make_tiny_world.sh --tiers t0 --pool "$tmp/pool" "$@" \
    >"$tmp/out.log" 2>&1
}
run --retrain --practice ||
  { code=$?; tail -n 30 "$tmp/out.log"; fail "make_tiny_world.sh --retrain --practice exited $code"; }
# Each phase says which of how many it is, and while it trains its step, elapsed time and ETA.
grep -q "phase 2 of 2, model t0, phase 2: done" "$tmp/out.log" ||
  fail "no 'phase 2 of 2' line: $(grep '==>' "$tmp/out.log")"
grep -Eq "phase 1 of 2 \(t0, phase 1\): .*[0-9]+/[0-9]+ .*elapsed .* eta " "$tmp/out.log" ||
  fail "no progress line with an ETA for phase 1: $(grep '==>' "$tmp/out.log")"
phase1=$tmp/runs/tinyworld-t0/model/model.safetensors
phase2=$tmp/runs/tinyworld-t0-practice/model/model.safetensors
[[ -f $phase1 && -f $phase2 ]] || fail "no model of phase 1 or 2 under $tmp/runs"
grep -q "sft_practice.jsonl" "$tmp/runs/t0-practice.log" ||
  fail "phase 2 did not train on sft_practice.jsonl: $(head -n 5 "$tmp/runs/t0-practice.log")"
grep -q "$tmp/runs/tinyworld-t0/model" "$tmp/runs/tinyworld-t0-practice/config.yaml" ||
  fail "phase 2 did not start from phase 1's model"
cmp -s "$phase1" "$phase2" && fail "phase 2 changed nothing"
cmp -s "$phase2" "$tmp/pool/t0/model.safetensors" || fail "the pool's t0 is not phase 2's model"
python3 - "$tmp/pool/manifest.json" "$tmp/data/sft_practice.jsonl" <<'PY' || exit 1
import hashlib, json, sys
m = json.load(open(sys.argv[1]))
want = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
if m.get("sft_practice_sha256") != want:
    sys.exit("FAIL: the manifest's sft_practice_sha256 is not the practice data's")
t0 = [t for t in m["tiers"] if t["name"] == "t0"]
if not t0 or t0[0].get("practice_recipe") != "configs/tinyworld/practice.yaml":
    sys.exit("FAIL: the manifest does not name t0's practice recipe")
PY
run --practice ||
  { code=$?; tail -n 30 "$tmp/out.log"; fail "the second make_tiny_world.sh exited $code"; }
grep -q "model t0: .* matches" "$tmp/out.log" || fail "the second run trained t0 again"

run --retrain || { code=$?; tail -n 30 "$tmp/out.log"; fail "make_tiny_world.sh --retrain exited $code"; }
[[ -d $tmp/runs/tinyworld-t0-practice ]] && fail "without --practice a practice phase ran"
cmp -s "$phase1" "$tmp/pool/t0/model.safetensors" || fail "without --practice the pool's t0 is not phase 1's model"
grep -q practice "$tmp/pool/manifest.json" && fail "without --practice the manifest names a practice phase"

# RLoT's logic-block model: t1r trains on sft_rlot.jsonl from the pool's t1, after this run has
# trained t1 (it must wait for it), and ships with its recipe, base and data in the manifest.
ALLOT=$tmp/allot ALLOT_TINYWORLD_DIR=$tmp/data ALLOT_TINYWORLD_RUNS=$tmp/runs \
  bash scripts/make_tiny_world.sh --tiers t1,t1r --pool "$tmp/pool" --retrain >"$tmp/out.log" 2>&1 ||
  { code=$?; tail -n 30 "$tmp/out.log"; fail "make_tiny_world.sh --tiers t1,t1r exited $code"; }
grep -q "sft_rlot.jsonl" "$tmp/runs/t1r.log" ||
  fail "t1r did not train on sft_rlot.jsonl: $(head -n 5 "$tmp/runs/t1r.log")"
grep -q "model.path: $tmp/pool/t1\$" "$tmp/runs/tinyworld-t1r/config.yaml" ||
  grep -q "path: $tmp/pool/t1\$" "$tmp/runs/tinyworld-t1r/config.yaml" ||
  fail "t1r did not start from the pool's t1"
cmp -s "$tmp/runs/tinyworld-t1/model/model.safetensors" "$tmp/pool/t1/model.safetensors" ||
  fail "the pool's t1 is not this run's"
cmp -s "$tmp/pool/t1/model.safetensors" "$tmp/pool/t1r/model.safetensors" && fail "t1r is t1"
cmp -s "$tmp/runs/tinyworld-t1r/model/model.safetensors" "$tmp/pool/t1r/model.safetensors" ||
  fail "the pool's t1r is not this run's"
python3 - "$tmp/pool/manifest.json" "$tmp/data/sft_rlot.jsonl" <<'PY' || exit 1
import hashlib, json, sys
m = json.load(open(sys.argv[1]))
want = hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
if m.get("sft_rlot_sha256") != want:
    sys.exit("FAIL: the manifest's sft_rlot_sha256 is not the logic-block model's data")
t1r = [t for t in m["tiers"] if t["name"] == "t1r"]
if not t1r or t1r[0].get("recipe") != "configs/tinyworld/rlot_model.yaml" or t1r[0].get("base") != "t1":
    sys.exit("FAIL: the manifest does not name t1r's recipe and base: %s" % t1r)
PY
echo "PASS: --practice trains phase 2 from phase 1 and ships it; without it, phase 1 ships;" \
  "t1r trains on sft_rlot.jsonl from this run's t1"
