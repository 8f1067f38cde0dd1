#!/bin/bash
# Fetch the pinned Debian linux-source package, verify it and turn it into
# a git repository with one deterministic base commit at $SRC.
# KERNEL_SRC=/path imports a user's own 6.12.y tree as the base instead.
. "$(dirname "$0")/lib.sh"

base_tag() {
	if [ -n "${KERNEL_SRC:-}" ]; then echo "base-local"; else echo "base-$BASE_VERSION" | tr '~' '_'; fi
}
TAG=$(base_tag)

if git -C "$SRC" rev-parse -q --verify "refs/tags/$TAG" >/dev/null 2>&1; then
	log "base $TAG already in $SRC"
	exit 0
fi

unpack=$CACHE/unpack
rm -rf "$unpack" && mkdir -p "$unpack" "$CACHE/debs"

if [ -n "${KERNEL_SRC:-}" ]; then
	[ -f "$KERNEL_SRC/Makefile" ] || die "KERNEL_SRC=$KERNEL_SRC is not a kernel tree"
	log "importing base from KERNEL_SRC=$KERNEL_SRC"
	rsync -a --exclude=.git "$KERNEL_SRC"/ "$unpack/linux/"
	desc="local tree $KERNEL_SRC"
else
	deb=$CACHE/debs/${BASE_PKG}_${BASE_VERSION}_all.deb
	if [ ! -f "$deb" ]; then
		(cd "$CACHE/debs" && apt-get download "$BASE_PKG=$BASE_VERSION") || {
			newest=$(apt-cache madison "$BASE_PKG" | awk 'NR==1 {print $3}')
			[ -n "$newest" ] || die "no $BASE_PKG in the archive at all"
			printf '\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' >&2
			printf '!!! pinned %s %s is gone from the archive\n' "$BASE_PKG" "$BASE_VERSION" >&2
			printf '!!! falling back to the newest: %s (sha256 NOT pinned)\n' "$newest" >&2
			printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n' >&2
			(cd "$CACHE/debs" && apt-get download "$BASE_PKG=$newest")
			BASE_VERSION=$newest
			BASE_SHA256=$(sha256sum "$CACHE/debs/${BASE_PKG}_${newest}_all.deb" | cut -d' ' -f1)
			deb=$CACHE/debs/${BASE_PKG}_${newest}_all.deb
		}
		# apt-get download escapes ':' and '~' inconsistently; normalise.
		[ -f "$deb" ] || mv "$CACHE"/debs/"${BASE_PKG}"_*"${BASE_VERSION#*-}"*_all.deb "$deb"
	fi
	echo "$BASE_SHA256  $deb" | sha256sum -c --quiet - || die "sha256 mismatch for $deb"
	log "unpacking $deb"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$unpack" ./usr/src/
	tar -xJf "$unpack/usr/src/$BASE_PKG.tar.xz" -C "$unpack"
	mv "$unpack/$BASE_PKG" "$unpack/linux"
	desc="Debian $BASE_PKG $BASE_VERSION"
fi

rm -rf "$SRC" "$APPLY"
mv "$unpack/linux" "$SRC"
rm -rf "$unpack"
cd "$SRC"
git init -q -b base
git config gc.auto 0
git config core.abbrev 12
git add -A -f .
# Fixed dates so the base commit id only depends on the tree's content.
GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" \
	git commit -q -m "base: $desc"
git tag "$TAG"
log "base $TAG = $(git rev-parse HEAD)"
