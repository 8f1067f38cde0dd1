#!/bin/bash
# 'make test-subsets': each subset a kernel may carry (the series up to
# the end of a topic, patches/series' folders) applied to the base,
# built (debug options, its own O= directory) and booted for the
# selftests that subset brings (subsets.list); one make test run per
# subset, without the per-patch checks (make test has them), the package
# or the benchmark. Not in CI: each subset is a kernel build.
# SUBSETS=02-napi-config,03-irq-suspend runs only those. Results in
# build/results/subsets/TOPIC/, and one line per subset at the end.
# The subsets are built from worktrees of their own (src-subset,
# apply-subset in the cache), so make test's stay at the series tip.
. "$(dirname "$0")/lib.sh"
out=$RESULTS/subsets
mkdir -p "$out"

mapfile -t topics < <(series_topics)
# test.sh reads the base in the build worktree before it applies anything.
"$TOP/workbench/fetch-base.sh"
worktree_at "$CACHE/src-subset" "$(base_tag)"
[ ${#topics[@]} -gt 1 ] || die "patches/series has no topic folders"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rc=0 summary=()
for topic in "${topics[@]}"; do
	case ",${SUBSETS:-$topic}," in *",$topic,"*) ;; *) continue ;; esac
	# The series up to this topic, as a patches/ folder of its own.
	rm -rf "$work/patches" && mkdir -p "$work/patches"
	for t in "${topics[@]}"; do
		ln -s "$PATCHES/$t" "$work/patches/$t"
		[ "$t" = "$topic" ] && break
	done
	series_patches | awk -F/ -v last="$topic" '$1 <= last' >"$work/patches/series"
	awk -v last="$topic" '/^[^#]/ && $1 <= last {print $2, $3, $4}' \
		<(list_entries "$TOP/workbench/data/subsets.list") >"$work/selftests.list"
	log "subset up to $topic: $(wc -l <"$work/patches/series") patches, $(wc -l <"$work/selftests.list") selftests"
	status=0
	SUBSET=$topic PATCHES=$work/patches SELFTESTS_LIST=$work/selftests.list RESULTS=$out \
		SKIP_STATIC=1 PACKAGE_CHECK=0 BENCH_SMOKE=0 FREEZE_CHECK=0 TESTS='' "$TOP/workbench/test.sh" || status=$?
	counts=$(python3 -c 'import json, sys
print("%(pass)s passed, %(fail)s failed, %(skip)s skipped" % json.load(open(sys.argv[1]))["counts"])' \
		"$out/$topic/summary.json" 2>/dev/null || echo "no summary.json")
	summary+=("$([ $status = 0 ] && echo PASS || echo FAIL)  subset:$topic ($counts)")
	[ $status = 0 ] || rc=1
done
printf '%s\n' "${summary[@]}"
exit $rc
