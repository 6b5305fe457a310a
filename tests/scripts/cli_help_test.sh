#!/usr/bin/env bash
# Every `allot` subcommand's --help says what it does today. `allot eval` evaluates every env's
# policy and baselines (not only the RLoT navigator it was first written for): its help must name
# each env it evaluates, and the options that serve only one env must say which.
#
#   tests/scripts/cli_help_test.sh ALLOT_BINARY
# Exit 0: passed; anything else: failed.
set -uo pipefail
allot=$1
failed=0
fail() { echo "FAIL: $*"; failed=1; }

top=$("$allot" --help 2>&1) || fail "allot --help exited non-zero"
# Every subcommand listed by `allot --help` has a help page that exits 0 and a description.
subs=$(awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^[A-Z]/ {on = 0}' <<< "$top")
[[ -n $subs ]] || fail "allot --help lists no subcommands:"$'\n'"$top"
for sub in $subs; do
  if ! page=$("$allot" "$sub" --help 2>&1); then
    fail "allot $sub --help exited non-zero"
    continue
  fi
  [[ $(head -1 <<< "$page") =~ [a-zA-Z] ]] || fail "allot $sub --help has no description"
done

eval_help=$("$allot" eval --help 2>&1)
for env in rlot chain coger r2 deeptool atlas; do
  grep -q "$env" <<< "$(sed -n '1,/^Positionals:\|^Options:/p' <<< "$eval_help")" ||
    fail "allot eval --help's description does not name the $env env"
done
for opt in --trails --epsilon; do
  grep -A1 -- "$opt" <<< "$eval_help" | grep -q "rlot" ||
    fail "allot eval --help: $opt does not say it is RLoT's"
done

[[ $failed == 0 ]] && echo "PASS: every subcommand's help describes it"
exit $failed
