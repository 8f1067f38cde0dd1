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
# Tag names cannot hold '~' or ':'.
tag=$(echo "base-$version" | tr '~:' '__')

if [ "$(git -C "$REPO" log -1 --format=%s "refs/tags/$tag" 2>/dev/null)" = "base: $desc" ]; then
	log "base $tag already in $REPO"
	exit 0
fi

unpack=$CACHE/unpack
rm -rf "$unpack" && mkdir -p "$unpack" "$CACHE/debs"

if [ "$version" = local ]; then
	log "importing base from KERNEL_SRC=$KERNEL_SRC"
	rsync -a --exclude=.git "$KERNEL_SRC"/ "$unpack/linux/"
else
	deb=$CACHE/debs/${BASE_PKG}_${version}_all.deb
	if [ ! -f "$deb" ]; then
		(cd "$CACHE/debs" && apt-get download "$BASE_PKG=$version") ||
			die "base: $BASE_PKG $version is not in the archive (BASE_VERSION=newest takes the newest, unpinned)"
		# apt-get download escapes ':' and '~' inconsistently; normalise.
		[ -f "$deb" ] || mv "$CACHE"/debs/"${BASE_PKG}"_*"${version#*-}"*_all.deb "$deb"
	fi
	if [ -n "$sha256" ]; then
		echo "$sha256  $deb" | sha256sum -c --quiet - || die "base: sha256 mismatch for $deb"
	fi
	got=$(dpkg-deb -f "$deb" Version)
	[ "$got" = "$version" ] || die "base: $deb holds $BASE_PKG $got, not $version"
	log "unpacking $deb"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$unpack" ./usr/src/
	tar -xJf "$unpack/usr/src/$BASE_PKG.tar.xz" -C "$unpack"
	mv "$unpack/$BASE_PKG" "$unpack/linux"
fi

# The worktrees of the old repository go with it.
rm -rf "$REPO" "$CACHE/apply" "$CACHE/src-subset" "$CACHE/apply-subset"
mv "$unpack/linux" "$REPO"
rm -rf "$unpack"
cd "$REPO" || exit
git init -q -b base
git config gc.auto 0
git config core.abbrev 12
git add -A -f .
# Fixed dates so the base commit id only depends on the tree's content.
GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" \
	git commit -q -m "base: $desc"
git tag "$tag"
log "base $tag = $(git rev-parse HEAD)"
