#!/bin/bash
# Static checks of every patch of the series, in order, on the tree in
# APPLY (already carrying the series). Three results per patch:
#   patch:NAME:message     a commit message body and a Signed-off-by
#   patch:NAME:checkpatch  checkpatch.pl --strict; warnings only if listed
#                          in checkpatch-allow.txt
#   patch:NAME:w1-build    W=1 build of the objects the patch touches; a
#                          warning those objects did not have before the
#                          patch fails, one they already had is not its own
# and one per topic folder of the series, where a subset a kernel may
# carry ends (the topic and every one before it):
#   subset:TOPIC           every patch up to the topic's last passed, and
#                          the objects the topic touches build (W=1) there
# Writes the JSON result list to $1 (only once all patches are checked).
. "$(dirname "$0")/../lib.sh"
out=$1
bobj=$CACHE/obj-bisect
allow=$TOP/workbench/data/checkpatch-allow.txt
base=$(base_tag "$APPLY" HEAD)
mapfile -t commits < <(git -C "$APPLY" rev-list --reverse "$base"..HEAD)
mapfile -t names < <(series_patches)
[ ${#commits[@]} = ${#names[@]} ] || die "series has ${#names[@]} patches, tree has ${#commits[@]} commits"
logdir=$RESULTS/static
mkdir -p "$logdir"
partial=$out.partial
rm -f "$partial"

# What to build for the files a commit touches: the object of each C
# file, the directory of a driver-local header, and for a shared header
# the core objects that use what the series changes in them.
CORE_USERS="net/core/dev.o net/core/netdev-genl.o net/core/net-sysfs.o"

# Sources only another architecture builds (s390's qeth, which the series
# touches): an x86 build cannot compile them, so they are left out.
other_arch() {
	case $1 in
	arch/x86/*) return 1 ;;
	arch/* | drivers/s390/*) return 0 ;;
	*) return 1 ;;
	esac
}

build_targets() { # FROM TO
	local f
	for f in $(git -C "$APPLY" diff --name-only "$1" "$2"); do
		other_arch "$f" && continue
		case $f in
		tools/* | Documentation/* | MAINTAINERS) ;;
		include/*) printf '%s\n' $CORE_USERS ;;
		*.c) echo "${f%.c}.o" ;;
		*.h) echo "$(dirname "$f")/" ;;
		esac
	done | sort -u
}

# The targets that exist in the checked-out tree (a patch may add them).
existing_targets() {
	local t
	for t; do
		case $t in
		*/) [ -d "$APPLY/$t" ] && echo "$t" ;;
		*) [ -f "$APPLY/${t%.o}.c" ] && echo "$t" ;;
		esac
	done
	return 0
}

# w1_build LOG TARGET...: W=1 build of TARGETs, recompiled even when up to
# date since their warnings are the measurement (ccache replays them).
w1_build() {
	local log=$1 t
	shift
	for t; do
		case $t in
		*/) find "$bobj/$t" -maxdepth 1 -name '*.o' -delete 2>/dev/null || true ;;
		*) rm -f "$bobj/$t" ;;
		esac
	done
	make -s -C "$APPLY" O="$bobj" CC="$(make_cc)" W=1 -j"$(nproc)" "$@" >"$log" 2>&1
}

# The warnings in a build log, sorted, without line and column numbers so
# that a warning the patch merely moves stays the same warning.
warnings() {
	sed -n -E 's/^(.*):[0-9]+:[0-9]+: warning: (.*)$/\1: \2/p' "$1" |
		sed -e "s|^$APPLY/||" -e 's|^\(\.\./\)*||' | sort
}

check_message() { # commit
	local body
	body=$(git -C "$APPLY" log -1 --format=%b "$1" | grep -v -E '^(Signed-off-by|Acked-by|Reviewed-by|Cc|Link):' | tr -d '[:space:]')
	[ -n "$body" ] || echo "empty commit message"
	git -C "$APPLY" log -1 --format=%b "$1" | grep -q '^Signed-off-by: .* <.*@.*>$' || echo "no Signed-off-by"
}

# new_files_maintained PATCH: every file PATCH adds falls under an entry
# of the tree's MAINTAINERS for its area (checkpatch's FILE_PATH_CHANGES
# asks whether MAINTAINERS needs updating for any added file; then it
# does not). The catch-all entries do not count.
new_files_maintained() {
	local f
	for f in $(awk '/^diff --git /{f = substr($4, 3)} /^new file mode/{print f}' "$PATCHES/$1"); do
		(cd "$APPLY" && scripts/get_maintainer.pl --nogit --nogit-fallback --subsystem \
			--nol --nom --nor --noemail -f "$f" 2>/dev/null) |
			grep -qv -e '^THE REST$' -e '^KERNEL SELFTEST FRAMEWORK$' || return 1
	done
}

check_checkpatch() { # patch-name
	local log=$logdir/${1%.patch}.checkpatch level type
	mkdir -p "$(dirname "$log")"
	(cd "$APPLY" && PATH=/usr/bin:$PATH scripts/checkpatch.pl --strict --no-color --show-types --terse \
		"$PATCHES/$1") >"$log" 2>&1 || true
	while read -r level type; do
		if [ "$level" = ERROR ]; then
			echo "checkpatch ERROR:$type"
		elif [ "$type" = FILE_PATH_CHANGES ]; then
			new_files_maintained "$1" || echo "checkpatch $level:$type: an added file has no MAINTAINERS entry"
		elif ! grep -qE "^($1|\*) $type " "$allow"; then
			echo "checkpatch $level:$type not in allowlist"
		fi
	done < <(sed -n -E 's/^.*: (ERROR|WARNING|CHECK):([A-Z_0-9]+):.*/\1 \2/p' "$log")
}

# check_w1 COMMIT NAME: at COMMIT; prints the problems, exit 2 when there
# was nothing to build.
check_w1() {
	local c=$1 log=$logdir/${2%.patch}.build targets before new
	mkdir -p "$(dirname "$log")"
	mapfile -t targets < <(build_targets "$c~1" "$c")
	[ ${#targets[@]} != 0 ] || return 2
	if ! w1_build "$log" "${targets[@]}"; then
		echo "W=1 build of ${targets[*]} fails"
		return 0
	fi
	# No warning at all: nothing can be new, skip the build before.
	[ -n "$(warnings "$log")" ] || return 0
	git -C "$APPLY" checkout -q "$c~1"
	mapfile -t before < <(existing_targets "${targets[@]}")
	[ ${#before[@]} = 0 ] || w1_build "$log.before" "${before[@]}" || true
	git -C "$APPLY" checkout -q "$c"
	# comm on sorted lists is a multiset difference: a second copy of a
	# warning the object already had is new too.
	new=$(comm -13 <(warnings "$log.before" 2>/dev/null) <(warnings "$log"))
	[ -z "$new" ] || echo "$(wc -l <<<"$new") new W=1 warnings, first: $(head -1 <<<"$new")"
}

# result NAME CHECK PROBLEMS [SKIP_REASON]
result() {
	if [ -n "${4:-}" ]; then
		add_result "$partial" "patch:$1:$2" static skip "$4"
	elif [ -z "$3" ]; then
		add_result "$partial" "patch:$1:$2" static pass
	else
		add_result "$partial" "patch:$1:$2" static fail "$(paste -sd';' <<<"$3")"
		echo "FAILED $1 $2: $(paste -sd';' <<<"$3")" | tee -a "$logdir/failures"
		failed=1
	fi
}

orig=$(git -C "$APPLY" rev-parse HEAD)
trap 'git -C "$APPLY" checkout -q "$orig"' EXIT
"$TOP/workbench/tree/configure.sh" "$APPLY" "$bobj" bisect
make -s -C "$APPLY" O="$bobj" CC="$(make_cc)" -j"$(nproc)" prepare >"$logdir/prepare.log" 2>&1 ||
	die "W=1 build preparation failed (see $logdir/prepare.log)"

# check_subset TOPIC FIRST LAST: the stack up to TOPIC, whose commits are
# FIRST..LAST, as a kernel that carries only that much would have it.
check_subset() {
	local topic=$1 first=$2 last=$3 log=$logdir/$1.subset.build targets
	git -C "$APPLY" checkout -q "$last"
	mapfile -t targets < <(build_targets "$first~1" "$last")
	mapfile -t targets < <(existing_targets "${targets[@]}")
	[ ${#targets[@]} = 0 ] || w1_build "$log" "${targets[@]}" ||
		echo "W=1 build of the topic's objects at its last patch fails"
	# A subset is a prefix: a failed patch of an earlier topic fails it too.
	awk -v last="$topic" '{ split($2, p, "/") } p[1] <= last { sub(/^FAILED /, "patch failed: "); print }' \
		"$logdir/failures"
}

failed=0
: >"$logdir/failures"
topic_first=
for i in "${!commits[@]}"; do
	c=${commits[$i]} name=${names[$i]}
	git -C "$APPLY" checkout -q "$c"
	result "$name" message "$(check_message "$c")"
	result "$name" checkpatch "$(check_checkpatch "$name")"
	rc=0
	problems=$(check_w1 "$c" "$name") || rc=$?
	if [ $rc = 2 ]; then
		result "$name" w1-build "" "touches no built code"
	else
		result "$name" w1-build "$problems"
	fi
	echo "checked $name"
	topic=$(dirname "$name")
	topic_first=${topic_first:-$c}
	if last_in_topic "$name" "${names[$((i + 1))]:-}"; then
		problems=$(check_subset "$topic" "$topic_first" "$c")
		if [ -z "$problems" ]; then
			add_result "$partial" "subset:$topic" static pass
		else
			add_result "$partial" "subset:$topic" static fail "$(paste -sd';' <<<"$problems")"
			failed=1
		fi
		topic_first=
	fi
done
mv "$partial" "$out"
exit $failed
