#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Request/response latency grid (seed 000): poll modes x workloads x
repetitions on each device pair, modes interleaved within a repetition.
Runs inside the VM (or on a real machine); writes one JSON object per
cell to OUT/rr.jsonl. bench/bench_report.py turns them into the table.
"""

import argparse
import json
import os
import select
import subprocess
import sys
import time

import benchlib as bl

# Seed 000's workloads: (packets per second, client delay in us).
WORKLOADS = [(12000, 0), (125000, 6), (25000, 38), (32000, 30), (12000, 78)]

# The AF_XDP modes' receiver (see xsk-prefer below).
XSK_POLL = ["--poll", "busy", "--busy-poll-usecs", "20000", "--budget", "64"]
# mode: (napi set-up of the SUT, napi_rr --poll). gro_flush_timeout 15 us
# and busy_read 400 as in the seed's set-up script.
MODES = {
    "interrupts": (dict(defer=0, gro=15000), ["--poll", "block"]),
    "busy-inline": (dict(defer=100, gro=15000, busy_read=400),
                    ["--poll", "busy", "--busy-poll-usecs", "400"]),
    # Seed 000's "SO_BUSYPOLL (separate)": the polling thread on a core of
    # its own, the one threaded-busy's kthread gets (the IRQs' core).
    "busy-thread": (dict(defer=100, gro=15000, busy_read=400),
                    ["--poll", "busy-thread", "--busy-poll-usecs", "400",
                     "--poller-cpu", bl.CPU_NAPI.split(",")[0]]),
    "threaded-busy": (dict(defer=100, gro=15000, threaded="busy-poll"),
                      ["--poll", "none"]),
    # The extension: the same kthread, giving the NAPI back after
    # irq-suspend-timeout without packets (as long as epoll-suspend's).
    "threaded-busy-adaptive": (dict(defer=100, gro=15000, threaded="busy-poll",
                                    irq_suspend=20000000), ["--poll", "none"]),
    "epoll-prefer": (dict(defer=100, gro=15000),
                     ["--poll", "epoll", "--busy-poll-usecs", "0", "--budget", "64"]),
    "epoll-suspend": (dict(defer=100, gro=15000, irq_suspend=20000000),
                      ["--poll", "epoll", "--busy-poll-usecs", "0", "--budget", "64"]),
    # io_uring with NAPI busy polling registered: busy_poll_to 0 is one
    # pass per wait, as epoll's busy_poll_usecs 0.
    "uring-prefer": (dict(defer=100, gro=15000),
                     ["--poll", "uring", "--busy-poll-usecs", "0"]),
    "uring-suspend": (dict(defer=100, gro=15000, irq_suspend=20000000),
                      ["--poll", "uring", "--busy-poll-usecs", "0"]),
    # AF_XDP's preferred busy polling: the receiver kicks recvfrom() on
    # an empty RX ring (SO_PREFER_BUSY_POLL, SO_BUSY_POLL_BUDGET 64), as
    # Firedancer's and DPDK's af_xdp do. With an irq-suspend-timeout the
    # socket's busy polls that find work suspend the NAPI's IRQs (the
    # extension); its SO_BUSY_POLL time is the idle span that ends the
    # suspension, here as long as the timeout.
    "xsk-prefer": (dict(defer=100, gro=15000), XSK_POLL),
    "xsk-suspend": (dict(defer=100, gro=15000, irq_suspend=20000000), XSK_POLL),
}
GRID_MODES = list(MODES)

# Not in the grid: the baseline plan's other mode (BENCH_BASELINE_MODE).
# Software IRQ coalescing, which r8169, macb and ravb turn on by default:
# what a NAPI that is not suspended pays when its completions defer.
MODES["interrupts-deferral"] = (dict(defer=2, gro=20000), ["--poll", "block"])

# The threaded busy-poll collapse experiment (bench.md's verdict): the
# mode against controls that each remove one suspect. "interrupts" with
# the CPU occupancy of threaded-busy but no series code (a SCHED_FIFO
# spinner where the kthread runs, a SCHED_OTHER one where the "none"
# receiver spins); threaded-busy with a blocking receiver; with the
# kthread SCHED_OTHER and RT throttling back on; plain threaded NAPI.
MODES.update({
    # The spinning modes' matched control: no series
    # code, threaded-busy's spinning on the emulator's vCPUs, i.e. its
    # spinning receiver and, standing for its kthread, a SCHED_FIFO
    # spinner on a CPU without interrupts, so that the interrupt path
    # keeps its CPU. What it changes against interrupts is the
    # emulator's share of a spinning mode's latency (the spinning plan
    # runs it beside the grid's spinning modes).
    "interrupts+matched": (dict(defer=0, gro=15000), ["--poll", "none"]),
    "interrupts+spinners": (dict(defer=0, gro=15000), ["--poll", "block"]),
    "threaded-busy+block": (dict(defer=100, gro=15000, threaded="busy-poll"),
                            ["--poll", "block"]),
    "threaded-busy+other": (dict(defer=100, gro=15000, threaded="busy-poll",
                                 kthread_fifo=False), ["--poll", "none"]),
    "threaded": (dict(defer=100, gro=15000, threaded="enabled"), ["--poll", "none"]),
    # The harness's set-up before the modes were limited to the RX
    # queues' NAPIs: a busy-polling SCHED_FIFO kthread on every NAPI of
    # the device (igb's TX NAPIs too), all on one CPU.
    "threaded-busy+all": (dict(defer=100, gro=15000, threaded="busy-poll", all_napis=True),
                          ["--poll", "none"]),
})
OCCUPANCY = {
    "interrupts+matched": dict(spinners=[("fifo", bl.CPU_SPARE)], irq_free=bl.CPU_SPARE),
    "interrupts+spinners": dict(spinners=[("fifo", bl.CPU_NAPI), ("other", bl.CPU_APP)]),
    # The kernel's default: 950 ms of every second for RT tasks.
    "threaded-busy+other": dict(rt_runtime_us=950000),
}
COLLAPSE_MODES = ["interrupts", "interrupts+matched", "interrupts+spinners", "threaded-busy", "threaded-busy+block",
                  "threaded-busy+other", "threaded", "threaded-busy+all"]
# Modes that differ from threaded-busy only on devices with NAPIs that
# serve no RX queue (igb's TX NAPIs): not run where they would not.
OTHER_NAPIS_ONLY = {"threaded-busy+all"}
# The seed workloads where threaded-busy collapsed: 1250 pps + 38 us and
# 6250 pps + 6 us at rate scale 0.05.
COLLAPSE_WORKLOADS = [2, 1]
PATCHED_ONLY = {"threaded-busy", "threaded-busy-adaptive", "epoll-suspend", "uring-suspend", "threaded-busy+block",
                "threaded-busy+other", "threaded-busy+all", "xsk-suspend"}
# io_uring polls sockets: AF_XDP has its own rings. threaded-busy+all
# cannot run on XDP: attaching the XDP program makes igb disable its
# NAPIs (napi_disable() with RTNL held), which waits for a kthread that
# the other FIFO kthread on its CPU never lets run: the set-up deadlocks
# by construction (napi.rst), as a bench run did.
UDP_ONLY = {"uring-prefer", "uring-suspend", "threaded-busy+all"}
# The AF_XDP socket's own busy polling; netdevsim's generic XDP gives the
# socket no NAPI to poll.
XDP_ONLY = {"xsk-prefer", "xsk-suspend"}


def not_run_because(mode, transport, device):
    """Why the grid runs no cell of MODE on TRANSPORT and DEVICE, None if
    it does (bench_report.py names the reason under its tables)."""
    if mode in UDP_ONLY and transport != "udp":
        return "UDP only"
    if mode in XDP_ONLY and transport != "xdp":
        return "AF_XDP only"
    if mode in XDP_ONLY and device == "netdevsim":
        return "netdevsim's generic XDP has no NAPI to busy poll"
    return None
# The on/off experiment (--on-off): the modes whose kthread CPU time and
# IRQs it compares when traffic comes in bursts with idle gaps between
# them, longer than threaded-busy-adaptive's irq-suspend-timeout.
ON_OFF_MODES = ["interrupts", "threaded-busy", "threaded-busy-adaptive"]
PORT = 54321
# The SUT's CPUs: the application's and the one of its NAPI kthread and IRQs.
SUT_CPUS = bl.cpu_set(bl.CPU_APP) + bl.cpu_set(bl.CPU_NAPI)


def workload_rate(args, index):
    """The seed's workload scaled by --rate-scale (the delay is kept)."""
    rate, delay = WORKLOADS[index]
    return max(int(rate * args.rate_scale), 1), delay


def wait_ready(server, timeout=30):
    """The server prints a ready line once its socket (and XDP program)
    is up; fail with its stderr if it exits or stays silent."""
    ready, _, _ = select.select([server.stdout], [], [], timeout)
    line = server.stdout.readline() if ready else ""
    if '"ready":true' not in line:
        server.kill()
        raise RuntimeError(f"server not ready: {server.communicate()[1].strip()}")


def server_stats(stdout):
    """The reflector's exit line (requests, replies, dropped), None if it
    printed none: with the client's counts it tells on which way a lost
    request was lost."""
    for line in reversed((stdout or "").splitlines()):
        try:
            stats = json.loads(line)
        except ValueError:
            continue
        if isinstance(stats, dict) and stats.get("role") == "server" and "requests" in stats:
            return stats
    return None


def experiment(args):
    """Which experiment the run's cells belong to."""
    return "collapse" if args.collapse else "on-off" if args.on_off else "grid"


def run_cell(args, pair, modes, mode, transport, workload, rep, out):
    rate, delay = workload_rate(args, workload)
    started = time.monotonic()
    setup, poll = MODES[mode]
    pids = modes.apply(**setup)
    peer_rr = os.environ.get("BENCH_PEER_NAPI_RR", args.napi_rr)
    # virtio_net runs XDP in the driver, with the NAPI ID that AF_XDP busy
    # polling needs; netdevsim only has generic (skb) XDP, without one.
    xdp_opts = ["--xdp-native"] if transport == "xdp" and pair.kind != "netdevsim" else []
    server = subprocess.Popen(
        pair.wrap(bl.NS_PEER, ["taskset", "-c", bl.CPU_PEER, peer_rr, "server",
                               "--transport", transport, "--ifname", pair.ifname[bl.NS_PEER],
                               "--addr", pair.addr[bl.NS_PEER], "--port", str(PORT),
                               "--poll", "block"] + xdp_opts),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cell = {"bench": "rr", "device": pair.kind, "transport": transport, "mode": mode,
            "workload": workload, "seed_rate": WORKLOADS[workload][0], "rate": rate,
            "delay_us": delay, "rep": rep, "reps": args.reps, "kthread_pids": pids,
            "occupancy": OCCUPANCY.get(mode),
            "experiment": experiment(args),
            "on_off": args.on_off}
    loss_before = None
    try:
        # The previous cell's XDP detach may have taken the link down.
        pair.wait_for_link()
        wait_ready(server)
        result = os.path.join(args.out, "cell.json")
        modes.probes.reset()
        loss_before = bl.loss_snapshot(pair)
        # perf stat outlives the spinners: its result is read below, with
        # the other counts, once the occupancy of the mode is gone.
        with bl.perf_counter(args.perf_stat, SUT_CPUS) as perf:
            with bl.Occupancy(**OCCUPANCY.get(mode, {})) as occupancy:
                run = bl.run_windowed(
                    pair.wrap(bl.NS_SUT, [
                        "taskset", "-c", bl.CPU_APP, args.napi_rr, "client",
                        "--transport", transport, "--ifname", pair.ifname[bl.NS_SUT],
                        "--src", pair.addr[bl.NS_SUT], "--dst", pair.addr[bl.NS_PEER],
                        "--port", str(PORT), "--peer-mac", pair.mac(bl.NS_PEER),
                        "--rate", str(rate), "--delay", str(delay),
                        "--duration", str(args.duration),
                        "--warmup", str(args.warmup), "--json", result] + poll + xdp_opts
                        + (["--on-off", args.on_off] if args.on_off else [])),
                    pair.irq_regex, timeout=args.duration * 10 + 60,
                    extra=lambda: bl.tasks_cpu_ns(pids), perf=perf)
            if occupancy.irqs_left is not None:
                cell["irqs_left_on_spare_cpu"] = occupancy.irqs_left
            if run["rc"] != 0:
                raise RuntimeError(f"client {bl.exit_text(run['rc'])}: {run['stderr'].strip()}")
            with open(result) as f:
                cell["client"] = json.load(f)
            # Per-request counts divide by the replies served between the
            # edge lines; the requests sent after the warm-up (the client's
            # own total) only stand in when the edges carry no counts.
            cell["counters"] = bl.measured_counts(run, pair, modes.probes,
                                                  cell["client"].get("sent", 0), SUT_CPUS, pids,
                                                  perf)
        cell["status"] = "ok"
    except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as exc:
        cell["status"] = "error"
        cell["error"] = str(exc)
    finally:
        # Before anything that takes RTNL (the loss snapshot's ethtool).
        modes.relax_kthreads()
        cell["server"] = server_stats(bl.stop_process(server)[0])
    if loss_before is not None:
        # After the server stopped: replies that came after the client
        # closed its socket are the SUT's UdpNoPorts.
        cell["loss"] = bl.loss_delta(loss_before, bl.loss_snapshot(pair))
    # latency_ns is null when no reply came back at all.
    lat = cell.get("client", {}).get("latency_ns") or {}
    return bl.record(out, cell, started,
                     f"rr {pair.kind:9} {transport:3} {mode:13} {rate:6}pps +{delay:2}us rep{rep}: "
                     f"p50={lat.get('p50')} p99={lat.get('p99')} "
                     f"{bl.brief(cell.get('counters'))}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--src", required=True, help="kernel tree with the YNL CLI and spec")
    parser.add_argument("--napi-rr", required=True)
    parser.add_argument("--devices", default="netdevsim virtio igb")
    parser.add_argument("--transports", default="xdp udp")
    parser.add_argument("--modes", default=" ".join(GRID_MODES))
    parser.add_argument("--workloads", type=int, default=len(WORKLOADS),
                        help="use the first N workloads")
    parser.add_argument("--workload-indexes", default=None,
                        help="use these workloads (indexes into WORKLOADS), in this order")
    parser.add_argument("--collapse", action="store_true",
                        help="the threaded busy-poll collapse experiment: its modes "
                        "and workloads (overrides --modes and --workloads)")
    parser.add_argument("--collapse-workloads", default=" ".join(map(str, COLLAPSE_WORKLOADS)),
                        help="the collapse experiment's workloads (indexes into WORKLOADS)")
    parser.add_argument("--on-off", default=None, metavar="ON_MS:OFF_MS",
                        help="the on/off experiment: requests in bursts of ON_MS at the "
                        "workload's rate, OFF_MS apart, in its modes (overrides --modes)")
    parser.add_argument("--rate-scale", type=float, default=1.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--perf-stat", action="store_true",
                        help="cycles and instructions per request on the SUT's CPUs "
                        "(perf stat over the window; real hosts: TCG has no PMU)")
    args = parser.parse_args()
    workloads = list(range(min(args.workloads, len(WORKLOADS))))
    if args.workload_indexes:
        workloads = [int(w) for w in args.workload_indexes.split()]
    if args.collapse:
        args.modes = " ".join(COLLAPSE_MODES)
        workloads = [int(w) for w in args.collapse_workloads.split()]
    if args.on_off:
        args.modes = " ".join(ON_OFF_MODES)
    for mode in args.modes.split():
        if mode not in MODES:
            parser.error(f"unknown mode {mode}")

    os.makedirs(args.out, exist_ok=True)
    # The set-up as YNL CLI commands, to replay by hand.
    ynl = bl.Ynl(args.src, log=open(os.path.join(args.out, "setup-commands.log"), "a"))
    failures = 0
    with open(os.path.join(args.out, "rr.jsonl"), "a") as out:
        bl.record_plan(out, "rr", args.devices.split(), transports=args.transports.split(),
                       experiment=experiment(args), reps=args.reps, modes=args.modes.split())
        for pair, modes in bl.each_pair("rr", args.devices.split(), ynl, out):
            wanted = [m for m in args.modes.split()
                      if (modes.has_napi_set or m not in PATCHED_ONLY)
                      and (m not in OTHER_NAPIS_ONLY or modes.has_other_napis())]
            spare = bl.spare_cpu_problem() if "interrupts+matched" in wanted else None
            if spare:
                wanted.remove("interrupts+matched")
                print(f"rr {pair.kind}: interrupts+matched skipped, {spare}", flush=True)
                out.write(json.dumps({"bench": "rr", "device": pair.kind, "status": "skip",
                                      "mode": "interrupts+matched", "error": spare}) + "\n")
            for rep in range(args.reps):
                for workload in workloads:
                    for transport in args.transports.split():
                        for mode in bl.rotated(wanted, rep):
                            if not_run_because(mode, transport, pair.kind):
                                continue
                            failures += not run_cell(args, pair, modes, mode, transport,
                                                     workload, rep, out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
