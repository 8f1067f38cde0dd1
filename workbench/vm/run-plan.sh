#!/bin/bash
# Boot a VM that runs the selftest plan DIR/plan (plan_entries' lines)
# from the installed selftests KSFT, with the NICs the plan names, for at
# most LIMIT seconds. Results go to DIR (guest-run-tests.sh). KERNEL_SRC
# and KERNEL_OBJ are the kernel's source and build tree (for bpftrace).
# usage: run-plan.sh KERNEL KSFT DIR LIMIT KERNEL_SRC KERNEL_OBJ
# Environment: VM_ACCEL (the accelerator, asked once by the caller),
# GUEST_BUDGET (seconds the guest may start tests for; empty: no check),
# and the tests' own NAPI_RECONFIG_* settings.
. "$(dirname "$0")/../lib.sh"
kernel=$1 ksft=$2 dir=$3 limit=$4 kernel_src=$5 kernel_obj=$6
# A test on a virtio NIC needs 'vng --network loop', on any other NIC a
# pair of that QEMU model (igb: QEMU 8.0+; deps.sh installs 10 from
# bookworm-backports). A NIC this QEMU lacks SKIPs its tests, loudly,
# with the reason.
awk '$3 == "virtio" {f = 1} END {exit !f}' "$dir/plan" && export VM_NETWORK=loop
NIC_WHY=
for nic in $(awk '$3 != "" && $3 != "virtio" {print $3}' "$dir/plan" | sort -u); do
	use_nic "$nic" "the $nic tests SKIP"
done
slow=no
# 6.12's selftests relax their timing checks on KSFT_MACHINE_SLOW=yes:
# emulation and KASAN are such machines.
{ [ "${VM_ACCEL:?}" = tcg ] || [ "$FLAVOUR" = kasan ] || [ "$FLAVOUR" = kcsan ]; } && slow=yes
# 6.12's KASAN takes the direct map for wild memory when an interrupt
# lands while identify_cpu() has cleared the boot CPU's feature bits: its
# shadow bounds follow X86_FEATURE_LA57, which TCG's "max" CPU offers
# (a report at boot, "wild-memory-access in do_raw_spin_lock" under
# handle_edge_irq). 4-level paging keeps the bounds fixed.
[ "$FLAVOUR" = kasan ] && export VM_APPEND="no5lvl${VM_APPEND:+ $VM_APPEND}"
exec "$TOP/workbench/vm/vm.sh" "$kernel" "$dir" "$limit" \
	"env GUEST_BUDGET=${GUEST_BUDGET:-} KSFT_MACHINE_SLOW=$slow NAPI_RECONFIG_LOOPS=${NAPI_RECONFIG_LOOPS:-1} NAPI_RECONFIG_RING_SECONDS=${NAPI_RECONFIG_RING_SECONDS:-30} ${NAPI_RECONFIG_CASES:+NAPI_RECONFIG_CASES=$NAPI_RECONFIG_CASES} SKIP_WHY='$NIC_WHY' BPFTRACE_KERNEL_SOURCE=$kernel_src BPFTRACE_KERNEL_BUILD=$kernel_obj $TOP/workbench/vm/guest-run-tests.sh $ksft $dir"
