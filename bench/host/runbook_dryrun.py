#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The two-host runbook (bench/host/runbook.py) end to end on one machine,
two network namespaces standing in for the hosts: a linked netdevsim pair
(benchlib.NsimPair), the SUT's NIC in nsA, the peer's in nsB, global
sysctls this machine's. host-setup.py only prints what it would change
(apply --dry-run); the benchmarks run a short subset of each seed's
cells with perf stat, memcached -t 2 and two generator processes; the
report must produce both seed tables.

Runs as root in make bench's guest (bench/guest-bench.sh, the full and
runbook plans). Writes OUT/runbook-dryrun.json, {"ok", "checks": {name:
true or why not}, "runbook": runbook.py's result}, prints it and exits 0
when every check holds, else 1.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib as bl  # noqa: E402 (needs the path above)
import seed_tables  # noqa: E402

# Short cells: the dry run checks the steps, not the figures.
RR_ARGS = ("--modes 'interrupts threaded-busy' --workload-indexes 0 --transports udp "
           "--rate-scale 0.05 --reps 1 --duration 1 --warmup 0.2")
MC_ARGS = ("--x 20 --variants 'base suspend20' --loads 500 --reps 1 --duration 1 --warmup 0.2 "
           "--connections 8 --gen-threads 1")


def perf_reported(cells):
    """True when every cell has its perf figures or says why not (never a
    silent 0), else why not."""
    for c in cells:
        perf = (c.get("counters") or {}).get("perf")
        if perf is None:
            return f"a cell without perf figures: {c.get('mode') or c.get('variant')}"
        for ratio, event in (("cpq", "cycles"), ("ipq", "instructions")):
            missing = perf.get("not_counted") or {}
            if not perf.get(ratio) and not (missing.get(ratio) or missing.get(event)):
                return f"{ratio} neither counted nor explained: {perf}"
    return True if cells else "no cell"


def cells_ok(path):
    """True when PATH (rr.jsonl or mc.jsonl) has cells, all "ok", else why not."""
    try:
        with open(path) as f:
            cells = [json.loads(line) for line in f if line.strip()]
        # The script's plan record (benchlib.record_plan()) is no cell.
        cells = [c for c in cells if c.get("status") != "plan"]
    except (OSError, ValueError) as exc:
        return f"unreadable: {exc}", []
    bad = [c.get("error") or c.get("status") for c in cells if c.get("status") != "ok"]
    if not cells or bad:
        return f"cells not ok: {bad or 'none recorded'}", cells
    return True, cells


def checks_of(result, run_dir, tables_path):
    checks = {"runbook steps": True if result.get("ok") else
              f"failed steps: {[s['step'] for s in result.get('steps', []) if s['rc'] != 0]}"}
    cells = []
    for name in ("rr.jsonl", "mc.jsonl"):
        checks[name], found = cells_ok(os.path.join(run_dir, name))
        cells += found
    checks["perf stat per query"] = perf_reported(cells)
    try:
        with open(tables_path) as f:
            tables = f.read()
    except OSError as exc:
        tables = ""
        checks["seed tables"] = f"no {tables_path}: {exc}"
    head000 = "| Experiment | " + " | ".join(c for c, _ in seed_tables.SEED000_COLUMNS) + " |"
    checks["seed 000 table"] = head000 in tables or "missing from seed-tables.md"
    checks["seed 001 table"] = any(line.split() == list(seed_tables.SEED001_HEAD)
                                   for line in tables.splitlines()) or \
        "missing from seed-tables.md"
    return checks


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="directory for the result")
    parser.add_argument("--src", required=True, help="kernel tree with the YNL CLI and spec")
    parser.add_argument("--step-timeout", type=float, default=300)
    args = parser.parse_args(argv)
    # Not named run*: bench_report.py reads OUT's run* directories.
    top = os.path.join(os.path.abspath(args.out), "host-dryrun")
    run_dir = os.path.join(top, "run1-patched-host")
    pair = bl.NsimPair()
    result = {}
    try:
        pair.setup()
        done = subprocess.run(
            [sys.executable, os.path.join(HERE, "runbook.py"), "--out", run_dir, "--src", args.src,
             "--netif", pair.ifname[bl.NS_SUT], "--peer-netif", pair.ifname[bl.NS_PEER],
             "--sut-addr", bl.ADDR_SUT, "--peer-addr", bl.ADDR_PEER,
             "--sut-netns", bl.NS_SUT, "--peer-netns", bl.NS_PEER,
             "--cpus-app", bl.CPU_APP, "--cpus-napi", bl.CPU_NAPI, "--cpus-peer", bl.CPU_PEER,
             "--server-cpus", bl.CPU_APP, "--server-threads", "2",
             "--gen-cpus", bl.CPU_PEER, "--generators", "2", "--setup-dry-run",
             "--rr-args", RR_ARGS, "--mc-args", MC_ARGS, "--step-timeout", str(args.step_timeout)],
            capture_output=True, text=True, check=False)
        sys.stderr.write(done.stderr)
        try:
            result = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            result = {"ok": False, "error": f"runbook.py exit {done.returncode}, no result"}
        checks = checks_of(result, run_dir, os.path.join(top, "seed-tables.md"))
    except (RuntimeError, OSError, TimeoutError) as exc:
        checks = {"namespaces": f"netdevsim pair not set up: {exc}"}
    finally:
        pair.teardown()
    verdict = {"ok": all(v is True for v in checks.values()), "checks": checks,
               "runbook": result}
    os.makedirs(args.out, exist_ok=True)
    return bl.conclude(verdict, os.path.join(args.out, "runbook-dryrun.json"))


if __name__ == "__main__":
    sys.exit(main())
