# shellcheck shell=bash
# Helpers for the guest-side demo: a linked netdevsim pair in two netns.
YNL_SRC=${YNL_SRC:?}
ynl() { # ns op json
	ip netns exec "$1" python3 "$YNL_SRC/tools/net/ynl/cli.py" \
		--spec "$YNL_SRC/Documentation/netlink/specs/netdev.yaml" --no-schema "${@:2}"
}
say() { printf '\n## %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

# nsim_pair QUEUES: netdevsim devices 1 and 2 in namespaces nsA and nsB,
# linked back to back, addressed 192.0.2.1/24 and 192.0.2.2/24.
nsim_pair() {
	local q=$1 ns i dev fd_a fd_b
	for i in 1 2; do
		ns=ns$( [ $i = 1 ] && echo A || echo B)
		ip netns add "$ns"
		echo "$i 1 $q" >/sys/bus/netdevsim/new_device
		dev=$(ls /sys/bus/netdevsim/devices/netdevsim$i/net/)
		ip link set dev "$dev" netns "$ns"
		ip -n "$ns" link set dev "$dev" name nsim$i
		ip -n "$ns" addr add 192.0.2.$i/24 dev nsim$i
		ip -n "$ns" link set dev nsim$i up
	done
	exec {fd_a}</run/netns/nsA {fd_b}</run/netns/nsB
	echo "$fd_a:$(ifindex nsA nsim1) $fd_b:$(ifindex nsB nsim2)" >/sys/bus/netdevsim/link_device
	exec {fd_a}<&- {fd_b}<&-
}

ifindex() { # ns dev
	ip -n "$1" -j link show "$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["ifindex"])'
}

# wait_for SECONDS CMD...: poll CMD until it succeeds, fail after SECONDS.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || { echo "timed out waiting for: $*" >&2; return 1; }
		sleep 0.01
	done
}

listening() { # ns port
	ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q LISTEN
}
