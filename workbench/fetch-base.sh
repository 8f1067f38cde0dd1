#!/bin/bash
# Fetch the pinned Debian linux-source package, verify it and turn it into
# a git repository with one deterministic base commit at $REPO, tagged
# base-<the version really unpacked>.
#   BASE_VERSION=newest  the newest linux-source-6.12 in the archive instead
#                        of the pin (its sha256 is not pinned)
#   KERNEL_SRC=/path     a user's own 6.12.y tree as the base (base-local)
. "$(dirname "$0")/lib.sh"

if [ -n "${KERNEL_SRC:-}" ]; then
	[ -f "$KERNEL_SRC/Makefile" ] || die "KERNEL_SRC=$KERNEL_SRC is not a kernel tree"
	version=local
	# The path and, for a git tree, its commit: a changed tree is re-imported.
	desc="local tree $KERNEL_SRC$(git -C "$KERNEL_SRC" rev-parse -q --verify HEAD 2>/dev/null | sed 's/^/ at /')"
else
	version=$BASE_VERSION sha256=$BASE_SHA256
	if [ "$version" = newest ]; then
		version=$(newest_base_version)
		[ -n "$version" ] || die "base: no $BASE_PKG in the archive (apt-get update?)"
		sha256=
		log "BASE_VERSION=newest: $BASE_PKG $version (sha256 not pinned)"
	fi
	desc="Debian $BASE_PKG $version"
fi
tag=$(tag_name base "$version")
# The worktrees of the old repository go with it.
import=("$TOP/workbench/tree/import-source.sh" --drop "$CACHE/apply" --drop "$CACHE/src-subset"
	--drop "$CACHE/apply-subset" "$REPO" "$tag" "$desc")
if [ "$version" = local ]; then
	exec "${import[@]}" --tree "$KERNEL_SRC"
fi
MISSING_HINT="BASE_VERSION=newest takes the newest, unpinned" exec "${import[@]}" "$BASE_PKG" "$version" "$sha256"
