#!/bin/bash
# virtio_net frozen under traffic: boot KERNEL (a KASAN kernel finds what
# this is for) with one virtio_net NIC fed ICMP echo requests from the
# host (frame_flood.py; the guest answers from softirq, so RX and TX
# NAPIs poll while user space is frozen) and freeze the system CYCLES
# times in the PM core's test mode ("devices": drivers freeze and
# restore, no sleep, pm_test_delay 0). virtnet_freeze_down() closes the
# device and frees its rings; a poll still running then reads them.
# The guest runs from an initramfs: the 9p root of the other VMs is a
# virtio device without freeze and restore callbacks and does not survive
# a freeze. A boot of its own: make test runs it in the KASAN flavour
# (FREEZE_CHECK). Exit 0 when every cycle froze and restored the guest
# under traffic and the kernel logged no splat. virtio-freeze-window.diff
# (test-only) widens the poll's window so the check shows the bug fast.
# usage: virtio-freeze-check.sh KERNEL [CYCLES]
splats='BUG:|WARNING:|KASAN:|UBSAN:|Oops|Kernel panic|blocked for more than|rcu: INFO|self-detected stall'
# The guest side, first: busybox's sh runs it, without lib.sh.
if [ "${1:-}" = --guest ]; then
	/bin/busybox --install -s /bin
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev
	cycles=$(sed -n 's/.*freeze_cycles=\([0-9]*\).*/\1/p' /proc/cmdline)
	i=0
	if ! { ip link set dev eth0 up && ip addr add 10.0.2.15/24 dev eth0 &&
		arp -s 10.0.2.1 52:54:00:00:00:01; }; then
		echo "freeze-check: eth0 could not be set up"
		cycles=0
	elif ! { echo devices >/sys/power/pm_test &&
		echo 0 >/sys/module/suspend/parameters/pm_test_delay; }; then
		echo "freeze-check: no PM test mode (CONFIG_PM_DEBUG, CONFIG_SUSPEND)"
		cycles=0
	fi
	stats=/sys/class/net/eth0/statistics
	while [ "$i" -lt "$cycles" ]; do
		# The counters start again at every restore.
		echo "freeze-check: cycle $((i + 1)): $(cat $stats/rx_packets) RX, $(cat $stats/tx_packets) TX packets since the last restore"
		if ! echo freeze >/sys/power/state; then
			echo "freeze-check: the freeze failed"
			break
		fi
		i=$((i + 1))
		dmesg | grep -q -E "$splats" && break
	done
	echo "freeze-check: $i of $cycles cycles"
	poweroff -f
fi
. "$(dirname "$0")/../lib.sh"
kernel=$1 cycles=${2:-200} out=$RESULTS/virtio-freeze
rm -rf "$out"
mkdir -p "$out/root/bin" "$out/root/proc" "$out/root/sys" "$out/root/dev"
cp /bin/busybox "$out/root/bin/busybox"
ln -s busybox "$out/root/bin/sh"
cp "$0" "$out/root/check.sh"
printf '#!/bin/sh\nexec /bin/sh /check.sh --guest\n' >"$out/root/init"
chmod +x "$out/root/init"
(cd "$out/root" && find . | cpio -o -H newc --quiet) >"$out/initramfs.cpio"
accel=$("$TOP/workbench/vm/vm-accel.sh" "$kernel")
[ "$accel" = tcg ] && accel="tcg,thread=${VM_TCG_THREAD:-single}"
# The NIC's frames travel as datagrams between two sockets in $out: no
# port to collide with. The flood binds the sink first, QEMU the NIC's.
nic=$out/nic.sock sink=$out/sink.sock
"$TOP/workbench/vm/frame_flood.py" "$nic" "$sink" 52:54:00:12:34:56 10.0.2.15 \
	"${FREEZE_FLOOD_RATE:-5000}" &
flood=$!
trap 'kill $flood 2>/dev/null' EXIT
for _ in $(seq 50); do [ -S "$sink" ] && break; sleep 0.1; done
[ -S "$sink" ] || die "frame_flood.py did not start"
log "freezing $kernel $cycles times under a flood (console: $out/console.log)"
timeout -k 10 "${FREEZE_CHECK_TIMEOUT:-$((120 + cycles * 15))}" qemu-system-x86_64 -accel "$accel" \
	-smp 2 -m 2G -display none -no-reboot -serial "file:$out/console.log" \
	-kernel "$kernel" -initrd "$out/initramfs.cpio" \
	-append "console=ttyS0 no_console_suspend rdinit=/init freeze_cycles=$cycles panic=-1 no_hash_pointers" \
	-netdev "dgram,id=n0,local.type=unix,local.path=$nic,remote.type=unix,remote.path=$sink" \
	-device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56 </dev/null || true
kill -0 "$flood" 2>/dev/null || die "frame_flood.py stopped during the run"
grep -E 'freeze-check: (cycle (1|[0-9]*0):|[^c])' "$out/console.log" || true
if grep -E -A30 "$splats" "$out/console.log"; then
	die "the kernel reported a bug while freezing virtio_net under traffic"
fi
grep -q "freeze-check: $cycles of $cycles cycles" "$out/console.log" ||
	die "the guest did not finish its $cycles cycles (see $out/console.log)"
grep -q -E 'freeze-check: cycle [0-9]+: [1-9][0-9]* RX' "$out/console.log" ||
	die "the guest received no packet between its freezes"
log "virtio_net frozen $cycles times under traffic: no report"
