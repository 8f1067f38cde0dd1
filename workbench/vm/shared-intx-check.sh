#!/bin/bash
# igb on a legacy INTx line it shares with other devices: boot KERNEL with
# MSI off (pci=nomsi) and igb's ports on the lines of the two virtio_net
# NICs, bring igb up, and rebind each virtio_net that shares igb's line,
# which frees that NIC's IRQ action there. An IRQ affinity notifier that
# igb left on the shared line makes free_irq() warn. Not in make test (a
# boot of its own); exit 0 when no warning was logged.
# usage: shared-intx-check.sh KERNEL
. "$(dirname "$0")/../lib.sh"
if [ "${1:-}" = --guest ]; then
	for dev in /sys/class/net/*; do
		[ "$(basename "$(readlink -f "$dev/device/driver")")" = igb ] || continue
		ip link set dev "${dev##*/}" up
		irq=$(cat "$dev/device/irq")
		for vdev in /sys/bus/virtio/devices/*; do
			if [ "$(cat "$vdev/../irq")" != "$irq" ] ||
			   [ "$(basename "$(readlink -f "$vdev/driver")")" != virtio_net ]; then
				continue
			fi
			echo "${dev##*/} shares IRQ $irq with ${vdev##*/} (virtio_net): rebinding it"
			echo "${vdev##*/}" >/sys/bus/virtio/drivers/virtio_net/unbind
			echo "${vdev##*/}" >/sys/bus/virtio/drivers/virtio_net/bind
		done
	done
	grep "" /proc/interrupts
	dmesg | grep -A2 WARNING && exit 1
	exit 0
fi
kernel=$1 out=$RESULTS/shared-intx
rm -rf "$out"
mkdir -p "$out"
# e1000e first: igb's root ports then take the INTx lines of the virtio NICs.
VM_NETWORK=loop VM_APPEND=pci=nomsi VM_NICS="e1000e igb" "$TOP/workbench/vm/vm.sh" "$kernel" "$out" 300 \
	"$TOP/workbench/vm/shared-intx-check.sh --guest >$out/guest.log 2>&1; echo \$? >$out/rc"
cat "$out/guest.log"
[ "$(cat "$out/rc" 2>/dev/null)" = 0 ] || die "free_irq() warned on a line igb shares (or the guest did not finish)"
log "shared INTx lines: no warning"
