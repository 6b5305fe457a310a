# Sourced by the script tests (quickstart_test.sh, quickstart_rlot_test.sh,
# r2_allocator_data_test.sh) after they set root: skips (exit 77) without the shipped t0 tier,
# makes tmp (removed at exit) and tmp/pool, where the smallest tier stands in for t0 < t1 < t2
# and RLoT's t1r (fast to start).
tier=$root/assets/tinyworld/pool/t0
if [[ ! -f $tier/config.json ]]; then
  echo "SKIP: no shipped tier in $tier"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/pool"
for t in t0 t1 t2 t1r; do ln -s "$tier" "$tmp/pool/$t"; done
