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
# the seed pins both to the same NUMA-local cores.
SERVER_CPU = bl.CPU_APP.split(",")[0]
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
                "taskset", "-c", SERVER_CPU, "memcached", "-u", "root", "-t", "1",
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


def run_point(args, pair, modes, name, variant, qps, rep, out):
    started = time.monotonic()
    setup, env = variant
    point = {"bench": "mc", "device": pair.kind, "variant": name, "load": qps or "MAX",
             "rep": rep, "reps": args.reps}
    if setup.get("irq_suspend"):
        point["irq_suspend_ms"] = setup["irq_suspend"] / 1e6
    try:
        modes.apply(**setup)
        modes.pin_irqs(SERVER_CPU)
        result = os.path.join(args.out, "point.json")
        with Memcached(args, pair, env) as server:
            cmd = ["taskset", "-c", args.gen_cpus, args.mc_load,
                   "--server", pair.addr[bl.NS_SUT], "--port", str(PORT),
                   "--threads", str(args.gen_threads),
                   "--connections", str(args.connections), "--duration", str(args.duration),
                   "--warmup", str(args.warmup), "--seed", str(rep + 1), "--json", result]
            cmd = pair.wrap(bl.NS_PEER, cmd + (["--qps", str(qps)] if qps else ["--max"]))
            modes.probes.reset()
            loss_before = bl.loss_snapshot(pair)
            # Connect, preload and warm-up happen before the window opens.
            run = bl.run_windowed(cmd, pair.irq_regex, extra=server.cpu_ticks,
                                  timeout=(args.duration + args.warmup) * 10 + 60)
        point["loss"] = bl.loss_delta(loss_before, bl.loss_snapshot(pair))
        if run["rc"] != 0:
            raise RuntimeError(f"mc_load {bl.exit_text(run['rc'])}: {run['stderr'].strip()}")
        with open(result) as f:
            point["load_gen"] = json.load(f)
        # Per-query counts divide by the queries served between the edge
        # lines; those whose send time is in the window (mc_load's own
        # total) only stand in when the edges carry no counts.
        point["counters"] = bl.measured_counts(run, pair, modes.probes,
                                               point["load_gen"].get("sent", 0),
                                               bl.cpu_set(SERVER_CPU))
        queries = point["counters"]["exchanges"]
        point["server_cpu_pct"] = point["counters"]["system"].get("cpu_busy_pct", {}) \
            .get(f"cpu{SERVER_CPU}")
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
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    # The set-up as YNL CLI commands, to replay by hand.
    ynl = bl.Ynl(args.src, log=open(os.path.join(args.out, "setup-commands.log"), "a"))
    all_variants = variants([int(x) for x in args.x.split()], args.irq_suspend_ms)
    failures = 0
    with open(os.path.join(args.out, "mc.jsonl"), "a") as out:
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
