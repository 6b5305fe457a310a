#!/usr/bin/env bash
# The user-facing docs hold what they promise: README.md stays under 10,000 characters, gives the
# two commands (.ci/run runs the test command, scripts/test.sh), and every relative link and
# backquoted repository path it names in the papers' table and the map exists (docs/results/*.md,
# the recipes, the folders); no doc refers to numbered sessions or issues; docs/architecture.md
# stays an overview that links a README.md in every top-level folder.
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
if hits=$(grep -nE "[Ss]essions? [0-9]+|[Ii]ssues? [0-9]+|[Ii]ssue #|the issue's|this session" \
    README.md ./*/README.md docs/*.md docs/results/*.md); then
  fail "work-history labels in the docs:"$'\n'"$hits"
fi

# docs/architecture.md is the overview; each top-level source folder says in its README.md what
# it owns and may include, and the overview links every one of them.
arch=$(python3 -c 'print(len(open("docs/architecture.md", encoding="utf-8").read()))')
[[ $arch -le 15000 ]] || fail "docs/architecture.md is $arch characters, over the overview's 15,000"
for dir in apps core datasets envs llm math models rewards rollout tinyworld tools trainer proto \
    tests bench scripts configs; do
  [[ -f $dir/README.md ]] || { fail "$dir/ has no README.md"; continue; }
  grep -q '^## What it owns' "$dir/README.md" || fail "$dir/README.md does not say what it owns"
  grep -q '^## What it may' "$dir/README.md" || fail "$dir/README.md does not say what it may include"
  grep -q "(../$dir/README.md)" docs/architecture.md || fail "docs/architecture.md does not link $dir/README.md"
done

[[ $failed == 0 ]] && echo "PASS: README.md, the folder READMEs and docs hold what they promise"
exit $failed
