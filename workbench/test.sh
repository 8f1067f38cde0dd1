#!/bin/bash
# 'make test': unit tests of the workbench, static checks of every patch,
# build, then the selftests in a VM. Prints one line per test and the
# closing "N passed, N failed, N skipped"; non-zero exit on any failure.
# TESTS=substring runs only matching selftests; SKIP_STATIC=1 skips the
# per-patch checks (developer loop).
. "$(dirname "$0")/lib.sh"
start=$(date +%s)
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
extra=()

current=
step() { current=$*; log "[$(( $(date +%s) - start ))s] $*"; }
trap 'rc=$?; [ $rc = 0 ] || log "make test stopped (exit $rc) during: $current"' EXIT

step "prerequisites"
"$TOP/workbench/deps.sh"

# add_result NAME KIND STATUS [REASON]: a result of the workbench itself
# (not of a selftest) for the report, in RESULTS/<NAME before ':'>.json.
add_result() {
	local file=$RESULTS/${1%%:*}.json
	python3 -c 'import json, sys
print(json.dumps([{"name": sys.argv[1], "kind": sys.argv[2], "status": sys.argv[3],
                   "reason": sys.argv[4] or None}]))' "$1" "$2" "$3" "${4:-}" >"$file"
	extra+=(--extra "$file")
}

step "workbench unit tests"
if "$VENV/bin/python" -m pytest -q "$TOP/tests" >"$RESULTS/unit.log" 2>&1; then
	add_result unit:workbench unit pass
else
	add_result unit:workbench unit fail "see build/results/unit.log"
fi
tail -1 "$RESULTS/unit.log" >&2

finish() {
	step "report (results in $RESULTS)"
	python3 "$TOP/workbench/report.py" --results "$RESULTS" \
		--list "$TOP/workbench/selftests.list" --tree "$SRC" \
		--known-failures "$TOP/workbench/known-failures.txt" \
		${TESTS:+--filter "$TESTS"} "${extra[@]}"
}

step "apply the series to the base"
if ! "$TOP/workbench/prepare-tree.sh" 2>"$RESULTS/apply.log"; then
	cat "$RESULTS/apply.log" >&2
	reason=$(grep -o 'patch does not apply: .*' "$RESULTS/apply.log" | head -1)
	add_result series:apply static fail "${reason:-see build/results/apply.log}"
	finish
	exit 1
fi

if [ -z "${SKIP_STATIC:-}" ]; then
	step "per-patch checks (checkpatch, Signed-off-by, W=1 build of touched dirs)"
	"$TOP/workbench/check-patches.sh" "$RESULTS/static.json" || true
	extra+=(--extra "$RESULTS/static.json")
fi

step "kernel build"
if ! "$TOP/workbench/build.sh" "$SRC" "$OBJ" "$FLAVOUR"; then
	add_result kernel:build build fail "build failed at the series tip, see $OBJ/build.log"
	finish
	exit 1
fi

step "install selftests"
"$TOP/workbench/ksft-install.sh" "$SRC" "$TOP/build/ksft"

step "selftests in the VM"
accel=${VM_ACCEL:-$("$TOP/workbench/vm-accel.sh" "$OBJ/arch/x86/boot/bzImage")}
scale=1
[ "$accel" = tcg ] && scale=${TCG_TIMEOUT_SCALE:-3}
total=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$TOP/workbench/selftests.list" | awk '{s += $2} END {print s}')
VM_ACCEL=$accel "$TOP/workbench/vm.sh" "$OBJ/arch/x86/boot/bzImage" "$RESULTS/vm" \
	$((total * scale + 120)) \
	"$TOP/workbench/guest-run-tests.sh $TOP/build/ksft $RESULTS/vm $scale ${TESTS:-}" || true

# The benchmarks are not timed tests: CI only checks that one short cell
# per mode and variant still runs (BENCH_SMOKE=0 skips it).
if [ "${BENCH_SMOKE:-1}" != 0 ] && [ -z "${TESTS:-}" ]; then
	step "benchmark smoke run"
	# The tree is applied and the kernel built above: do not redo it.
	if BENCH_PLAN=smoke BENCH_KERNEL_READY=1 RESULTS=$RESULTS "$TOP/workbench/bench.sh" \
		>"$RESULTS/bench-smoke.log" 2>&1; then
		add_result bench:smoke bench pass
	else
		add_result bench:smoke bench fail "see build/results/bench-smoke.log"
		tail -15 "$RESULTS/bench-smoke.log" >&2
	fi
fi

finish
