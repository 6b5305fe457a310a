#!/usr/bin/env bash
# The user-facing docs hold what they promise: README.md stays under 10,000 characters, gives the
# two commands (.ci/run runs the test command, scripts/test.sh), and every relative link and
# backquoted repository path it names in the papers' table and the map exists (docs/results/*.md,
# the recipes, the folders); no file under docs/results refers to numbered sessions or issues.
#
#   tests/scripts/docs_test.sh REPO_ROOT
# Exit 0: passed; anything else: failed.
set -uo pipefail
root=$1
cd "$root" || exit 2
failed=0
fail() { echo "FAIL: $*"; failed=1; }

chars=$(python3 -c 'import sys; print(len(open("README.md", encoding="utf-8").read()))')
[[ $chars -le 10000 ]] || fail "README.md is $chars characters, over 10,000"

grep -qx 'scripts/quickstart.sh   # .*' README.md || fail "README.md lost the quickstart command"
grep -qx 'scripts/test.sh         # .*' README.md || fail "README.md lost the test command"
grep -q 'exec bash scripts/test.sh' .ci/run || fail ".ci/run no longer runs scripts/test.sh"

# Relative links: [text](path) outside http(s).
while read -r link; do
  [[ -e $link ]] || fail "README.md links $link, which does not exist"
done < <(grep -o '](\([^)]*\))' README.md | sed 's/^](\(.*\))$/\1/' | grep -v '^https\?:')
# Backquoted paths in the table rows: the recipes of the papers' table, and the map's folders
# with the sub-folders each row names (`envs/` ... `runtime/` is envs/runtime).
while read -r path; do
  [[ -e $path ]] || fail "README.md names $path, which does not exist"
done < <(python3 - <<'PY'
import re
for line in open("README.md", encoding="utf-8"):
    if not line.startswith("| `"):
        continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    names = re.findall(r"`([a-z0-9_.]+/[a-z0-9_./]*)`", line)
    first = re.findall(r"`([a-z0-9_.]+/)`", cells[0])
    for n in names:
        if n.startswith(("configs/", "docs/")) or n in first:
            print(n)
        elif first:
            print(first[0] + n)
PY
)

for paper in coger rlot r2 deeptool atlas; do
  [[ -f docs/results/$paper.md ]] || fail "docs/results/$paper.md is missing"
done
if hits=$(grep -nE '[Ss]essions? [0-9]+|[Ii]ssues? [0-9]+' docs/results/*.md README.md); then
  fail "work-history labels in the user docs:"$'\n'"$hits"
fi

[[ $failed == 0 ]] && echo "PASS: README.md and docs/results hold what they promise"
exit $failed
