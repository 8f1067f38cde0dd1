#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Several mc_load processes as one load generator, so that seed 001's
loads (200K to 1M queries per second) can be offered from a real peer:
one mc_load process is one event loop per thread and tops out well
below that.

The processes connect (and preload) first, then start their windows at
one CLOCK_MONOTONIC time (mc_load --sync). Their window edge lines
(bench/include/window.h) are relayed as one line per edge, with sent and
served summed, once every process printed it; at the end one line
{"load_gen": {...}} carries the merged result: counts summed, latency
and schedule-lag histograms merged bucket by bucket and their
percentiles taken from the merged histogram (never averaged).

usage: mc_generators.py --mc-load PATH --generators N --cpus LIST
           --qps Q --connections C [--seed S] -- [other mc_load options]
Runs on the peer (over ssh on real hosts): Python standard library only.
Exit status: 0 when every process succeeded, else 1.
"""

import argparse
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

# benchlib is bench/'s, one folder up.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import benchlib as bl  # noqa: E402 (needs the path above)

# bench/include/hist.h: values below 2^SUB_BITS are exact, every power of
# two above is split into 2^SUB_BITS buckets.
HIST_SUB_BITS = 7
HIST_SUB = 1 << HIST_SUB_BITS
# Counts of the result that add up across processes.
SUMMED = ("target_qps", "achieved_qps", "sent", "received", "gets", "sets", "get_hits",
          "get_misses", "errors", "error_replies", "lost", "dropped", "timeouts",
          "conn_failures", "threads", "connections")
# The window edge counts of window.h that add up across processes.
EDGE_SUMMED = ("sent", "served")
# Margin between choosing the common start time and reaching it: writing
# it to every process's stdin must take less, under TCG too (a process
# that reads it too late fails rather than open a window of its own).
START_MARGIN_S = 0.5


def hist_index(value):
    """hist.h's hist_index(): the bucket of a value in ns."""
    if value < HIST_SUB:
        return value
    shift = value.bit_length() - 1 - HIST_SUB_BITS
    return HIST_SUB + shift * HIST_SUB + ((value >> shift) - HIST_SUB)


def hist_value(index):
    """hist.h's hist_value(): the middle of a bucket."""
    if index < HIST_SUB:
        return index
    shift = (index - HIST_SUB) // HIST_SUB
    low = ((index - HIST_SUB) % HIST_SUB + HIST_SUB) << shift
    return low + ((1 << shift) - 1) // 2


def merge_hists(hists):
    """One histogram ({count, sum, min, max, buckets: [[index, n], ...]},
    as mc_load writes it) of all samples of HISTS."""
    buckets = {}
    for h in hists:
        for index, n in h["buckets"]:
            buckets[index] = buckets.get(index, 0) + n
    filled = [h for h in hists if h["count"]]
    return {"count": sum(h["count"] for h in hists), "sum": sum(h["sum"] for h in hists),
            "min": min((h["min"] for h in filled), default=0),
            "max": max((h["max"] for h in filled), default=0),
            "buckets": sorted([i, n] for i, n in buckets.items())}


def hist_percentile(h, p):
    """hist.h's hist_percentile(): the value (ns) at percentile P."""
    if not h["count"]:
        return 0
    rank = min(max(int(p / 100.0 * h["count"] + 0.999999), 1), h["count"])
    seen = 0
    for index, n in sorted(h["buckets"]):
        seen += n
        if seen >= rank:
            return min(max(hist_value(index), h["min"]), h["max"])
    return h["max"]


def hist_us(h, percentiles):
    """{avg, pNN..., max} in us from histogram H, as mc_load prints them."""
    out = {"avg": round(h["sum"] / 1e3 / h["count"], 1) if h["count"] else 0.0}
    for key, p in percentiles:
        out[key] = round(hist_percentile(h, p) / 1e3, 1)
    out["max"] = round(h["max"] / 1e3, 1)
    return out


def merge_results(results):
    """mc_load's JSON results of one window, one per process, as one."""
    if len(results) == 1:
        return dict(results[0], generators=1)
    first = results[0]
    merged = {k: v for k, v in first.items() if k not in SUMMED}
    for key in SUMMED:
        merged[key] = sum(r.get(key, 0) for r in results)
    merged["achieved_qps"] = round(merged["achieved_qps"], 1)
    merged["generators"] = len(results)
    merged["seeds"] = [r.get("seed") for r in results]
    lat = merge_hists([r["latency_hist"] for r in results])
    lag = merge_hists([r["lag_hist"] for r in results])
    merged["latency_hist"], merged["lag_hist"] = lat, lag
    merged["latency_us"] = hist_us(lat, (("p50", 50), ("p95", 95), ("p99", 99), ("p999", 99.9)))
    lag_us = hist_us(lag, (("p99", 99),))
    # The halves' averages need each process's sums per half, which
    # mc_load does not print: the worst process's stands for all.
    for key in ("first_half_avg", "second_half_avg"):
        lag_us[key] = max(r["lag_us"][key] for r in results)
    merged["lag_us"] = lag_us
    merged["lag_growing"] = any(r["lag_growing"] for r in results)
    # mc_load's own rule, on the merged figures.
    merged["saturated"] = (any(r["saturated"] for r in results)
                           or (merged["mode"] != "max"
                               and (merged["achieved_qps"] < 0.95 * merged["target_qps"]
                                    or merged["lag_growing"] or lag_us["p99"] > 10000.0)))
    return merged


def merge_edges(edges):
    """The window.h edge lines of all processes at one edge as one: the
    latest time, sent and served summed."""
    line = {"window": edges[0]["window"], "ns": max(e["ns"] for e in edges)}
    for key in EDGE_SUMMED:
        values = [e.get(key) for e in edges]
        line[key] = None if None in values else sum(values)
    return line


def split(total, parts):
    """TOTAL spread over PARTS as evenly as integers go."""
    return [total // parts + (i < total % parts) for i in range(parts)]


def commands(args, extra, json_paths):
    """One mc_load command line per process: the rate and connections
    split between them, each on its share of --cpus, its own seed."""
    cpus = bl.cpu_numbers(args.cpus)
    shares = [[c for j, c in enumerate(cpus) if j % args.generators == i] or cpus
              for i in range(args.generators)]
    conns = split(args.connections, args.generators)
    out = []
    for i in range(args.generators):
        rate = ["--qps", repr(args.qps / args.generators)] if args.qps else ["--max"]
        out.append(["taskset", "-c", ",".join(map(str, shares[i])), args.mc_load,
                    "--connections", str(conns[i]), "--seed", str(args.seed + 1000 * i),
                    "--json", json_paths[i], "--quiet", "--sync"] + rate + extra)
    return out


class Generators:
    """The running processes, read line by line from their stdout."""

    def __init__(self, argvs):
        self.procs = [subprocess.Popen(a, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, bufsize=0) for a in argvs]
        self.partial = [b""] * len(self.procs)
        self.lines = [[] for _ in self.procs]

    def read(self, deadline):
        """Read what is there; False once every stdout is at EOF."""
        open_fds = {p.stdout.fileno(): i for i, p in enumerate(self.procs)
                    if not p.stdout.closed}
        if not open_fds:
            return False
        ready, _, _ = select.select(list(open_fds), [], [], max(deadline - time.monotonic(), 0))
        for fd in ready:
            i = open_fds[fd]
            data = os.read(fd, 65536)
            if not data:
                self.procs[i].stdout.close()
                continue
            *done, self.partial[i] = (self.partial[i] + data).split(b"\n")
            self.lines[i] += [json.loads(x) for x in done if x.strip().startswith(b"{")]
        return True

    def wait_for(self, match, deadline):
        """The first line of each process that MATCH accepts, None as soon
        as a process ended without one or DEADLINE passed."""
        while True:
            found = [next((m for m in lines if match(m)), None) for lines in self.lines]
            if None not in found:
                return found
            if any(m is None and p.stdout.closed for m, p in zip(found, self.procs)):
                return None
            if time.monotonic() > deadline or not self.read(deadline):
                return None

    def release(self, line=None):
        """Write LINE (the start time) to every process's stdin and close
        it; without LINE, a process waiting for it reads EOF and exits."""
        for p in self.procs:
            try:
                if line:
                    p.stdin.write(line.encode())
                p.stdin.close()
            except OSError:
                pass        # the process is gone: finish() reports it

    def finish(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.read(deadline):
            pass
        errors = []
        for p in self.procs:
            try:
                p.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            err = p.stderr.read().decode(errors="replace").strip()
            if p.returncode:
                errors.append(f"exit {p.returncode}: {err}")
        return errors


def run(args, extra):
    tmp = tempfile.mkdtemp(prefix="mc-generators-")
    paths = [os.path.join(tmp, f"gen{i}.json") for i in range(args.generators)]
    gens = Generators(commands(args, extra, paths))
    deadline = time.monotonic() + args.timeout
    errors = []
    if gens.wait_for(lambda m: m.get("ready"), deadline) is None:
        errors.append("a generator ended before it was ready")
        gens.release()
    else:
        start = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + int(START_MARGIN_S * 1e9)
        gens.release(f"{start}\n")
        for edge in ("start", "end"):
            said = gens.wait_for(lambda m, e=edge: m.get("window") == e, deadline)
            if said is None:
                errors.append(f"a generator ended before the {edge} of the window")
                break
            print(json.dumps(merge_edges(said)), flush=True)
    errors += gens.finish(max(deadline - time.monotonic(), 1.0))
    results = []
    for path in paths:
        try:
            with open(path) as f:
                results.append(json.load(f))
        except (OSError, ValueError) as exc:
            errors.append(f"no result in {path}: {exc}")
        else:
            os.unlink(path)
    shutil.rmtree(tmp, ignore_errors=True)
    if not errors:
        print(json.dumps({"load_gen": merge_results(results)}), flush=True)
    for e in errors:
        print(f"mc_generators: {e}", file=sys.stderr)
    return 1 if errors else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mc-load", required=True)
    parser.add_argument("--generators", type=int, default=1)
    parser.add_argument("--cpus", required=True, help="CPUs of the processes (taskset list)")
    parser.add_argument("--qps", type=float, required=True, help="total rate, 0 = MAX")
    parser.add_argument("--connections", type=int, required=True, help="total connections")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for the whole run")
    args, extra = parser.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    if args.generators < 1 or args.connections < args.generators:
        parser.error("need 1 <= --generators <= --connections")
    return run(args, extra)


if __name__ == "__main__":
    sys.exit(main())
