#!/usr/bin/env bash
# Every quickstart recipe (configs/quickstart/*.yaml) validates against its engine: the schema
# (an unknown key is an error) and the check `allot train` makes before a run (a section or knob
# its trainer.algorithm does not read is an error), so a recipe that rots fails here in seconds
# rather than minutes into scripts/quickstart.sh. The recipes are read with their defaults (no
# ALLOT_* variables set), as a fresh checkout would read them.
#
#   tests/scripts/quickstart_recipes_test.sh ALLOT_BINARY
# Exit 0: passed; anything else: failed.
set -uo pipefail
allot=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(ALLOT_[A-Z0-9_]*\)=.*/\1/p')

failed=0
recipes=(configs/quickstart/*.yaml)
for recipe in "${recipes[@]}"; do
  if out=$("$allot" config validate "$recipe" 2>&1); then
    echo "ok   $recipe"
  else
    echo "FAIL $recipe:"
    echo "$out" | sed 's/^/     /'
    failed=1
  fi
done
# The recipes the quickstart documents are all there (a rename would leave README stale).
for name in chain coger rlot r2 atlas deeptool; do
  [[ -f configs/quickstart/$name.yaml ]] || { echo "FAIL configs/quickstart/$name.yaml is missing"; failed=1; }
done

# The check itself catches a key the engine ignores: a grpo recipe with a dqn section, a dqn
# recipe with a grpo section. Without the engine check in `allot config validate` both pass.
expect_refused() {  # RECIPE OVERRIDE WORDS
  local recipe=$1 override=$2 words=$3 out
  if out=$("$allot" config validate "$recipe" --set "$override" 2>&1); then
    echo "FAIL $recipe --set $override validated; expected: $words"
    failed=1
  elif ! grep -q "$words" <<< "$out"; then
    echo "FAIL $recipe --set $override: the error does not say '$words':"
    echo "$out" | sed 's/^/     /'
    failed=1
  else
    echo "ok   $recipe --set $override is refused"
  fi
}
expect_refused configs/quickstart/r2.yaml dqn.batch_size=4 "section 'dqn' is not read by the grpo engine"
expect_refused configs/quickstart/rlot.yaml grpo.group_size=4 "section 'grpo' is not read by the dqn engine"
expect_refused configs/quickstart/atlas.yaml env.atlas.no_such_key=1 "no_such_key"

# --help prints the script's whole option list (it once printed a fixed line range that new
# header lines pushed the last options out of).
help=$(bash scripts/quickstart.sh --help 2>&1)
for option in --recipe --no-setup --steps --eval-items --pool --out --set; do
  grep -q -- "^#   $option " <<< "$help" || { echo "FAIL quickstart.sh --help lacks $option"; failed=1; }
done
[[ $failed == 0 ]] && echo "PASS: ${#recipes[@]} recipes validate"
exit "$failed"
