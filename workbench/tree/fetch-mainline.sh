#!/bin/bash
# Fetch the pinned mainline source (Debian sid's linux-source-N.M,
# MAINLINE_VERSION / MAINLINE_SHA256 in lib.sh) into MAINLINE_REPO, a git
# repository tagged mainline-<version>. MAINLINE_VERSION=newest takes
# sid's newest, unpinned.
. "$(dirname "$0")/../lib.sh"
version=$MAINLINE_VERSION sha256=$MAINLINE_SHA256
if [ "$version" = newest ]; then
	read -r pkg version < <(newest_mainline) || die "no linux-source-N.M in sid"
	sha256=
	log "MAINLINE_VERSION=newest: $pkg $version (sha256 not pinned)"
else
	# 7.2.13-1 is linux-source-7.2.
	pkg=linux-source-$(echo "$version" | cut -d. -f1-2)
fi
# Sid's pool drops a version soon after the next one arrives.
MISSING_HINT="MAINLINE_VERSION=newest takes sid's newest, unpinned" \
	exec "$TOP/workbench/tree/import-source.sh" --pool "$MAINLINE_REPO" "$(tag_name mainline "$version")" \
	"Debian $pkg $version" "$pkg" "$version" "$sha256"
