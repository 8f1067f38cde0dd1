#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Smoke test of napi_rr on this host: two network namespaces joined by a
# veth pair, server in one, client in the other, every transport x poll
# mode at a low rate.  Run as root.  Usage: netns_test.sh [RATE] [SECS]
set -u
here=$(cd "$(dirname "$0")" && pwd)
rr=$here/napi_rr
rate=${1:-2000}
secs=${2:-2}
out=${OUT:-/tmp/napi_rr_test}
nss=rrsrv nsc=rrcli port=54321
fail=0

cleanup() {
	ip netns del $nss 2>/dev/null
	ip netns del $nsc 2>/dev/null
}
trap cleanup EXIT
cleanup
mkdir -p "$out"
ip netns add $nss && ip netns add $nsc || exit 1
ip link add rrv0 netns $nss type veth peer name rrv1 netns $nsc || exit 1
ip -n $nss addr add 10.77.0.2/24 dev rrv0
ip -n $nsc addr add 10.77.0.1/24 dev rrv1
ip -n $nss link set rrv0 up
ip -n $nsc link set rrv1 up
ip -n $nss link set lo up
ip -n $nsc link set lo up
ip netns exec $nsc ping -q -c 2 -W 1 10.77.0.2 >/dev/null || { echo "ping failed"; exit 1; }

for tr in udp xdp; do
	for mode in block busy busy-thread none epoll; do
		tag=$tr-$mode
		ip netns exec $nss "$rr" server --transport $tr --ifname rrv0 --addr 10.77.0.2 \
			--port $port --poll $mode >"$out/$tag.server" 2>&1 &
		spid=$!
		sleep 0.5
		if [ $tr = xdp ]; then
			ip -n $nss link show rrv0 | grep -q xdpgeneric || { echo "$tag: no xdpgeneric on server"; fail=1; }
		fi
		# ARP/ICMP must keep working while both ends have XDP attached
		(sleep 1; ip netns exec $nsc ping -q -c 3 -i 0.2 -W 1 10.77.0.2 >/dev/null) &
		ppid=$!
		ip netns exec $nsc "$rr" client --transport $tr --ifname rrv1 --src 10.77.0.1 \
			--dst 10.77.0.2 --port $port --rate $rate --delay 30 --duration $secs \
			--warmup 0.5 --poll $mode --json "$out/$tag.json" >"$out/$tag.client" 2>&1
		crc=$?
		wait $ppid && ping_ok=yes || ping_ok=no
		kill -TERM $spid
		wait $spid
		src=$?
		xdp_left=$( (ip -n $nss link show rrv0; ip -n $nsc link show rrv1) | grep -c xdp)
		lost=$(python3 -c "import json;print(json.load(open('$out/$tag.json'))['lost'])" 2>/dev/null)
		echo "$tag: client rc=$crc server rc=$src lost=${lost:-?} ping_during=$ping_ok xdp_left=$xdp_left"
		sed -n 2,4p "$out/$tag.client"
		[ $crc = 0 ] && [ $src = 0 ] && [ "$lost" = 0 ] && [ $ping_ok = yes ] && \
			[ "$xdp_left" = 0 ] || fail=1
	done
done
[ $fail = 0 ] && echo "ALL OK" || echo "FAILURES"
exit $fail
