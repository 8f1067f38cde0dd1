#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""IRQ suspension under load (seed 001): Debian's unmodified memcached,
made to busy poll by libepoll_busy_poll.so, driven by mc_load at rising
rates. Variants x loads x repetitions on each device pair, variants
interleaved. Writes one JSON object per point to OUT/mc.jsonl.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import benchlib as bl

PORT = 11311
# memcached runs one worker thread on one core, with the device IRQs, as
# the seed pins both to the same NUMA-local cores (--server-threads and
# --server-cpus widen both on real hosts).
SERVER_CPU = bl.CPU_APP.split(",")[0]
# Several mc_load processes behind one window (--generators).
GENERATORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memcached", "mc_generators.py")
US = 1000  # ns per us: the seed gives timeouts in us, netlink takes ns


def variants(xs, suspend_ms):
    """The seed's variants; X is gro_flush_timeout in us, SUSPEND_MS the
    suspendX variants' irq-suspend-timeout (--irq-suspend-ms)."""
    def epoll(usecs):
        return {"EPOLL_BUSY_POLL_USECS": str(usecs), "EPOLL_BUSY_POLL_BUDGET": "64",
                "EPOLL_PREFER_BUSY_POLL": "1", "EPOLL_BUSY_POLL_STRICT": "1"}

    out = {"base": (dict(), {})}
    for x in xs:
        out[f"defer{x}"] = (dict(defer=100, gro=x * US), {})
    out["napibusy"] = (dict(defer=100, gro=200 * US), epoll(64))
    out["fullbusy"] = (dict(defer=100, gro=5000 * US),
                       dict(epoll(1000), EPOLL_WAIT_MAX_TIMEOUT_MS="1"))
    for x in xs:
        # The control of suspendX: the same set-up and busy polling, no
        # irq-suspend-timeout (prefer_busy_poll's deferral alone).
        out[f"prefer{x}"] = (dict(defer=100, gro=x * US), epoll(0))
        out[f"suspend{x}"] = (dict(defer=100, gro=x * US, irq_suspend=suspend_ms * 1000 * US),
                              epoll(0))
    return out


class Memcached:
    def __init__(self, args, pair, env):
        self.args, self.pair, self.env = args, pair, env
        self.proc = None

    def __enter__(self):
        env = dict(os.environ, **self.env)
        if self.env:
            env["LD_PRELOAD"] = self.args.preload
        self.proc = subprocess.Popen(
            self.pair.wrap(bl.NS_SUT, [
                "taskset", "-c", self.args.server_cpus, "memcached", "-u", "root",
                "-t", str(self.args.server_threads),
                "-c", "4096", "-l", self.pair.addr[bl.NS_SUT], "-p", str(PORT), "-U", "0"]),
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        bl.busywait(self.listening, 20, "memcached listening")
        return self

    def listening(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"memcached exited: {self.proc.stderr.read().strip()}")
        out = bl.sh(*self.pair.wrap(bl.NS_SUT, ["ss", "-Hltn", f"sport = :{PORT}"]))
        return "LISTEN" in out

    def cpu_ticks(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def __exit__(self, *exc):
        bl.stop_process(self.proc)


def generator_timeout(args):
    """Seconds a point's load generator may take, connect and drain included."""
    return (args.duration + args.warmup) * 10 + 60


def generator_command(args, pair, qps, rep, result):
    """The load generator's command line on the peer: mc_load itself, or
    with --generators > 1 or a remote peer mc_generators.py, which runs
    several and prints their merged result on stdout (on a remote peer
    mc_load's --json file would stay there)."""
    common = ["--server", pair.addr[bl.NS_SUT], "--port", str(PORT),
              "--threads", str(args.gen_threads), "--duration", str(args.duration),
              "--warmup", str(args.warmup)]
    if args.generators == 1 and pair.kind != "host":
        return pair.wrap(bl.NS_PEER, [
            "taskset", "-c", args.gen_cpus, args.mc_load, "--connections", str(args.connections),
            "--seed", str(rep + 1), "--json", result] + common
            + (["--qps", str(qps)] if qps else ["--max"]))
    return pair.wrap(bl.NS_PEER, [
        "python3", GENERATORS, "--mc-load", args.mc_load, "--generators", str(args.generators),
        "--cpus", args.gen_cpus, "--qps", str(qps), "--connections", str(args.connections),
        "--seed", str(rep + 1), "--timeout", str(generator_timeout(args)), "--"] + common)


def generator_result(run, result):
    """The generator's JSON result: mc_generators.py's last stdout line,
    or mc_load's --json file."""
    for line in reversed(run["stdout"].splitlines()):
        if line.startswith('{"load_gen"'):
            return json.loads(line)["load_gen"]
    with open(result) as f:
        return json.load(f)


def run_point(args, pair, modes, name, variant, qps, rep, out):
    started = time.monotonic()
    setup, env = variant
    point = {"bench": "mc", "device": pair.kind, "variant": name, "load": qps or "MAX",
             "rep": rep, "reps": args.reps}
    if setup.get("irq_suspend"):
        point["irq_suspend_ms"] = setup["irq_suspend"] / 1e6
    try:
        modes.apply(**setup)
        modes.pin_irqs(args.server_cpus)
        pair.wait_for_link()
        result = os.path.join(args.out, "point.json")
        server_cpus = bl.cpu_set(args.server_cpus)
        # perf stat outlives memcached: its result is read below, with
        # the other counts, once the server has stopped as before.
        with bl.perf_counter(args.perf_stat, server_cpus) as perf:
            with Memcached(args, pair, env) as server:
                cmd = generator_command(args, pair, qps, rep, result)
                modes.probes.reset()
                loss_before = bl.loss_snapshot(pair)
                # Connect, preload and warm-up happen before the window opens.
                run = bl.run_windowed(cmd, pair.irq_regex, extra=server.cpu_ticks,
                                      timeout=generator_timeout(args), perf=perf)
            point["loss"] = bl.loss_delta(loss_before, bl.loss_snapshot(pair))
            if run["rc"] != 0:
                raise RuntimeError(f"mc_load {bl.exit_text(run['rc'])}: {run['stderr'].strip()}")
            point["load_gen"] = generator_result(run, result)
            # Per-query counts divide by the queries served between the edge
            # lines; those whose send time is in the window (mc_load's own
            # total) only stand in when the edges carry no counts.
            # The generators run on the peer: on two hosts, on its clock.
            point["counters"] = bl.measured_counts(run, pair, modes.probes,
                                                   point["load_gen"].get("sent", 0),
                                                   server_cpus, perf=perf,
                                                   tool_side=bl.NS_PEER)
        queries = point["counters"]["exchanges"]
        point["server_threads"] = args.server_threads
        point["generators"] = args.generators
        # The seed's cpu column: the server cores' mean busy share.
        busy = [point["counters"]["system"].get("cpu_busy_pct", {}).get(c) for c in server_cpus]
        point["server_cpu_pct"] = (round(sum(busy) / len(busy), 1)
                                   if busy and None not in busy else None)
        if run["before"] and run["after"] and None not in (run["before"]["extra"],
                                                           run["after"]["extra"]):
            # memcached's own CPU time (process context only), per query.
            ticks = run["after"]["extra"] - run["before"]["extra"]
            point["memcached_cpu_us_per_query"] = round(
                ticks * 1e6 / os.sysconf("SC_CLK_TCK") / max(queries, 1), 1)
        point["status"] = "ok"
    except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError, TimeoutError) as exc:
        point["status"] = "error"
        point["error"] = str(exc)
    lg = point.get("load_gen", {})
    return bl.record(out, point, started,
                     f"mc {pair.kind:9} {name:10} load={point['load']!s:6} rep{rep}: "
                     f"qps={lg.get('achieved_qps')} p99={lg.get('latency_us', {}).get('p99')}us "
                     f"cpu={point.get('server_cpu_pct')}% {bl.brief(point.get('counters'))}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--src", required=True, help="kernel tree with the YNL CLI and spec")
    parser.add_argument("--mc-load", required=True)
    parser.add_argument("--preload", required=True)
    parser.add_argument("--devices", default="virtio igb netdevsim")
    parser.add_argument("--x", default="20", help="gro_flush_timeout values (us) for deferX/suspendX")
    parser.add_argument("--variants", default=None, help="subset of variant names")
    parser.add_argument("--irq-suspend-ms", type=int, default=20,
                        help="irq-suspend-timeout of the suspendX variants")
    parser.add_argument("--loads", default="200 400 800 1600 0",
                        help="target QPS (0 = MAX, closed loop)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--connections", type=int, default=16)
    # One generator thread saturates before the server does (under TCG
    # the server core stayed 23-62 % busy at MAX): the full plan spreads
    # the load over every CPU but the server's.
    parser.add_argument("--gen-threads", type=int, default=1,
                        help="load generator threads")
    parser.add_argument("--gen-cpus", default=bl.CPU_PEER,
                        help="CPUs of the load generator (taskset list)")
    # Seed 001's loads (200K-1M qps) need a multi-threaded server and
    # several generator processes on real hosts; the VM's defaults (one
    # of each) keep its results comparable with earlier runs.
    parser.add_argument("--server-threads", type=int, default=1, help="memcached -t")
    parser.add_argument("--server-cpus", default=SERVER_CPU,
                        help="CPUs of memcached and the SUT's IRQs (taskset list)")
    parser.add_argument("--generators", type=int, default=1,
                        help="mc_load processes (bench/memcached/mc_generators.py), --gen-cpus "
                        "shared between them")
    parser.add_argument("--perf-stat", action="store_true",
                        help="cycles and instructions per query on --server-cpus "
                        "(perf stat over the window; real hosts: TCG has no PMU)")
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    # The set-up as YNL CLI commands, to replay by hand.
    ynl = bl.Ynl(args.src, log=open(os.path.join(args.out, "setup-commands.log"), "a"))
    all_variants = variants([int(x) for x in args.x.split()], args.irq_suspend_ms)
    failures = 0
    with open(os.path.join(args.out, "mc.jsonl"), "a") as out:
        bl.record_plan(out, "mc", args.devices.split(), reps=args.reps)
        for pair, modes in bl.each_pair("mc", args.devices.split(), ynl, out):
            names = [n for n in (args.variants.split() if args.variants else all_variants)
                     if modes.has_napi_set or not n.startswith("suspend")]
            for rep in range(args.reps):
                for qps in (int(q) for q in args.loads.split()):
                    for name in bl.rotated(names, rep):
                        failures += not run_point(args, pair, modes, name, all_variants[name],
                                                  qps, rep, out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
