#!/bin/bash
# Materialise DEST (default build/linux) as a git repository for
# development: the base commit, then one commit per patch of the series.
. "$(dirname "$0")/lib.sh"
dest=${1:-$TOP/build/linux}

"$TOP/workbench/fetch-base.sh"
base=$(base_tag)

if [ -d "$dest/.git" ]; then
	if [ -n "$(git -C "$dest" status --porcelain --untracked-files=no)" ] && [ -z "${FORCE:-}" ]; then
		die "$dest has uncommitted changes; commit them or rerun with FORCE=1"
	fi
else
	log "cloning base into $dest"
	git clone -q --no-checkout "$SRC" "$dest"
	git -C "$dest" config core.abbrev 12
fi
git -C "$dest" fetch -q "$SRC" "refs/tags/$base:refs/tags/$base"
git -C "$dest" checkout -q -f -B series "$base"
"$TOP/workbench/apply.sh" "$dest"
cover=$PATCHES/0000-cover-letter.patch
if [ -f "$cover" ]; then
	git -C "$dest" config branch.series.description "$("$TOP/workbench/cover-description.py" <"$cover")"
fi
log "$dest: $(git -C "$dest" rev-list --count "$base"..HEAD) patches on $base"
