#!/bin/bash
# Runs inside the VM (or on a real machine, see docs/two-host-runbook.md): the latency
# grid and the memcached sweep, results as JSON lines in OUT.
# usage: guest-bench.sh OUT SRC PLAN
#   PLAN: full (grid, on/off traffic experiment, memcached sweep), smoke,
#   baseline (interrupt mode only), collapse (the threaded busy-poll
#   collapse experiment only), busy (epoll and io_uring modes on virtio
#   at rising rates, up to a busy server) or adaptive (threaded busy
#   polling with and without giving the core back, against interrupts:
#   the grid's cells of those modes and the on/off traffic experiment)
#   or xsk (AF_XDP busy polling with and without IRQ suspension)
#   or runbook (the dry run of the two-host runbook; make bench's full
#   plan boots once more for it) or spinning (the spinning modes'
#   latency cells with their matched control and the collapse
#   experiment, for the verdicts that need single- and multi-threaded
#   TCG; make bench's full plan boots it under each)
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

# The host's QEMU counts the NAPI core's instructions into insn.jsonl
# (workbench/bench.sh); the tools enter its marker at their window edges
# (bench/include/window.h). Its ranges are System.map's: KASLR must be off.
if [ -e "$out/insn.jsonl" ]; then
	if grep -qw nokaslr /proc/cmdline; then
		export BENCH_INSN_MARK=1 BENCH_INSN_LOG=$out/insn.jsonl
	else
		echo "instruction counter unused: the kernel was booted with KASLR" >&2
	fi
fi

rr=(--out "$out" --src "$src" --napi-rr "$here/rr/napi_rr")
# The seed's irq-suspend-timeout for suspendX is 20 ms. Under TCG one
# event-loop pass of the saturated memcached outlasts it: measured on
# virtio at 4000 qps, the NAPI was suspended 20-23 % of the window with
# 20 ms and 100 % with 500 ms (no RX IRQ, no softirq poll).
default_suspend_ms=20
grep -q 'QEMU TCG' /proc/cpuinfo && default_suspend_ms=500
suspend_ms=${BENCH_MC_SUSPEND_MS:-$default_suspend_ms}
mc=(--out "$out" --src "$src" --mc-load "$here/memcached/mc_load"
    --preload "$here/memcached/libepoll_busy_poll.so" --irq-suspend-ms "$suspend_ms")
# The plan is sized so that 'make bench BASELINE=1' fits a 2-core
# machine's session under TCG: cells of the full plan take 4 to 20 s
# there (threaded busy poll and collapsing cells the longest; see the
# "Run time" table of bench.md). The full seed grid, all five workloads,
# is BENCH_WORKLOADS="0 1 2 3 4".
workloads=${BENCH_WORKLOADS:-0 3}
# The threaded busy-poll collapse experiment (rr_grid.py --collapse).
collapse=(--collapse --devices "${BENCH_COLLAPSE_DEVICES:-netdevsim virtio igb}"
	  --transports "${BENCH_COLLAPSE_TRANSPORTS:-udp xdp}" --reps "${BENCH_COLLAPSE_REPS:-2}"
	  --rate-scale 0.05 --duration 2 --warmup 0.3)
# Where both the spinning modes' latency and the collapse experiment
# have something to say: UDP on the devices with interrupts.
spinning_devices=${BENCH_SPINNING_DEVICES:-virtio igb}
case $plan in
full)
	# 2 s cells, 3 repetitions, the lowest rate (the goals' threaded
	# busy-poll point) and the seed's headline workload, 32K pkt/s +
	# 30 us (1600 pps + 30 us scaled).
	rr+=(--rate-scale "${BENCH_RATE_SCALE:-0.05}" --duration 2 --warmup 0.3
	     --workload-indexes "$workloads")
	# Three generator threads on the CPUs the server does not use, so
	# that the top loads saturate the server's core.
	# X: seed 001's gro_flush_timeout of deferX/preferX/suspendX; the
	# seed's set is "10 20 50 200" (about twice as long).
	mc+=(--x "${BENCH_MC_X:-20}"
	     --loads "${BENCH_MC_LOADS:-1000 4000 0}" --reps "${BENCH_MC_REPS:-2}"
	     --duration 2 --warmup 0.3 --gen-threads 3 --gen-cpus 1-3)
	# Bursts of 200 ms, 300 ms apart (longer than the 20 ms
	# irq-suspend-timeout of threaded-busy-adaptive), 2 s cells.
	on_off=(--on-off 200:300 --devices "${BENCH_ON_OFF_DEVICES:-netdevsim virtio igb}"
		--transports udp --reps "${BENCH_ON_OFF_REPS:-2}" --duration 2)
	;;
smoke)
	# One short cell per mode / variant: keeps the benchmark working
	# (the collapse experiment at one of its two workloads).
	rr+=(--devices netdevsim --workloads 1 --rate-scale 0.05 --reps 1 --duration 1 --warmup 0.2)
	on_off=(--on-off 200:300 --devices netdevsim --transports udp --reps 1 --duration 1)
	mc+=(--devices netdevsim --loads 500 --reps 1 --duration 1 --warmup 0.2)
	collapse=(--collapse --devices netdevsim --transports udp --reps 1 --rate-scale 0.05
		  --duration 1 --warmup 0.2 --collapse-workloads 2)
	;;
collapse | runbook) ;;
spinning)
	rr+=(--modes "interrupts interrupts+matched busy-thread threaded-busy threaded-busy-adaptive"
	     --devices "$spinning_devices" --transports udp
	     --rate-scale "${BENCH_RATE_SCALE:-0.05}" --duration 2 --warmup 0.3
	     --workload-indexes "$workloads")
	collapse=(--collapse --devices "${BENCH_COLLAPSE_DEVICES:-$spinning_devices}"
		  --transports "${BENCH_COLLAPSE_TRANSPORTS:-udp}" --reps "${BENCH_COLLAPSE_REPS:-2}"
		  --rate-scale 0.05 --duration 2 --warmup 0.3)
	;;
adaptive)
	rr+=(--modes "interrupts threaded-busy threaded-busy-adaptive"
	     --rate-scale "${BENCH_RATE_SCALE:-0.05}" --duration 2 --warmup 0.3
	     --workload-indexes "$workloads")
	on_off=(--on-off 200:300 --devices "${BENCH_ON_OFF_DEVICES:-netdevsim virtio igb}"
		--transports udp --reps "${BENCH_ON_OFF_REPS:-2}" --duration 2)
	;;
baseline)
	# Cost when off: the interrupt-mode cells only, run on both kernels
	# (BENCH_BASELINE_MODE=interrupts-deferral: with deferral on).
	rr+=(--modes "${BENCH_BASELINE_MODE:-interrupts}" --rate-scale "${BENCH_RATE_SCALE:-0.05}" --duration 2 --warmup 0.3
	     --workload-indexes "$workloads")
	;;
xsk)
	# AF_XDP busy polling with and without IRQ suspension (the
	# extension), copy mode, on the NICs with interrupts, at the grid's
	# rates.
	rr+=(--devices "${BENCH_XSK_DEVICES:-virtio igb}" --transports xdp --modes "xsk-prefer xsk-suspend"
	     --rate-scale "${BENCH_RATE_SCALE:-0.05}" --duration 2 --warmup 0.3
	     --workload-indexes "$workloads")
	;;
busy)
	# The 125 kpps seed workload, scaled from light to what saturates
	# the server under TCG; epoll and io_uring side by side, on the NICs
	# with interrupts.
	rr+=(--devices "virtio igb" --transports udp --workload-indexes 1 --duration 2 --warmup 0.3
	     --modes "interrupts epoll-prefer epoll-suspend uring-prefer uring-suspend")
	;;
*) echo "unknown plan $plan" >&2; exit 2 ;;
esac
rc=0
case $plan in
collapse)
	"$py" "$here/rr_grid.py" "${rr[@]}" "${collapse[@]}" || rc=1
	;;
runbook) ;;
busy)
	for scale in ${BENCH_BUSY_SCALES:-0.01 0.02 0.05}; do
		# shellcheck disable=SC2086
		"$py" "$here/rr_grid.py" "${rr[@]}" --rate-scale "$scale" ${BENCH_RR_ARGS:-} || rc=1
	done
	;;
*)
	# shellcheck disable=SC2086
	"$py" "$here/rr_grid.py" "${rr[@]}" ${BENCH_RR_ARGS:-} || rc=1
	;;
esac
if [ "$plan" = smoke ] || [ "$plan" = spinning ]; then
	"$py" "$here/rr_grid.py" "${rr[@]}" "${collapse[@]}" || rc=1
fi
if [ "$plan" = smoke ]; then
	# The AF_XDP modes need a driver's NAPI (netdevsim's XDP is generic).
	"$py" "$here/rr_grid.py" "${rr[@]}" --devices virtio --transports xdp \
		--modes "xsk-prefer xsk-suspend" || rc=1
fi
if [ "$plan" = full ] || [ "$plan" = smoke ] || [ "$plan" = adaptive ]; then
	# The lowest seed workload, scaled as the grid's; the warm-up is a burst.
	"$py" "$here/rr_grid.py" "${rr[@]}" "${on_off[@]}" --workload-indexes 0 --warmup 0.2 ||
		rc=1
fi
if [ "$plan" = full ] || [ "$plan" = smoke ]; then
	# shellcheck disable=SC2086
	"$py" "$here/mc_sweep.py" "${mc[@]}" ${BENCH_MC_ARGS:-} || rc=1
fi
if [ "$plan" = runbook ]; then
	# The two-host runbook end to end, nsA and nsB standing in for the
	# hosts. Its verdict is runbook-dryrun.json, which bench.sh reports
	# as its own result.
	"$py" "$here/host/runbook_dryrun.py" --out "$out" --src "$src" >"$out/runbook-dryrun.log" 2>&1 ||
		echo "runbook dry run failed: $out/runbook-dryrun.json" >&2
fi
echo "$rc" >"$out/guest-finished"
