#!/bin/bash
# Boot KERNEL with virtme-ng, sharing the host root read-only, and run CMD
# in the guest. The console goes to RWDIR/console.log.
# usage: vm.sh KERNEL RWDIR TIMEOUT CMD
# VM_ACCEL=kvm|tcg forces the accelerator. Under TCG the default is
# single-threaded TCG: with one host thread per vCPU, live kernel code
# patching (static keys, enabling tracepoints) races the emulator and
# kills the guest with "Oops: int3" now and then. VM_TCG_THREAD=multi
# selects multi-threaded TCG, faster but exposed to that.
. "$(dirname "$0")/../lib.sh"
kernel=$1 rwdir=$2 limit=$3 command=$4
export PATH=$VENV/bin:$PATH

accel=${VM_ACCEL:-$("$TOP/workbench/vm/vm-accel.sh" "$kernel")}
# --verbose and loglevel=4 put kernel warnings on the console, so a
# crash that kills the VM is still in console.log.
args=(--run "$kernel" --cpus "${VM_CPUS:-2}" --memory "${VM_MEMORY:-2G}"
      --rwdir "$rwdir" --cwd "$TOP" --verbose --append "loglevel=4${VM_APPEND:+ $VM_APPEND}"
      --exec "$command")
# VM_NETWORK=loop adds two virtio-net NICs (eth0, eth1) on one QEMU hub.
[ -n "${VM_NETWORK:-}" ] && args+=(--network "$VM_NETWORK" --no-dhcp)
# VM_NICS="igb e1000e pcnet ..." adds two NICs of each QEMU model on a hub
# of their own. PCIe NICs sit each behind a PCIe root port of its own:
# an igb reserves the two slots 16 above its own for its SR-IOV VFs,
# which the root bus (vng's devices in slots 1 to 11, q35's LPC in 31)
# cannot spare twice. Conventional PCI NICs sit on the root bus. The
# n-th model's NICs are at slots 12 + 2n and 13 + 2n, with MAC addresses
# 52:54:00:1b:0n:00 and :01.
n=0
for model in ${VM_NICS:-}; do
	qemu_has_nic "$model" || die "VM_NICS: $(qemu-system-x86_64 --version | sed -n 1p) has no $model"
	nics=
	for i in 0 1; do
		slot=$((12 + 2 * n + i))
		case $model in
		igb | e1000e | vmxnet3)
			nics+=" -device pcie-root-port,id=${model}port$i,chassis=$((58 + slot)),addr=$(printf 0x%x "$slot")"
			bus=bus=${model}port$i ;;
		*) bus=bus=pcie.0,addr=$(printf 0x%x "$slot") ;;
		esac
		nics+=" -netdev hubport,id=${model}$i,hubid=$((7 + n))"
		nics+=" -device $model,$bus,netdev=${model}$i,mac=52:54:00:1b:0$n:0$i"
	done
	args+=("--qemu-opts=${nics# }")
	n=$((n + 1))
done
# VM_QEMU_OPTS: more QEMU options (make bench's instruction counter plugin).
[ -n "${VM_QEMU_OPTS:-}" ] && args+=("--qemu-opts=$VM_QEMU_OPTS")
tcg_thread=
if [ "$accel" = tcg ]; then
	tcg_thread=${VM_TCG_THREAD:-single}
	args+=(--disable-kvm)
	[ "$tcg_thread" = single ] && args+=("--qemu-opts=-accel tcg,thread=single")
fi
mkdir -p "$rwdir"
echo "$accel${tcg_thread:+ (thread=$tcg_thread)}" >"$rwdir/accel"
log "booting $kernel under $accel${tcg_thread:+ thread=$tcg_thread} (timeout ${limit}s)"
set +e
timeout -k 10 "$limit" vng "${args[@]}" </dev/null >"$rwdir/console.log" 2>&1
rc=$?
set -e
[ $rc = 124 ] && log "VM timed out after ${limit}s"
exit $rc
