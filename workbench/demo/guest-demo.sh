#!/bin/bash
# Runs inside the VM for 'make run': shows what the series offers on two
# linked netdevsim devices in two network namespaces.
# usage: guest-demo.sh SRC KSFT_DIR
set -eu
export YNL_SRC=$1
poller=$2/net/busy_poller
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

napi_dump() { ynl nsA --dump napi-get --json "{\"ifindex\": $ifi}"; }

if [ -w /sys/class/net ] && ip netns exec nsA sh -c 'echo 2 > /sys/class/net/nsim1/threaded' 2>/dev/null; then
	say "Threaded NAPI busy polling: sysfs threaded = 2 on nsim1"
	show napi_dump
	pids=$(napi_dump | python3 -c 'import ast,sys; print(" ".join(str(n["pid"]) for n in ast.literal_eval(sys.stdin.read()) if "pid" in n))')
	show ps -o pid,comm,stat,time -p "${pids// /,}"
	say "back to softirq: sysfs threaded = 0 (kthreads stop, pid disappears)"
	show ip netns exec nsA sh -c 'echo 0 > /sys/class/net/nsim1/threaded'
	show napi_dump
else
	say "this kernel has no threaded busy poll mode"
fi

if [ -x "$poller" ] && [ -d /sys/kernel/tracing/events/napi/napi_irq_suspend ]; then
	say "epoll application with prefer_busy_poll and IRQ suspension (busy_poller)"
	echo "busy_poller: EPIOCSPARAMS busy_poll_usecs=0 budget=64 prefer_busy_poll=1;"
	echo "napi-set: defer-hard-irqs=100 gro-flush-timeout=2000000 irq-suspend-timeout=20000000"
	t=/sys/kernel/tracing
	echo >"$t/trace"
	echo 1 >"$t/events/napi/napi_irq_suspend/enable"
	echo 1 >"$t/events/napi/napi_irq_resume/enable"
	head -c 10000000 /dev/urandom >/tmp/demo-bp-tx
	ip netns exec nsA "$poller" -p 5301 -b 192.0.2.1 -o /tmp/demo-bp-rx -u 0 -g 64 -P 1 \
		-d 100 -r 2000000 -s 20000000 >/tmp/demo-bp.json &
	wait_for 10 grep -q listening /tmp/demo-bp.json
	ip netns exec nsB socat -u OPEN:/tmp/demo-bp-tx TCP:192.0.2.1:5301
	wait
	echo 0 >"$t/events/napi/napi_irq_suspend/enable"
	echo 0 >"$t/events/napi/napi_irq_resume/enable"
	tail -1 /tmp/demo-bp.json
	echo "data intact: $(cmp -s /tmp/demo-bp-tx /tmp/demo-bp-rx && echo yes || echo NO)"
	echo "tracepoint events (reason: count):"
	grep -o 'napi_irq_[a-z]*:.*reason=[a-z]*' "$t/trace" |
		sed -E 's/(napi_irq_[a-z]*):.*reason=([a-z]*)/\1 \2/' | sort | uniq -c
fi

rr=$(dirname "$0")/../../bench/rr/napi_rr
if [ -x "$rr" ]; then
	say "UDP request/response latency with bench/rr/napi_rr, 2 s at 500 requests/s per mode"
	echo "(under TCG absolute times mean little; compare the modes)"
	ip netns exec nsA "$rr" server --transport udp --ifname nsim1 --addr 192.0.2.1 \
		--port 5401 >/tmp/demo-rr-server.json &
	srv=$!
	wait_for 10 grep -q '"ready":true' /tmp/demo-rr-server.json
	for mode in 0 2; do
		ip netns exec nsA sh -c "echo $mode > /sys/class/net/nsim1/threaded" 2>/dev/null || continue
		ip netns exec nsB "$rr" client --transport udp --ifname nsim2 --src 192.0.2.2 \
			--dst 192.0.2.1 --port 5401 --rate 500 --duration 2 --warmup 0.2 \
			--json /tmp/demo-rr.json >/dev/null
		python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
lat = r["latency_ns"] or {}
us = [round(lat[p] / 1000, 1) if lat.get(p) is not None else None for p in ("p50", "p99")]
print("threaded=%s: %s of %s replies, p50 %s us, p99 %s us" % (sys.argv[2], r["received"], r["sent"], *us))' \
			/tmp/demo-rr.json "$mode"
	done
	ip netns exec nsA sh -c 'echo 0 > /sys/class/net/nsim1/threaded' 2>/dev/null
	kill "$srv"
	wait "$srv" || true
fi

say "10 MB of TCP from nsB to nsA over the pair"
ip netns exec nsA socat -u TCP-LISTEN:5201,reuseaddr OPEN:/tmp/demo-rx,creat,trunc &
wait_for 10 listening nsA 5201
head -c 10000000 /dev/urandom >/tmp/demo-tx
start=$(date +%s.%N)
ip netns exec nsB socat -u OPEN:/tmp/demo-tx TCP:192.0.2.1:5201
wait
end=$(date +%s.%N)
printf 'sent %s, received %s bytes in %.2fs, checksums %s\n' \
	"$(stat -c %s /tmp/demo-tx)" "$(stat -c %s /tmp/demo-rx)" "$(echo "$end - $start" | bc)" \
	"$( [ "$(md5sum </tmp/demo-tx)" = "$(md5sum </tmp/demo-rx)" ] && echo match || echo DIFFER)"
