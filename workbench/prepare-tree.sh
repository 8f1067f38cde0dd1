#!/bin/bash
# Apply the series with git am onto the base in the scratch worktree
# APPLY, then move the build worktree SRC to the result. SRC only sees
# the files that differ, so unchanged files keep their timestamps and
# the incremental build stays incremental.
. "$(dirname "$0")/lib.sh"

"$TOP/workbench/fetch-base.sh"
base=$(git -C "$SRC" describe --tags --abbrev=0 --match 'base-*' base)
if [ ! -d "$APPLY/.git" ] && [ ! -f "$APPLY/.git" ]; then
	git -C "$SRC" worktree prune
	git -C "$SRC" worktree add -q --detach "$APPLY" "$base"
fi
git -C "$APPLY" checkout -q -f --detach "$base"
"$TOP/workbench/apply.sh" "$APPLY"
git -C "$SRC" checkout -q -f --detach "$(git -C "$APPLY" rev-parse HEAD)"
