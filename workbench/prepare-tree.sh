#!/bin/bash
# Apply the series with git am onto the base in the scratch worktree
# APPLY, then move the build worktree SRC to the result. SRC only sees
# the files that differ, so unchanged files keep their timestamps and
# the incremental build stays incremental.
. "$(dirname "$0")/lib.sh"

"$TOP/workbench/fetch-base.sh"
worktree_at "$APPLY" "$(base_tag)"
"$TOP/workbench/tree/apply.sh" "$APPLY"
worktree_at "$SRC" "$(git -C "$APPLY" rev-parse HEAD)"
