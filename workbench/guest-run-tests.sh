#!/bin/bash
# Runs inside the VM: each selftest of RESULTS_DIR/plan ("TEST LIMIT"
# lines, written by test.sh) under its own time limit, with the kernel
# log of each test saved next to its TAP output.
# usage: guest-run-tests.sh KSFT_DIR RESULTS_DIR
set -u
ksft=$1 out=$2
mkdir -p "$out/tests"
# The kselftest runner writes through /dev/stdout, which must follow our
# redirections (the VM's init may leave it pointing at the console).
for fd in 0:stdin 1:stdout 2:stderr; do
	ln -sfn "/proc/self/fd/${fd%%:*}" "/dev/${fd#*:}"
done
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
mountpoint -q /sys/kernel/tracing || mount -t tracefs none /sys/kernel/tracing
: >"$out/guest-results.jsonl"
uname -r >"$out/guest-kernel"

# nic_config NIC: point the drivers/net tests (NetDrvEnv reads NETIF from
# the environment) at a real NIC of the VM: "virtio" is the first
# virtio-net NIC of 'vng --network loop' by MAC address; anything else
# leaves them on netdevsim. (The shared ksft tree is read-only here, so
# no net.config.)
nic_config() {
	unset NETIF
	[ "$1" = virtio ] || return 0
	udevadm settle 2>/dev/null
	NETIF=$(virtio_nics | awk 'NR == 1 {print $2}')
	export NETIF
	park_virtio_peers
}

# virtio_nics: "MAC NAME" of each virtio-net NIC here, sorted by MAC.
virtio_nics() {
	local d
	for d in /sys/class/net/*; do
		[ "$(basename "$(readlink "$d/device/driver" 2>/dev/null)")" = virtio_net ] &&
			echo "$(cat "$d/address") $(basename "$d")"
	done | sort
}

# The other virtio-net NICs share the first one's QEMU hub, which holds
# a frame until every other port can take it: a NIC that is down posts
# no RX buffers, and the TX queue of the one sending times out. So they
# go up, in a netns of their own (no second route to the tests'
# subnets), and silent (no IPv6, no IPv4 address): they only drop what
# they receive.
park_virtio_peers() {
	local mac nic
	ip netns add virtio-peers 2>/dev/null || return 0
	virtio_nics | while read -r mac nic; do
		[ "$nic" != "$NETIF" ] &&
			ip link set dev "$nic" netns virtio-peers &&
			ip netns exec virtio-peers sysctl -qw "net.ipv6.conf.$nic.disable_ipv6=1" &&
			ip -n virtio-peers link set dev "$nic" up
	done
}

while read -r test limit nic; do
	nic_config "${nic:-netdevsim}"
	name=${test//[:\/]/_}
	echo "$test" >"$out/current-test"
	# Appended to: the kselftest runner reopens /dev/stdout for the
	# nested output, which must not overwrite ours.
	: >"$out/tests/$name.tap"
	dmesg -C
	start=$(date +%s.%N)
	(cd "$ksft" && timeout -k 10 $((limit + 30)) ./run_kselftest.sh -o "$limit" -t "$test") \
		>>"$out/tests/$name.tap" 2>&1
	rc=$?
	end=$(date +%s.%N)
	dmesg >"$out/tests/$name.dmesg"
	printf '{"test": "%s", "rc": %d, "seconds": %.1f, "timeout": %d}\n' \
		"$test" "$rc" "$(echo "$end - $start" | bc)" "$limit" >>"$out/guest-results.jsonl"
	echo "guest: $test rc=$rc"
done <"$out/plan"
rm -f "$out/current-test"
echo "done" >"$out/guest-finished"
