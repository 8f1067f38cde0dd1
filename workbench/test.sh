#!/bin/bash
# 'make test': unit tests of the workbench, the series applied to the base
# and to the newest linux-source-6.12, static checks of every patch, build,
# the selftests in a VM, the kernel packaged and booted from its .deb, a
# benchmark smoke run. Prints one line per result, XFAILs on a line of
# their own and the closing "N passed, N failed, N skipped"; non-zero exit
# on any failure, including a step that died without its result file.
# TESTS=substring[,substring...] runs only matching selftests (and skips the package and
# bench checks); SKIP_STATIC=1 skips the per-patch checks (developer loop).
# Results go to RESULTS/test (build/results/test): make test replaces only
# its own folder, never make bench's or make run's. test-subsets.sh runs it
# with SUBSET=TOPIC on a series that ends there: results in RESULTS/TOPIC,
# selftests installed in build/ksft-subset.
. "$(dirname "$0")/lib.sh"
start=$(date +%s)
# No budget unless the caller sets one (.ci/run sets CI's): a selftest
# whose limit no longer fits in MAKE_TEST_BUDGET is not started, and that
# fails the run unless the caller accepted cuts (MAKE_TEST_CUTS=1).
MAKE_TEST_BUDGET=${MAKE_TEST_BUDGET:-0}
cuts=()
[ "${MAKE_TEST_CUTS:-0}" != 0 ] && cuts=(--cuts-allowed)
# Seconds the steps after the selftests take at most on the 2-core
# machine. The smoke run's cells took 370 s on a quiet machine, past
# 420 s on a slow day and 540 s beside other work.
PACKAGE_CHECK_TIME=300 BENCH_SMOKE_TIME=720
# virtio_net frozen under a flood (vm/virtio-freeze-check.sh): a boot of
# its own from an initramfs, on by default in the KASAN flavour's full
# run, where a read of a freed ring shows. FREEZE_CHECK=1 runs it on any
# flavour, 0 never.
freeze_default=0
[ "$FLAVOUR" = kasan ] && [ -z "${TESTS:-}" ] && freeze_default=1
FREEZE_CHECK=${FREEZE_CHECK:-$freeze_default} FREEZE_CYCLES=${FREEZE_CYCLES:-100}
export FREEZE_CHECK_TIMEOUT=${FREEZE_CHECK_TIMEOUT:-$((120 + FREEZE_CYCLES * 15))}
# KASAN and KCSAN slow the smoke run's guest as they slow the selftests
# (the debug kernel's limit timed the smoke run out under KASAN).
case $FLAVOUR in
kasan | kcsan) BENCH_SMOKE_TIME=$(awk -v t="$BENCH_SMOKE_TIME" -v s="${KASAN_TIMEOUT_SCALE:-4}" \
	'BEGIN { printf "%d", t * s }') ;;
esac
export RESULTS=$RESULTS/${SUBSET:-test}
ksft=$TOP/build/ksft${SUBSET:+-subset}
shown=${RESULTS#"$TOP"/}
rm -rf "$RESULTS"
mkdir -p "$RESULTS"

current=
step() { current=$*; log "[$(( $(date +%s) - start ))s] $*"; }
# shellcheck disable=SC2154 # rc is assigned in the trap itself
trap 'rc=$?; [ $rc = 0 ] || log "make test stopped (exit $rc) during: $current"' EXIT

step "prerequisites"
"$TOP/workbench/deps.sh"

# Results of the workbench's own steps. A step that writes a result file
# of its own is given to the report as STEP=FILE when it starts: if it
# dies without writing the file, the report names it as a failure.
wb=$RESULTS/workbench.json
extra=(--extra "make-test=$wb")

# logged NAME CMD...: run CMD with its output also in RESULTS/NAME.log.
logged() {
	local name=$1
	shift
	"$@" 2>&1 | tee "$RESULTS/$name.log" >&2
	return "${PIPESTATUS[0]}"
}
# The ERROR line a failed step NAME died with, for the report.
died_with() {
	local reason
	reason=$(grep -o 'ERROR: .*' "$RESULTS/$1.log" | tail -1 | sed 's/^ERROR: //')
	echo "${reason:-see $shown/$1.log}"
}

step "workbench unit tests"
if "$VENV/bin/python" -m pytest -q "$TOP/tests" >"$RESULTS/unit.log" 2>&1; then
	add_result "$wb" unit:workbench unit pass
else
	add_result "$wb" unit:workbench unit fail "see $shown/unit.log"
fi
tail -1 "$RESULTS/unit.log" >&2

base_desc=
finish() {
	step "report (results in $RESULTS)"
	python3 "$TOP/workbench/report/make-test-report.py" --results "$RESULTS" \
		--tree "$SRC" --known-failures "$TOP/workbench/data/known-failures.txt" \
		${base_desc:+--base "$base_desc"} "${extra[@]}" "${cuts[@]}"
}

step "base kernel source"
if ! logged base "$TOP/workbench/fetch-base.sh"; then
	add_result "$wb" base:fetch static fail "$(died_with base)"
	finish
	exit 1
fi
# For the report's header: what fetch-base.sh really unpacked.
base_desc=$(git -C "$SRC" log -1 --format=%s "$(base_tag)" 2>/dev/null | sed 's/^base: //') || base_desc=unknown

# How the base's drivers use the NAPI API. Fails if the audit cannot run
# or finds other drivers than docs/napi-audit.json, which docs/testing.md's
# pattern table is generated from (make docs regenerates both).
step "NAPI driver-pattern audit of the base"
if "$TOP/tools/napi-audit.py" --git "$SRC" --rev "$(base_tag)" --name "$(base_tag)" \
	--json "$RESULTS/napi-audit.json" --expect "$TOP/docs/napi-audit.json" \
	>"$RESULTS/napi-audit.txt" 2>&1; then
	add_result "$wb" audit:napi-patterns static pass
	sed '/^Every count/,$d' "$RESULTS/napi-audit.txt" >&2
else
	add_result "$wb" audit:napi-patterns static fail "$(tail -1 "$RESULTS/napi-audit.txt")"
fi

step "apply the series to the base"
if ! logged apply "$TOP/workbench/prepare-tree.sh"; then
	reason=$(grep -o 'patch does not apply: .*' "$RESULTS/apply.log" | head -1)
	add_result "$wb" "series:apply:$(base_tag)" static fail "${reason:-$(died_with apply)}"
	finish
	exit 1
fi
add_result "$wb" "series:apply:$(base_tag)" static pass

# The test tooling topic is in every kernel built from the series: what it
# changes outside the selftests and netdevsim must compile away without
# its debug option, which no configuration of make package turns on.
if [ -z "${SUBSET:-}" ]; then
	step "test-only code only in test kernels"
	if "$TOP/workbench/checks/check-test-only.py" "$SRC" "$PATCHES" "$TOP/config" >"$RESULTS/test-only.log" 2>&1; then
		add_result "$wb" series:test-only-gated static pass
	else
		add_result "$wb" series:test-only-gated static fail "$(head -1 "$RESULTS/test-only.log")"
	fi
	# Each patch says first where it comes from: "commit <sha> upstream."
	# or "Not upstream: <why>" (docs/upstream-provenance.md).
	step "provenance statement in every patch"
	if "$TOP/workbench/checks/check-provenance.py" "$PATCHES" >"$RESULTS/provenance.log" 2>&1; then
		add_result "$wb" series:provenance static pass
	else
		add_result "$wb" series:provenance static fail "$(head -1 "$RESULTS/provenance.log")"
	fi
fi

step "lint (shellcheck, ruff)"
extra+=(--extra "lint=$RESULTS/lint.json")
"$TOP/workbench/checks/lint.sh" "$RESULTS/lint.json" || true

step "apply the series to the newest $BASE_PKG"
extra+=(--extra "check-newest=$RESULTS/newest.json")
logged check-newest "$TOP/workbench/checks/check-newest.sh" "$RESULTS/newest.json" || true

if [ "${SKIP_STATIC:-0}" = 0 ]; then
	step "per-patch checks (checkpatch, Signed-off-by, W=1 build of touched dirs)"
	extra+=(--extra "check-patches=$RESULTS/static.json")
	logged check-patches "$TOP/workbench/checks/check-patches.sh" "$RESULTS/static.json" || true
fi

step "kernel build"
built=0
"$TOP/workbench/build.sh" "$SRC" "$OBJ" "$FLAVOUR" || built=$?
cp "$OBJ/build.log" "$RESULTS/kernel-build.log" 2>/dev/null || true
if [ "$built" != 0 ]; then
	add_result "$wb" kernel:build build fail "build failed at the series tip, see $shown/kernel-build.log"
	finish
	exit 1
fi

step "install selftests"
if ! logged ksft-install "$TOP/workbench/vm/ksft-install.sh" "$SRC" "$ksft"; then
	add_result "$wb" selftests:install build fail "$(died_with ksft-install)"
	finish
	exit 1
fi

step "selftests in the VM"
accel=${VM_ACCEL:-$("$TOP/workbench/vm/vm-accel.sh" "$OBJ/arch/x86/boot/bzImage")}
# The plan: the selftests TESTS selects, each with its time limit scaled
# for the accelerator, split into VM_SHARDS plans for as many VMs run
# side by side (vm/, vm2/, ...; shard_plan.py says how). Each guest runs
# its plan, the report reads them all.
plan_entries "$SELFTESTS_LIST" "$(timeout_scale "$accel" "$FLAVOUR")" "${TESTS:-}" >"$RESULTS/plan"
shards=${VM_SHARDS:-1}
vmdirs=()
for i in $(seq "$shards"); do
	vmdirs+=("$RESULTS/vm$([ "$i" = 1 ] || echo "$i")")
	mkdir -p "${vmdirs[-1]}"
done
"$TOP/workbench/vm/shard_plan.py" "$RESULTS/plan" "${vmdirs[@]/%//plan}"
# The guests' budget: what MAKE_TEST_BUDGET leaves after the steps so far
# and those still to come, at most the longest plan's sum of limits. A
# hung test then fails the run with its name, not CI's own limit with
# none.
total=0
for dir in "${vmdirs[@]}"; do
	sum=$(awk '{s += $2} END {print s + 0}' "$dir/plan")
	[ "$sum" -gt "$total" ] && total=$sum
done
later=0
[ "$FREEZE_CHECK" != 0 ] && later=$((later + FREEZE_CHECK_TIMEOUT + 10))
[ "${PACKAGE_CHECK:-1}" != 0 ] && [ -z "${TESTS:-}" ] && later=$((later + PACKAGE_CHECK_TIME))
[ "${BENCH_SMOKE:-1}" != 0 ] && [ -z "${TESTS:-}" ] && later=$((later + BENCH_SMOKE_TIME))
guest_budget=$((MAKE_TEST_BUDGET - ($(date +%s) - start) - later - VM_BOOT_TIME))
# The guest checks the budget only where it binds: a plan whose limits
# all fit needs no check, which the time from boot to its first test
# would fail.
binding=$guest_budget
if [ "$MAKE_TEST_BUDGET" = 0 ] || [ "$guest_budget" -ge "$total" ]; then
	guest_budget=$total binding=
fi
[ "$guest_budget" -lt 0 ] && guest_budget=0 binding=0
log "the selftests may take ${guest_budget}s (MAKE_TEST_BUDGET=${MAKE_TEST_BUDGET}; the longest plan's limits add up to ${total}s)"
for dir in "${vmdirs[@]}"; do
	[ -s "$dir/plan" ] && (VM_ACCEL=$accel GUEST_BUDGET=$binding "$TOP/workbench/vm/run-plan.sh" \
		"$OBJ/arch/x86/boot/bzImage" "$ksft" "$dir" $((guest_budget + VM_BOOT_TIME)) "$SRC" "$OBJ" || true) &
done
wait

if [ "$FREEZE_CHECK" != 0 ]; then
	step "virtio_net frozen under a flood"
	extra+=(--extra "freeze-check=$RESULTS/freeze-check.json")
	if logged freeze-check "$TOP/workbench/vm/virtio-freeze-check.sh" \
		"$OBJ/arch/x86/boot/bzImage" "$FREEZE_CYCLES"; then
		add_result "$RESULTS/freeze-check.json" vm:virtio-freeze vm pass
	else
		add_result "$RESULTS/freeze-check.json" vm:virtio-freeze vm fail "$(died_with freeze-check)"
	fi
fi

# 'make package' on the kernel built above (no second build): metadata,
# contents, and the packaged image booted for one short test
# (PACKAGE_CHECK=0 skips it).
if [ "${PACKAGE_CHECK:-1}" != 0 ] && [ -z "${TESTS:-}" ]; then
	step "Debian packages of the test kernel"
	extra+=(--extra "check-package=$RESULTS/package.json")
	logged check-package timeout -k 10 "$PACKAGE_CHECK_TIME" \
		"$TOP/workbench/package/check-package.sh" "$OBJ" "$RESULTS/package.json" || true
fi

# The benchmarks are not timed tests: CI only checks that one short cell
# per mode and variant still runs (BENCH_SMOKE=0 skips it).
if [ "${BENCH_SMOKE:-1}" != 0 ] && [ -z "${TESTS:-}" ]; then
	step "benchmark smoke run"
	# On the kernel built above: no second apply or build.
	if RESULTS=$RESULTS BENCH_VM_TIMEOUT=${BENCH_VM_TIMEOUT:-$BENCH_SMOKE_TIME} \
		"$TOP/workbench/bench.sh" smoke "$OBJ" >"$RESULTS/bench-smoke.log" 2>&1; then
		add_result "$wb" bench:smoke bench pass
	else
		add_result "$wb" bench:smoke bench fail "see $shown/bench-smoke.log"
		tail -15 "$RESULTS/bench-smoke.log" >&2
	fi
fi

finish
