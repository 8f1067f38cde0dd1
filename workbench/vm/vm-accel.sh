#!/bin/bash
# Print the accelerator to boot KERNEL with: "kvm" if a short KVM boot
# completes, else "tcg". Nested KVM can hang at "Decompressing Linux...",
# so KVM is never assumed. The answer is cached for this host boot.
. "$(dirname "$0")/../lib.sh"
kernel=$1
export PATH=$VENV/bin:$PATH
cache=$CACHE/accel.$(cat /proc/sys/kernel/random/boot_id)

if [ -f "$cache" ]; then
	cat "$cache"
	exit 0
fi
accel=tcg
if [ -w /dev/kvm ]; then
	probe=$(mktemp -d)
	if timeout -k 5 "${KVM_PROBE_TIMEOUT:-40}" vng --run "$kernel" --rwdir "$probe" \
		--exec "touch $probe/booted" </dev/null >"$probe/console.log" 2>&1 &&
		[ -f "$probe/booted" ]; then
		accel=kvm
	fi
	rm -rf "$probe"
fi
log "KVM probe: using $accel"
echo "$accel" | tee "$cache"
