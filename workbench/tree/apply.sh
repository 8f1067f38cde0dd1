#!/bin/bash
# Apply patches/series with git am (no fuzz) onto the checked-out HEAD of
# the git tree DEST. A patch that does not apply fails naming the patch.
. "$(dirname "$0")/../lib.sh"
dest=$1

git -C "$dest" am --abort >/dev/null 2>&1 || true
am_log=$(mktemp)
trap 'rm -f "$am_log"' EXIT
n=0
while read -r patch; do
	[ -f "$PATCHES/$patch" ] || die "series lists $patch, which does not exist"
	if ! git -C "$dest" am -q --keep-cr "$PATCHES/$patch" >"$am_log" 2>&1; then
		cat "$am_log" >&2
		git -C "$dest" am --abort >/dev/null 2>&1 || true
		die "patch does not apply: $patch"
	fi
	n=$((n + 1))
done < <(series_patches)
log "applied $n patches"
