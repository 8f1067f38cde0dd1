#!/bin/bash
# 'make test-mainline': the series' bug-finding selftests on a mainline
# kernel (not in make test: a second kernel build). Fetches the pinned
# mainline source (fetch-mainline.sh), builds it with the test kernel's
# debug config (KASAN=1: with KASAN), installs the selftests of the
# series' tree and runs workbench/data/mainline.list in VMs on the same
# NICs as make test. A kernel crash ends a VM, not the run: the entries
# after it run in the next VM (vm2/, ...). Results and report in
# RESULTS/mainline; the expected failures, with their cause, are in
# workbench/data/mainline-known-failures.txt. TESTS selects entries as in
# make test. MAINLINE_FIXES=1: the same kernel with the fixes in upstream/
# applied (results in RESULTS/mainline[-kasan]-fixed; the same build directory,
# so only what they change is rebuilt).
. "$(dirname "$0")/lib.sh"
case $FLAVOUR in
debug) flavour=mainline ;;
kasan) flavour=mainline-kasan ;;
*) die "make test-mainline builds the debug kernel, or with KASAN=1 the KASAN one, not $FLAVOUR" ;;
esac
obj=$CACHE/obj-$flavour
ksft=$TOP/build/ksft-mainline
fixes=${MAINLINE_FIXES:-0}
# build/results/mainline, mainline-kasan, mainline-fixed, mainline-kasan-fixed
RESULTS=$RESULTS/$flavour
[ "$fixes" = 0 ] || RESULTS+=-fixed
export RESULTS
rm -rf "$RESULTS"
mkdir -p "$RESULTS"

"$TOP/workbench/deps.sh"
# The selftests come from the series' tree, the kernel from mainline's.
"$TOP/workbench/prepare-tree.sh" >"$RESULTS/apply.log" 2>&1 || die "the series' tree: see $RESULTS/apply.log"
"$TOP/workbench/tree/fetch-mainline.sh"
# A run stopped in the middle of applying upstream/ left its git am.
git -C "$MAINLINE_REPO" am --abort 2>/dev/null || true
git -C "$MAINLINE_REPO" checkout -q -f base
if [ "$fixes" != 0 ]; then
	upstream_fixes=()
	for patch in "$TOP"/upstream/[0-9][0-9][0-9][0-9]-*.patch; do
		[ "$(basename "$patch")" = 0000-cover-letter.patch ] || upstream_fixes+=("$patch")
	done
	[ ${#upstream_fixes[@]} != 0 ] || die "MAINLINE_FIXES=1: no fixes in upstream/"
	git -C "$MAINLINE_REPO" checkout -q --detach base
	if ! git -C "$MAINLINE_REPO" am -q "${upstream_fixes[@]}"; then
		git -C "$MAINLINE_REPO" am --abort
		die "upstream/ does not apply to $(git -C "$MAINLINE_REPO" log -1 --format=%s base)"
	fi
fi
# The config fragments of the tests that run: the series' tree's.
FRAGMENTS_FROM=$SRC "$TOP/workbench/build.sh" "$MAINLINE_REPO" "$obj" "$flavour"
cp "$obj/build.log" "$RESULTS/kernel-build.log"
SELFTESTS_LIST=$TOP/workbench/data/mainline.list "$TOP/workbench/vm/ksft-install.sh" "$SRC" "$ksft"

kernel=$obj/arch/x86/boot/bzImage
accel=${VM_ACCEL:-$("$TOP/workbench/vm/vm-accel.sh" "$kernel")}
plan_entries "$TOP/workbench/data/mainline.list" "$(timeout_scale "$accel" "$FLAVOUR")" "${TESTS:-}" >"$RESULTS/plan"
rest=$RESULTS/plan n=1
while [ -s "$rest" ]; do
	dir=$RESULTS/vm$([ "$n" = 1 ] || echo "$n")
	mkdir -p "$dir"
	cp "$rest" "$dir/plan"
	# Each entry's limit, and what the guest spends around it (udev,
	# the NIC pair's set-up), so that a slow VM is not taken for a hung one.
	limit=$(awk -v boot="$VM_BOOT_TIME" '{s += $2 + 100} END {print s + boot}' "$dir/plan")
	log "VM $n: $(wc -l <"$dir/plan") entries"
	VM_ACCEL=$accel "$TOP/workbench/vm/run-plan.sh" "$kernel" "$ksft" "$dir" "$limit" \
		"$MAINLINE_REPO" "$obj" || true
	"$TOP/workbench/vm/plan-rest.py" "$dir" >"$RESULTS/rest" || break
	rest=$RESULTS/rest n=$((n + 1))
done
rm -f "$RESULTS/rest"

python3 "$TOP/workbench/report/make-test-report.py" --results "$RESULTS" --tree "$MAINLINE_REPO" \
	--known-failures "$TOP/workbench/data/mainline-known-failures.txt" \
	--base "$(git -C "$MAINLINE_REPO" log -1 --format=%s base | sed 's/^base: //')$([ "$fixes" = 0 ] ||
		echo ", with upstream/'s fixes")"
