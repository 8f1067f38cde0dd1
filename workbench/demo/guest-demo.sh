#!/bin/bash
# Runs inside the VM for 'make run': shows what the series offers on two
# linked netdevsim devices in two network namespaces.
# usage: guest-demo.sh SRC
set -eu
export YNL_SRC=$1
. "$(dirname "$0")/lib.sh"

echo "# napi-series demo on $(uname -r)"
nsim_pair 2
ifi=$(ifindex nsA nsim1)

say "NAPIs of nsim1 (netdev-genl napi-get)"
show ynl nsA --dump napi-get --json "{\"ifindex\": $ifi}"
say "Queues of nsim1 and their NAPIs (queue-get)"
show ynl nsA --dump queue-get --json "{\"ifindex\": $ifi}"

if ynl nsA --list-ops 2>/dev/null | grep -qw napi-set; then
	first=$(ynl nsA --dump napi-get --json "{\"ifindex\": $ifi}" | python3 -c 'import ast,sys; print(min(n["id"] for n in ast.literal_eval(sys.stdin.read())))')
	say "Per-NAPI config: napi-set on NAPI $first only"
	show ynl nsA --do napi-set --json "{\"id\": $first, \"defer-hard-irqs\": 100, \"gro-flush-timeout\": 20000}"
	show ynl nsA --dump napi-get --json "{\"ifindex\": $ifi}"
	say "Settings and NAPI IDs survive down/up and 'ethtool -L' 2 -> 1 -> 2"
	show ip -n nsA link set nsim1 down
	show ip -n nsA link set nsim1 up
	show ip netns exec nsA ethtool -L nsim1 combined 1
	show ip netns exec nsA ethtool -L nsim1 combined 2
	show ynl nsA --dump napi-get --json "{\"ifindex\": $ifi}"
	say "sysfs napi_defer_hard_irqs still sets the whole device"
	show ip netns exec nsA sh -c 'echo 2 > /sys/class/net/nsim1/napi_defer_hard_irqs'
	show ynl nsA --dump napi-get --json "{\"ifindex\": $ifi}"
else
	say "this kernel has no napi-set yet"
fi

say "10 MB of TCP from nsB to nsA over the pair"
ip netns exec nsA socat -u TCP-LISTEN:5201,reuseaddr OPEN:/tmp/demo-rx,creat,trunc &
sleep_until_listen=0
while ! ip netns exec nsA ss -Hltn 'sport = :5201' | grep -q LISTEN; do
	sleep_until_listen=$((sleep_until_listen + 1))
	[ $sleep_until_listen -lt 500 ] || { echo "listener did not start"; exit 1; }
	sleep 0.01
done
head -c 10000000 /dev/urandom >/tmp/demo-tx
start=$(date +%s.%N)
ip netns exec nsB socat -u OPEN:/tmp/demo-tx TCP:192.0.2.1:5201
wait
end=$(date +%s.%N)
printf 'sent %s, received %s bytes in %.2fs, checksums %s\n' \
	"$(stat -c %s /tmp/demo-tx)" "$(stat -c %s /tmp/demo-rx)" "$(echo "$end - $start" | bc)" \
	"$( [ "$(md5sum </tmp/demo-tx)" = "$(md5sum </tmp/demo-rx)" ] && echo match || echo DIFFER)"
