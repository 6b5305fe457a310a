#!/usr/bin/env bash
# Every `allot` subcommand's --help, nested ones included (`config validate`, `r2
# allocator-data`, ...), exits 0 and opens with what the command does. `allot eval` evaluates every env's
# policy and baselines (not only the RLoT navigator it was first written for): its help must name
# each env it evaluates, and the options that serve only one env must say which.
#
#   tests/scripts/cli_help_test.sh ALLOT_BINARY
# Exit 0: passed; anything else: failed.
set -uo pipefail
allot=$1
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# The subcommands a help page lists, one per line: the names under "Subcommands:".
list_subs() { awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^[A-Z]/ {on = 0}'; }
# A listed subcommand without a description is a bare name on its line.
undescribed() { awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z][^ ]*$/ {print $1} on && /^[A-Z]/ {on = 0}'; }

top=$("$allot" --help 2>&1) || fail "allot --help exited non-zero"
[[ -n $(list_subs <<< "$top") ]] || fail "allot --help lists no subcommands:"$'\n'"$top"
# Every subcommand listed by `allot --help`, and every one those list in turn (`config
# validate`, `tinyworld generate`, `r2 allocator-data`, ...), has a help page that exits 0 and
# opens with its description: CLI11 starts the page of a subcommand without one at "Usage:".
check_page() {  # the words of a command line below `allot`
  local page sub bare
  if ! page=$("$allot" "$@" --help 2>&1); then
    fail "allot $* --help exited non-zero"
    return
  fi
  [[ $(head -1 <<< "$page") =~ [a-zA-Z] && $(head -1 <<< "$page") != Usage:* ]] ||
    fail "allot $* --help has no description"
  for bare in $(undescribed <<< "$page"); do fail "allot $* --help lists $bare without a description"; done
  for sub in $(list_subs <<< "$page"); do check_page "$@" "$sub"; done
}
for bare in $(undescribed <<< "$top"); do fail "allot --help lists $bare without a description"; done
for sub in $(list_subs <<< "$top"); do check_page "$sub"; done

eval_help=$("$allot" eval --help 2>&1)
for env in rlot chain coger r2 deeptool atlas; do
  grep -q "$env" <<< "$(sed -n '1,/^Positionals:\|^Options:/p' <<< "$eval_help")" ||
    fail "allot eval --help's description does not name the $env env"
done
for opt in --trails --epsilon; do
  grep -A1 -- "$opt" <<< "$eval_help" | grep -q "rlot" ||
    fail "allot eval --help: $opt does not say it is RLoT's"
done

[[ $failed == 0 ]] && echo "PASS: every subcommand's help, nested ones included, describes it"
exit $failed
