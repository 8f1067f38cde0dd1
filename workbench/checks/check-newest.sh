#!/bin/bash
# Does the series apply (git am, no fuzz) to the newest linux-source-6.12
# in the archive too? Writes one result, series:apply:newest-<version>, to
# the JSON list $1. Cheap: nothing to do when the newest is the base
# already tested; else only the files the series touches are unpacked,
# once per version.
. "$(dirname "$0")/../lib.sh"
out=$1
rm -f "$out"

# Package lists older than a day may not know the newest upload.
lists=/var/lib/apt/lists
if [ "$(id -u)" = 0 ] && [ -z "$(find "$lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -1)" ]; then
	apt-get update -qq || log "apt-get update failed; using the package lists there are"
fi
newest=$(newest_base_version)
if [ -z "$newest" ]; then
	add_result "$out" "series:apply:newest" static skip "no $BASE_PKG in the package lists"
	exit 0
fi
name=series:apply:newest-$newest
tested=$(git -C "$SRC" log -1 --format=%s "$(base_tag)")
if [ "$tested" = "base: Debian $BASE_PKG $newest" ]; then
	add_result "$out" "$name" static pass "the newest is the base tested above"
	exit 0
fi

tree=$CACHE/newest/$newest
# Only what the series touches; files it creates are not in the tarball.
# A tree unpacked for an earlier series lacks what this one touches anew:
# unpacked again when the list grew.
mapfile -t files < <(series_patches | sed "s|^|$PATCHES/|" | xargs sed -n 's|^--- a/||p' | sort -u)
if [ ! -d "$tree/.git" ] || [ ! -f "$tree.files" ] ||
	[ -n "$(printf '%s\n' "${files[@]}" | comm -23 - "$tree.files")" ]; then
	deb=$CACHE/debs/${BASE_PKG}_${newest}_all.deb
	if [ ! -f "$deb" ]; then
		(cd "$CACHE/debs" && apt-get download "$BASE_PKG=$newest") ||
			die "cannot download $BASE_PKG $newest"
		[ -f "$deb" ] || mv "$CACHE"/debs/"${BASE_PKG}"_*"${newest#*-}"*_all.deb "$deb"
	fi
	rm -rf "$tree.tmp" && mkdir -p "$tree.tmp"
	log "unpacking the ${#files[@]} files the series touches from $deb"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -O "./usr/src/$BASE_PKG.tar.xz" |
		tar -xJ -C "$tree.tmp" --strip-components=1 "${files[@]/#/$BASE_PKG/}" 2>"$tree.tmp.log" || true
	git -C "$tree.tmp" init -q -b base
	git -C "$tree.tmp" add -A -f .
	git -C "$tree.tmp" commit -q -m "base: Debian $BASE_PKG $newest (files the series touches)"
	rm -rf "$tree" "$tree.tmp.log"
	mv "$tree.tmp" "$tree"
	printf '%s\n' "${files[@]}" >"$tree.files"
fi
git -C "$tree" checkout -q -f -B newest base
if "$TOP/workbench/tree/apply.sh" "$tree" 2>"$tree.apply.log"; then
	add_result "$out" "$name" static pass
else
	cat "$tree.apply.log" >&2
	add_result "$out" "$name" static fail "$(grep -o 'patch does not apply: .*' "$tree.apply.log" | head -1)"
fi
