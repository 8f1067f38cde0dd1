#!/bin/bash
# Runs inside the VM: each selftest of RESULTS_DIR/plan ("TEST LIMIT"
# lines, written by test.sh) under its own time limit, with the kernel
# log of each test saved next to its TAP output.
# usage: guest-run-tests.sh KSFT_DIR RESULTS_DIR
# GUEST_BUDGET (seconds, from test.sh): what the whole plan may take. A
# test whose time limit does not fit in what is left of it is not
# started (its result line says "budget"), so that none is cut short;
# the next ones may fit. selftests.list is in priority order.
set -u
ksft=$1 out=$2
budget=${GUEST_BUDGET:-}
# What udevadm prints when udevd drops its control connection mid-request
# (seen once in CI in mainline's nsim.py, under TCG).
UDEVD_CTRL_RESET="Failed to wait for daemon to reply"
began=$(date +%s)
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
# the environment, NetDrvEpEnv also the remote end) at a real NIC of the
# VM: "virtio" is the first virtio-net NIC of 'vng --network loop' by MAC
# address, a QEMU model's name (igb, e1000e, pcnet, e1000, i82559er,
# rtl8139, tulip, vmxnet3) the first NIC of that model (VM_NICS), each with the next NIC of its kind as the remote end in a
# netns; "netdevsim" or nothing leaves them on netdevsim. (The shared
# ksft tree is read-only here, so no net.config.)
nic_config() {
	unset NETIF LOCAL_V4 REMOTE_V4 LOCAL_V6 REMOTE_V6 REMOTE_TYPE REMOTE_ARGS
	case $1 in
	virtio) driver=virtio_net prefix=198.51.100 ;;
	igb) driver=igb prefix=203.0.113 ;;
	e1000e) driver=e1000e prefix=198.18.5 ;;
	pcnet) driver=pcnet32 prefix=2001:db8:6:: ;;
	e1000) driver=e1000 prefix=198.18.7 ;;
	i82559er) driver=e100 prefix=198.18.8 ;;
	rtl8139) driver=8139cp prefix=198.18.9 ;;
	tulip) driver=tulip prefix=198.18.10 ;;
	vmxnet3) driver=vmxnet3 prefix=198.18.11 ;;
	*) return 0 ;;
	esac
	udevadm settle 2>/dev/null
	NETIF=$(nics_of "$driver" | awk 'NR == 1 {print $2}')
	export NETIF
	park_peers "$driver"
	[ -n "$NETIF" ] && endpoint "$driver" "$prefix"
}

# endpoint DRIVER PREFIX: the first parked NIC of DRIVER is the remote
# end of NetDrvEpEnv tests (drivers/net/README.rst's netns remote), on a
# /24 of its own per driver (netdevsim tests use 192.0.2.0/24), or a /64
# where PREFIX is IPv6. pcnet32 gets IPv6: it leaves the padding of short
# frames to the chip (CSR4 APAD_XMT), which QEMU's pcnet does not do, and
# drops a frame under 60 bytes as a runt, so ARP (42) never gets through;
# IPv6 sends nothing that short (neighbour discovery: 86).
endpoint() {
	local peer netns=$1-peers
	peer=$(nics_in "$netns" | head -1)
	[ -n "$peer" ] || return 0
	ip -n "$netns" link set dev lo up
	case $2 in
	*:*)
		# Kept over a link cycle, as IPv4 addresses are; no DAD.
		ip netns exec "$netns" sysctl -qw "net.ipv6.conf.$peer.disable_ipv6=0" \
			"net.ipv6.conf.$peer.keep_addr_on_down=1"
		sysctl -qw "net.ipv6.conf.$NETIF.keep_addr_on_down=1"
		ip -n "$netns" addr replace "${2}2/64" dev "$peer" nodad
		ip addr replace "${2}1/64" dev "$NETIF" nodad
		export LOCAL_V6=${2}1 REMOTE_V6=${2}2 ;;
	*)
		ip -n "$netns" addr replace "$2.2/24" dev "$peer"
		ip addr replace "$2.1/24" dev "$NETIF"
		export LOCAL_V4=$2.1 REMOTE_V4=$2.2 ;;
	esac
	ip link set dev "$NETIF" up
	export REMOTE_TYPE=netns REMOTE_ARGS=$netns
	# A NIC negotiates its (emulated) link before it passes traffic.
	for _ in $(seq 100); do
		ping -c1 -W1 "${REMOTE_V4:-$REMOTE_V6}" >/dev/null 2>&1 && return 0
	done
	echo "guest: $1 pair does not pass traffic" >&2
}

# nics_in NETNS: the NICs parked there, sorted by MAC (from "ip -d -o
# link": "N: NAME[@PEER]: <...> ... link/ether MAC ... parentdev BUSID"),
# not the netns's own fallback tunnels (gretap0, erspan0: link/ether
# 00:00:00:00:00:00, no parent device).
nics_in() {
	ip -n "$1" -d -o link show | awk '/ parentdev / {
		name = $2; sub(/@.*/, "", name); sub(/:$/, "", name)
		for (i = 3; i < NF; i++) if ($i == "link/ether") print $(i + 1), name
	}' | sort | awk '{print $2}'
}

# nics_of DRIVER: "MAC NAME" of each NIC of DRIVER here, sorted by MAC,
# as the benchmarks find theirs.
nics_of() {
	python3 "$(dirname "$0")/../../bench/nic_irqs.py" nics "$1"
}

# The other NICs of DRIVER share the first one's QEMU hub, which holds
# a frame until every other port can take it: a NIC that is down posts
# no RX buffers, and the TX queue of the one sending times out. So they
# go up, in a netns of their own (no second route to the tests'
# subnets), and silent (no IPv6; only the remote end of endpoint() gets
# an IPv4 address): the others only drop what they receive.
park_peers() {
	local nic netns=$1-peers
	ip netns add "$netns" 2>/dev/null || return 0
	nics_of "$1" | while read -r _ nic; do
		[ "$nic" != "$NETIF" ] &&
			ip link set dev "$nic" netns "$netns" &&
			ip netns exec "$netns" sysctl -qw "net.ipv6.conf.$nic.disable_ipv6=1" &&
			ip -n "$netns" link set dev "$nic" up
	done
}

# stacks FILE: every task's state, and the kernel stack of each task
# that is blocked, running or a process's (not an idle kernel thread's):
# what a test that reached its time limit was waiting for, taken before
# the limit kills it. Not through the kernel log, whose splat scan is
# the test's.
stacks() {
	local task state
	{
		ps -eLo pid,tid,stat,wchan:32,comm
		for task in /proc/[0-9]*/task/[0-9]*; do
			state=$(awk '/^State:/ {print $2}' "$task/status" 2>/dev/null)
			case $state in
			D | R) ;;
			# procfs sizes are 0: a kernel thread's cmdline is empty.
			*) grep -q . "${task%/task/*}/cmdline" 2>/dev/null || continue ;;
			esac
			echo "== $task $state $(cat "$task/comm" 2>/dev/null)"
			cat "$task/stack" 2>/dev/null
		done
	} >"$1"
}

# run_entry: runs the plan entry of the loop below ($test, $limit,
# $vars, $name) into tests/$name.tap; sets rc.
run_entry() {
	# Appended to: the kselftest runner reopens /dev/stdout for the
	# nested output, which must not overwrite ours.
	: >"$out/tests/$name.tap"
	if [ "${nic:-netdevsim}" != netdevsim ] && [ -z "${NETIF:-}" ]; then
		# Loud, not silent: the host's QEMU could not give us this NIC.
		printf 'TAP version 13\n1..1\nok 1 %s # SKIP no %s NIC in this VM%s\n' "$test" "$nic" \
			"${SKIP_WHY:+ ($SKIP_WHY)}" >>"$out/tests/$name.tap"
		rc=4
	else
		(sleep $((limit - 15)) && timeout 10 bash -c "$(declare -f stacks); stacks $out/tests/$name.stacks") &
		watchdog=$!
		# The entry's VAR=VALUE settings, unless make test was given VAR.
		entry_env=()
		for setting in $vars; do
			var=${setting%%=*}
			[ -n "${!var:-}" ] || entry_env+=("$setting")
		done
		(cd "$ksft" && env "${entry_env[@]}" timeout -k 10 $((limit + 30)) ./run_kselftest.sh -o "$limit" -t "$test") \
			>>"$out/tests/$name.tap" 2>&1
		rc=$?
		pkill -P "$watchdog" sleep
		kill "$watchdog" 2>/dev/null
		wait "$watchdog" 2>/dev/null
	fi
}

while read -r test limit nic vars; do
	# A test run on a real NIC is its own entry: TEST@NIC.
	id=$test${nic:+@$nic}
	name=${id//[:\/@]/_}
	if [ -n "$budget" ]; then
		left=$((budget - ($(date +%s) - began)))
		if [ "$left" -lt "$limit" ]; then
			printf '{"test": "%s", "rc": -1, "seconds": 0, "timeout": %d, "budget": %d, "left": %d}\n' \
				"$id" "$limit" "$budget" "$left" >>"$out/guest-results.jsonl"
			echo "guest: $id not started: its ${limit}s limit exceeds the ${left}s left of the budget"
			continue
		fi
	fi
	nic_config "${nic:-netdevsim}"
	# The previous test's device events are handled before this one
	# starts (tests call "udevadm settle" themselves).
	udevadm settle --timeout=60 2>/dev/null
	echo "$id" >"$out/current-test"
	dmesg -C
	start=$(date +%s.%N)
	run_entry
	retried=
	if [ "$rc" != 0 ] && grep -q "$UDEVD_CTRL_RESET" "$out/tests/$name.tap" &&
		{ [ -z "$budget" ] || [ $((budget - ($(date +%s) - began))) -ge "$limit" ]; }; then
		# Not the kernel's doing: udevd closed a control connection.
		# The first run's output is kept; the result says it was retried.
		mv "$out/tests/$name.tap" "$out/tests/$name.try1.tap"
		echo "guest: $id rc=$rc: udevd closed its control connection, running it again"
		udevadm settle --timeout=60 2>/dev/null
		retried=', "retried": "udevd closed its control connection"'
		run_entry
	fi
	end=$(date +%s.%N)
	dmesg >"$out/tests/$name.dmesg"
	printf '{"test": "%s", "rc": %d, "seconds": %.1f, "timeout": %d%s}\n' \
		"$id" "$rc" "$(echo "$end - $start" | bc)" "$limit" "$retried" >>"$out/guest-results.jsonl"
	echo "guest: $id rc=$rc"
done <"$out/plan"
rm -f "$out/current-test"
echo "done" >"$out/guest-finished"
