#!/bin/bash
# Static checks of every patch of the series, in order, on the tree in
# APPLY (already carrying the series): commit message and Signed-off-by,
# checkpatch.pl --strict, and a W=1 build of what the patch touches at
# that point of the series. Writes a JSON result list to $1.
. "$(dirname "$0")/lib.sh"
out=$1
bobj=$CACHE/obj-bisect
allow=$TOP/workbench/checkpatch-allow.txt
base=$(git -C "$APPLY" describe --tags --abbrev=0 --match 'base-*' HEAD)
mapfile -t commits < <(git -C "$APPLY" rev-list --reverse "$base"..HEAD)
mapfile -t names < <(series_patches)
[ ${#commits[@]} = ${#names[@]} ] || die "series has ${#names[@]} patches, tree has ${#commits[@]} commits"
logdir=$RESULTS/static
mkdir -p "$logdir"
results=()

add_result() { # name status reason
	results+=("$(python3 -c 'import json,sys; print(json.dumps({"name": sys.argv[1], "kind": "static", "status": sys.argv[2], "reason": sys.argv[3] or None}))' "$@")")
}

# What to build for the files a commit touches: the object of each C
# file, the directory of a driver-local header, and for a shared header
# the core objects that use what the series changes in them.
CORE_USERS="net/core/dev.o net/core/netdev-genl.o net/core/net-sysfs.o"
build_targets() {
	local f
	for f in $(git -C "$APPLY" diff --name-only "$1~1" "$1"); do
		case $f in
		tools/* | Documentation/* | MAINTAINERS) ;;
		include/*) printf '%s\n' $CORE_USERS ;;
		*.c) echo "${f%.c}.o" ;;
		*.h) echo "$(dirname "$f")/" ;;
		esac
	done | sort -u
}

orig=$(git -C "$APPLY" rev-parse HEAD)
trap 'git -C "$APPLY" checkout -q "$orig"' EXIT
"$TOP/workbench/configure.sh" "$APPLY" "$bobj" bisect
make -s -C "$APPLY" O="$bobj" CC="$(make_cc)" -j"$(nproc)" prepare >"$logdir/prepare.log" 2>&1 ||
	die "W=1 build preparation failed (see $logdir/prepare.log)"

failed=0
for i in "${!commits[@]}"; do
	c=${commits[$i]} name=${names[$i]} problems=()
	git -C "$APPLY" checkout -q "$c"

	body=$(git -C "$APPLY" log -1 --format=%b "$c" | grep -v -E '^(Signed-off-by|Acked-by|Reviewed-by|Cc|Link):' | tr -d '[:space:]')
	[ -n "$body" ] || problems+=("empty commit message")
	git -C "$APPLY" log -1 --format=%b "$c" | grep -q '^Signed-off-by: .* <.*@.*>$' || problems+=("no Signed-off-by")

	cp_log=$logdir/${name%.patch}.checkpatch
	(cd "$APPLY" && PATH=/usr/bin:$PATH scripts/checkpatch.pl --strict --no-color --show-types --terse \
		"$PATCHES/$name") >"$cp_log" 2>&1 || true
	while read -r level type; do
		if [ "$level" = ERROR ]; then
			problems+=("checkpatch ERROR:$type")
		elif ! grep -qE "^($name|\*) $type " "$allow"; then
			problems+=("checkpatch $level:$type not in allowlist")
		fi
	done < <(sed -n -E 's/^.*: (ERROR|WARNING|CHECK):([A-Z_0-9]+):.*/\1 \2/p' "$cp_log")

	targets=$(build_targets "$c")
	if [ -n "$targets" ]; then
		b_log=$logdir/${name%.patch}.build
		# shellcheck disable=SC2086
		if ! make -s -C "$APPLY" O="$bobj" CC="$(make_cc)" W=1 -j"$(nproc)" $targets >"$b_log" 2>&1; then
			problems+=("W=1 build of $(echo $targets) fails")
		else
			touched=$(git -C "$APPLY" diff --name-only "$c~1" "$c" | sed 's/[.[\*^$]/\\&/g' | paste -sd'|')
			# O= builds print absolute source paths.
			grep -E "(^|/)($touched):[0-9]+:[0-9]+: warning:" "$b_log" >/dev/null &&
				problems+=("W=1 warnings in touched files")
		fi
	fi

	if [ ${#problems[@]} = 0 ]; then
		add_result "patch:$name" pass ""
		echo "ok     $name"
	else
		reason=$(IFS=';'; echo "${problems[*]}")
		add_result "patch:$name" fail "$reason"
		echo "FAILED $name: $reason"
		failed=1
	fi
done
printf '%s\n' "${results[@]}" | python3 -c 'import json,sys; print(json.dumps([json.loads(l) for l in sys.stdin], indent=1))' >"$out"
exit $failed
