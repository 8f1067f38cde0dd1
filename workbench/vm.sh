#!/bin/bash
# Boot KERNEL with virtme-ng, sharing the host root read-only, and run CMD
# in the guest. The console goes to RWDIR/console.log.
# usage: vm.sh KERNEL RWDIR TIMEOUT CMD
# VM_ACCEL=kvm|tcg forces the accelerator. Under TCG the default is
# single-threaded TCG: with one host thread per vCPU, live kernel code
# patching (static keys, enabling tracepoints) races the emulator and
# kills the guest with "Oops: int3" now and then. VM_TCG_THREAD=multi
# selects multi-threaded TCG, faster but exposed to that.
. "$(dirname "$0")/lib.sh"
kernel=$1 rwdir=$2 limit=$3 command=$4
export PATH=$VENV/bin:$PATH

accel=${VM_ACCEL:-$("$TOP/workbench/vm-accel.sh" "$kernel")}
# --verbose and loglevel=4 put kernel warnings on the console, so a
# crash that kills the VM is still in console.log.
args=(--run "$kernel" --cpus "${VM_CPUS:-2}" --memory "${VM_MEMORY:-2G}"
      --rwdir "$rwdir" --cwd "$TOP" --verbose --append "loglevel=4"
      --exec "$command")
# VM_NETWORK=loop adds two virtio-net NICs (eth0, eth1) on one QEMU hub.
[ -n "${VM_NETWORK:-}" ] && args+=(--network "$VM_NETWORK" --no-dhcp)
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
