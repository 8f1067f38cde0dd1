#!/bin/bash
# Runs inside the VM (or on a real machine, see README.md): the latency
# grid and the memcached sweep, results as JSON lines in OUT.
# usage: guest-bench.sh OUT SRC PLAN   (PLAN: full, smoke or baseline)
# BENCH_RR_ARGS / BENCH_MC_ARGS append options to rr_grid.py / mc_sweep.py.
set -eu
out=$1 src=$2 plan=$3
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
mkdir -p "$out"
mountpoint -q /sys/kernel/tracing || mount -t tracefs none /sys/kernel/tracing
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
# The seed's host set-up: no timer migration, RT tasks may use all CPU.
echo 0 >/proc/sys/kernel/timer_migration
echo -1 >/proc/sys/kernel/sched_rt_runtime_us
"$py" -c 'import json, sys; sys.path.insert(0, sys.argv[1]); import benchlib
print(json.dumps(benchlib.machine_info()))' "$here" >"$out/machine.json"

rr=(--out "$out" --src "$src" --napi-rr "$here/rr/napi_rr")
mc=(--out "$out" --src "$src" --mc-load "$here/memcached/mc_load"
    --preload "$here/memcached/libepoll_busy_poll.so")
case $plan in
full)
	# Sized for about an hour under TCG: 2 s cells, 3 repetitions.
	rr+=(--rate-scale "${BENCH_RATE_SCALE:-0.05}" --duration 2 --warmup 0.3)
	mc+=(--loads "${BENCH_MC_LOADS:-500 1000 2000 4000 0}" --duration 2 --warmup 0.3)
	;;
smoke)
	# One short cell per mode / variant: keeps the benchmark working.
	rr+=(--devices netdevsim --workloads 1 --rate-scale 0.05 --reps 1 --duration 1 --warmup 0.2)
	mc+=(--devices netdevsim --loads 500 --reps 1 --duration 1 --warmup 0.2)
	;;
baseline)
	# Cost when off: the interrupt-mode cells only, run on both kernels.
	rr+=(--modes interrupts --rate-scale "${BENCH_RATE_SCALE:-0.05}" --duration 2 --warmup 0.3)
	;;
*) echo "unknown plan $plan" >&2; exit 2 ;;
esac
rc=0
# shellcheck disable=SC2086
"$py" "$here/rr_grid.py" "${rr[@]}" ${BENCH_RR_ARGS:-} || rc=1
if [ "$plan" != baseline ]; then
	# shellcheck disable=SC2086
	"$py" "$here/mc_sweep.py" "${mc[@]}" ${BENCH_MC_ARGS:-} || rc=1
fi
echo "$rc" >"$out/guest-finished"
