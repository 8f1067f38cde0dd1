#!/bin/bash
# Materialise DEST (default build/linux) as a git repository for
# development: the base commit, then one commit per patch of the series,
# and a branch topic/NN-name where each topic series ends.
. "$(dirname "$0")/lib.sh"
dest=${1:-$TOP/build/linux}

"$TOP/workbench/fetch-base.sh"
base=$(base_tag)

if [ -d "$dest/.git" ]; then
	if [ -n "$(git -C "$dest" status --porcelain --untracked-files=no)" ] && [ "${FORCE:-0}" = 0 ]; then
		die "$dest has uncommitted changes; commit them or rerun with FORCE=1"
	fi
else
	log "cloning base into $dest"
	git clone -q --no-checkout "$SRC" "$dest"
	git -C "$dest" config core.abbrev 12
	# Commits made here are the series' own: checkpatch wants the
	# author to be the one who signs off.
	git -C "$dest" config user.name "NAPI Series Developers"
	git -C "$dest" config user.email napi-series@lists.invalid
fi
git -C "$dest" fetch -q "$SRC" "refs/tags/$base:refs/tags/$base"
git -C "$dest" checkout -q -f -B series "$base"
"$TOP/workbench/tree/apply.sh" "$dest"
# The topic branches, stacked, each with its cover letter as its
# description; rebases move them along (rebase.updateRefs).
git -C "$dest" config rebase.updateRefs true
git -C "$dest" for-each-ref --format='%(refname:short)' 'refs/heads/topic/' |
	xargs -r git -C "$dest" branch -q -D
mapfile -t commits < <(git -C "$dest" rev-list --reverse "$base"..HEAD)
mapfile -t names < <(series_patches)
for i in "${!names[@]}"; do
	topic=$(dirname "${names[$i]}")
	[ "$topic" != . ] || die "${names[$i]} is not in a topic folder"
	last_in_topic "${names[$i]}" "${names[$((i + 1))]:-}" || continue
	git -C "$dest" branch -f "topic/$topic" "${commits[$i]}"
	git -C "$dest" config "branch.topic/$topic.description" \
		"$("$TOP/workbench/tree/cover-description.py" <"$PATCHES/$topic/0000-cover-letter.patch")"
done
log "$dest: $(git -C "$dest" rev-list --count "$base"..HEAD) patches on $base"
