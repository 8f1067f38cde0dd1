#!/bin/bash
# Import a Debian linux-source package as a git repository with one
# deterministic commit, "base: DESC", tagged TAG.
# usage: import-source.sh [--drop DIR]... [--pool] REPO TAG DESC PKG VERSION SHA256
#        import-source.sh [--drop DIR]... REPO TAG DESC --tree DIR
# The .deb comes from the archive through apt; with --pool, when this
# host's apt sources do not list its suite (sid's mainline source for
# make test-mainline), from the archive's pool. An empty SHA256 is not
# checked (an unpinned "newest"). A repository already at TAG with DESC
# is kept; otherwise it is replaced, and with it each --drop DIR (its
# worktrees). MISSING_HINT: what to say when the version is gone.
. "$(dirname "$0")/../lib.sh"
drop=() pool=0
while :; do
	case $1 in
	--drop) drop+=("$2") && shift 2 ;;
	--pool) pool=1 && shift ;;
	*) break ;;
	esac
done
repo=$1 tag=$2 desc=$3
shift 3

if [ "$(git -C "$repo" log -1 --format=%s "refs/tags/$tag" 2>/dev/null)" = "base: $desc" ]; then
	log "$tag already in $repo"
	exit 0
fi
unpack=$repo.unpack
rm -rf "$unpack" && mkdir -p "$unpack" "$CACHE/debs"
if [ "$1" = --tree ]; then
	log "importing $2"
	rsync -a --exclude=.git "$2"/ "$unpack/linux/"
else
	pkg=$1 version=$2 sha256=$3
	deb=$CACHE/debs/${pkg}_${version}_all.deb
	if [ ! -f "$deb" ]; then
		if [ "$pool" = 1 ]; then
			# Debian's pool keeps a source package's binaries under its
			# source name: linux for sid's.
			url=$DEBIAN_MIRROR/pool/main/l/linux/${pkg}_${version/*:/}_all.deb
			log "downloading $url"
			curl -fsSL -o "$deb.part" "$url" ||
				die "$pkg $version is not in the archive ($url)${MISSING_HINT:+; $MISSING_HINT}"
			mv "$deb.part" "$deb"
		else
			(cd "$CACHE/debs" && apt-get download "$pkg=$version") ||
				die "$pkg $version is not in the archive${MISSING_HINT:+ ($MISSING_HINT)}"
		fi
		# apt-get download escapes ':' and '~' inconsistently; normalise.
		[ -f "$deb" ] || mv "$CACHE"/debs/"${pkg}"_*"${version#*-}"*_all.deb "$deb"
	fi
	if [ -n "$sha256" ]; then
		echo "$sha256  $deb" | sha256sum -c --quiet - || die "sha256 mismatch for $deb"
	fi
	got=$(dpkg-deb -f "$deb" Version)
	[ "$got" = "$version" ] || die "$deb holds $pkg $got, not $version"
	log "unpacking $deb"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$unpack" ./usr/src/
	tar -xJf "$unpack/usr/src/$pkg.tar.xz" -C "$unpack"
	mv "$unpack/$pkg" "$unpack/linux"
fi

rm -rf "$repo" "${drop[@]}"
mv "$unpack/linux" "$repo"
rm -rf "$unpack"
cd "$repo" || exit
git init -q -b base
git config gc.auto 0
git config core.abbrev 12
git add -A -f .
# Fixed dates so the commit id only depends on the tree's content.
GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" \
	git commit -q -m "base: $desc"
git tag "$tag"
log "$tag = $(git rev-parse HEAD)"
