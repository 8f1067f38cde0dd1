#!/bin/bash
# 'make bench': build a kernel without the debug options, boot it with a
# netdevsim pair and a virtio-net pair, run the latency grid and the
# memcached sweep, and write the tables, JSON and plots to
# build/results/bench.
# usage: bench.sh [PLAN [OBJ]]
#   PLAN  full (default), smoke (one short cell per mode, for CI),
#         collapse, busy, adaptive or xsk (single experiments, see
#         bench/guest-bench.sh), runbook (only the dry run of the two-host
#         runbook, bench/host/runbook_dryrun.py; full ends with it, in a
#         boot of its own, unless BENCH_RUNBOOK_DRYRUN=0), spinning (the
#         spinning modes and the collapse experiment, booted under single-
#         and under multi-threaded TCG; full boots it under each too,
#         unless BENCH_SPINNING=0)
#   OBJ   the O= directory of a kernel already built from SRC: boot that
#         one, no deps, apply or build (how 'make test' runs the smoke plan)
#   BASELINE=1  also build the unpatched base with the same config and run
#               the interrupt-mode cells on both kernels
. "$(dirname "$0")/lib.sh"
plan=${1:-full}
obj=${2:-}
out=$RESULTS/bench
start=$(date +%s)

if [ -z "$obj" ]; then
	obj=$CACHE/obj-nodebug
	"$TOP/workbench/deps.sh"
	"$TOP/workbench/prepare-tree.sh"
	"$TOP/workbench/build.sh" "$SRC" "$obj" nodebug
fi
make -s -C "$TOP/bench" >/dev/null

# label:source:O= directory:plan[:TCG threading]
kernels=("patched:$SRC:$obj:$plan")
[ "$plan" = spinning ] && kernels=("patched:$SRC:$obj:spinning:single")
if [ -n "${BASELINE:-}" ] && [ "$BASELINE" != 0 ]; then
	base_src=$CACHE/base-src
	worktree_at "$base_src" "$(base_tag)"
	FRAGMENTS_FROM=$SRC "$TOP/workbench/build.sh" "$base_src" "$CACHE/obj-base-nodebug" nodebug
	kernels=("patched:$SRC:$obj:baseline" "base:$base_src:$CACHE/obj-base-nodebug:baseline")
	# BASELINE=1 with the baseline plan: those two runs are all of it.
	[ "$plan" = baseline ] || kernels+=("patched:$SRC:$obj:$plan")
fi
# The spinning modes' verdicts need both of TCG's schedulers: under
# single-threaded TCG a spinning vCPU holds the others for whole time
# slices, so a verdict stands only where both agree. The full plan boots
# the spinning plan under each.
if [ "$plan" = full ] && [ "${BENCH_SPINNING:-1}" != 0 ]; then
	kernels+=("patched:$SRC:$obj:spinning:single")
fi
if [ "$plan" = spinning ] || { [ "$plan" = full ] && [ "${BENCH_SPINNING:-1}" != 0 ]; }; then
	kernels+=("patched:$SRC:$obj:spinning:multi")
fi
# The full plan ends with the two-host runbook's dry run, in a boot of
# its own: the full plan's cells nearly fill BENCH_VM_TIMEOUT already.
if [ "$plan" = full ] && [ "${BENCH_RUNBOOK_DRYRUN:-1}" != 0 ]; then
	kernels+=("patched:$SRC:$obj:runbook")
fi

# The guest does not inherit our environment: forward the BENCH_*
# settings (BENCH_RR_ARGS, BENCH_MC_ARGS, BENCH_RATE_SCALE, BENCH_CPU_*...).
guest_env=$( (env | grep -E '^BENCH_[A-Z_]+=' || true) | sed -E "s/^([^=]+)=(.*)$/\1='\2'/" | tr '\n' ' ')

# igb (QEMU 8.0+) is the benchmarks' real NIC driver, the only one they
# boot (make test's selftests left theirs in VM_NICS); without it its
# cells are recorded as skipped.
export VM_NICS=
use_nic igb "no igb cells"
rm -rf "$out"
mkdir -p "$out"
rc=0
run=0
for k in "${kernels[@]}"; do
	IFS=: read -r label src kobj kplan tcg_thread <<<"$k"
	run=$((run + 1))
	dir=$out/run$run-$label-$kplan
	log "bench: $kplan plan on the $label kernel ($kobj)"
	mkdir -p "$dir"
	# The instructions of the NAPI core, counted by QEMU (TCG only: KVM
	# runs the guest natively), for the cost with every feature off; the
	# smoke plan keeps the counter working. nokaslr: the ranges come
	# from System.map.
	qemu_opts='' append=${VM_APPEND:-} threading=${tcg_thread:-${VM_TCG_THREAD:-}}
	# Multi-threaded TCG now and then kills the guest when a tracepoint
	# is switched on at run time (docs/benchmarks.md, VM_TCG_THREAD): the benchmark's
	# events are switched on at boot there, before any load.
	if [ "$threading" = multi ]; then
		append="${append:+$append }trace_event=napi:napi_poll,napi:napi_irq_suspend,"
		append+="napi:napi_irq_resume,irq:irq_handler_entry,irq:softirq_entry"
	fi
	accel=${VM_ACCEL:-$("$TOP/workbench/vm/vm-accel.sh" "$kobj/arch/x86/boot/bzImage")}
	if [ "${BENCH_INSN:-1}" != 0 ] && [ "$accel" = tcg ] &&
		{ [ "$kplan" = baseline ] || [ "$kplan" = smoke ]; }; then
		if plugin=$(python3 "$TOP/bench/insn_ranges.py" "$kobj/System.map" \
			"$TOP/bench/qemu-plugin/napi_insn.so" "$dir/insn.jsonl" "$dir/insn-symbols.json"); then
			qemu_opts="-plugin $plugin"
			append="${append:+$append }nokaslr"
		else
			log "no instruction counter in this boot: bench.md reports it not measured"
		fi
	fi
	# 5 vCPUs: application, NAPI kthread/IRQs, peer, the application's
	# second thread, and the matched control's spinner without IRQs each
	# get their own (bench/benchlib.py).
	VM_QEMU_OPTS=$qemu_opts VM_APPEND=$append VM_CPUS=${BENCH_VM_CPUS:-5} VM_NETWORK=loop \
		VM_TCG_THREAD=$threading \
		"$TOP/workbench/vm/vm.sh" "$kobj/arch/x86/boot/bzImage" "$dir" \
		"${BENCH_VM_TIMEOUT:-5400}" \
		"env $guest_env $TOP/bench/guest-bench.sh $dir $src $kplan > $dir/guest.log 2>&1" || true
	echo "$label" >"$dir/kernel-label"
	# Beside the instruction counts: the structure the series grows.
	"$TOP/bench/napi_struct_layout.sh" "$src" "$kobj" "$dir/napi_struct.pahole" ||
		log "no pahole layout of struct napi_struct for $kobj"
	if [ "$(cat "$dir/guest-finished" 2>/dev/null)" != 0 ]; then
		log "bench run $dir did not finish cleanly (guest log: $dir/guest.log, console: $dir/console.log)"
		tail -5 "$dir/guest.log" >&2 || true
		rc=1
	fi
	# The two-host runbook's dry run: a verdict of its own.
	if [ "$kplan" = runbook ]; then
		if python3 -c 'import json, sys; sys.exit(not json.load(open(sys.argv[1]))["ok"])' \
			"$dir/runbook-dryrun.json" 2>/dev/null; then
			log "runbook dry run passed: $dir/host-dryrun/seed-tables.md"
		else
			log "runbook dry run failed or did not run: $dir/runbook-dryrun.json, $dir/runbook-dryrun.log"
			rc=1
		fi
	fi
	# A benchmark on a kernel that splatted is not a result.
	if ! python3 "$TOP/workbench/report/splat.py" "$dir/console.log" >"$dir/splats.txt"; then
		log "kernel splat during $dir:"
		head -20 "$dir/splats.txt" >&2
		rc=1
	fi
done
# The runbook plan has no cells of its own: its dry run reported above.
if [ "$plan" != runbook ]; then
	/usr/bin/python3 "$TOP/bench/bench_report.py" "$out" || rc=1
fi
log "bench ($plan) finished in $(( $(date +%s) - start ))s with exit $rc; results in $out"
exit $rc
