#!/bin/bash
# Boot KERNEL with virtme-ng, sharing the host root read-only, and run CMD
# in the guest. The console goes to RWDIR/console.log.
# usage: vm.sh KERNEL RWDIR TIMEOUT CMD
# VM_ACCEL=kvm|tcg forces the accelerator; VM_TCG_THREAD=single selects
# single-threaded TCG.
. "$(dirname "$0")/lib.sh"
kernel=$1 rwdir=$2 limit=$3 command=$4
export PATH=$VENV/bin:$PATH

accel=${VM_ACCEL:-$("$TOP/workbench/vm-accel.sh" "$kernel")}
# --verbose and loglevel=4 put kernel warnings on the console, so a
# crash that kills the VM is still in console.log.
args=(--run "$kernel" --cpus "${VM_CPUS:-2}" --memory "${VM_MEMORY:-2G}"
      --rwdir "$rwdir" --cwd "$TOP" --verbose --append "loglevel=4"
      --exec "$command")
if [ "$accel" = tcg ]; then
	args+=(--disable-kvm)
	[ "${VM_TCG_THREAD:-multi}" = single ] && args+=("--qemu-opts=-accel tcg,thread=single")
fi
mkdir -p "$rwdir"
echo "$accel${VM_TCG_THREAD:+ (thread=$VM_TCG_THREAD)}" >"$rwdir/accel"
log "booting $kernel under $accel${VM_TCG_THREAD:+ thread=$VM_TCG_THREAD} (timeout ${limit}s)"
set +e
timeout -k 10 "$limit" vng "${args[@]}" </dev/null >"$rwdir/console.log" 2>&1
rc=$?
set -e
[ $rc = 124 ] && log "VM timed out after ${limit}s"
exit $rc
