#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The two-host runbook: reproduces seed 000's and seed 001's tables on a
machine under test (this one, run as root) and a peer reached over ssh,
step by step, each step's output in OUT/steps/:

  1. record both hosts' state (host-setup.py record)
  2. seed 000's host set-up on both (host-setup.py apply --seed 000)
  3. seed 000's latency grid: bench/rr_grid.py --devices host, the seed's
     four modes and five workloads at full rate, perf stat per request
  4. seed 001's host set-up on both (host-setup.py apply --seed 001)
  5. seed 001's memcached sweep: bench/mc_sweep.py --devices host, the
     seed's variants and loads, memcached -t N, several generators
  6. the state after, the kernel log's splat scan, machine.json
  7. bench/bench_report.py on OUT's parent: OUT/../seed-tables.md

OUT is a run directory as bench_report.py reads them (run<N>-<label>-host).
The same checkout must sit at the same path on the peer. --sut-netns and
--peer-netns stand the two hosts in two namespaces (the dry run),
--setup-dry-run makes host-setup.py print instead of apply, --rr-args and
--mc-args append options to the two benchmark scripts (later ones win).

Writes OUT/runbook.json, {"ok", "steps": [{"step", "rc", "seconds",
"log"}], "seed_tables"}, and prints it. Exit status 0 when every step
succeeded, 1 otherwise. Python standard library only.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)
import benchlib  # noqa: E402 (needs the path above)
TOP = os.path.dirname(BENCH)
HOST_SETUP = os.path.join(HERE, "host-setup.py")
# The scripts that run here use this interpreter (make bench's guest runs
# /usr/bin/python3, which has the YNL library's yaml); the peer's python3
# runs host-setup.py there, standard library only.
PY = sys.executable or "python3"

# Seed 000's four columns and five (rate, delay) workloads, unscaled.
SEED000_MODES = "interrupts busy-inline busy-thread threaded-busy"
SEED000_WORKLOADS = "0 1 2 3 4"
# Seed 001's X values and loads (0 = MAX) and its suspendX timeout.
SEED001_X = "10 20 50 200"
SEED001_VARIANTS_BASE = "base napibusy fullbusy"
SEED001_LOADS = "200000 400000 600000 800000 1000000 0"


class Steps:
    """Runs the runbook's commands, one log per step, and records them."""

    def __init__(self, out, timeout):
        self.out, self.timeout = out, timeout
        self.done = []
        os.makedirs(os.path.join(out, "steps"), exist_ok=True)

    def run(self, name, argv, env=None, stdout_to=None):
        """Run ARGV; its stdout goes to STDOUT_TO (a file) when given, else
        to the step's log with its stderr."""
        log = os.path.join(self.out, "steps", f"{len(self.done) + 1:02d}-{name}.log")
        started = time.monotonic()
        with open(log, "w") as f:
            print("$ " + shlex.join(argv), file=f, flush=True)
            try:
                if stdout_to:
                    with open(stdout_to, "w") as out:
                        rc = subprocess.run(argv, env=env, stdout=out, stderr=f,
                                            timeout=self.timeout).returncode
                else:
                    rc = subprocess.run(argv, env=env, stdout=f, stderr=subprocess.STDOUT,
                                        timeout=self.timeout).returncode
            except subprocess.TimeoutExpired:
                print(f"timed out after {self.timeout} s", file=f)
                rc = None
            except OSError as exc:
                print(f"cannot run: {exc}", file=f)
                rc = 127
        self.done.append({"step": name, "rc": rc, "seconds": round(time.monotonic() - started, 1),
                          "log": os.path.relpath(log, self.out)})
        print(f"runbook: {name}: {'ok' if rc == 0 else f'failed (rc {rc}), see {log}'}",
              file=sys.stderr, flush=True)
        return rc == 0


def label_of(out):
    """The kernel label a run directory's name gives (run<N>-<label>-host),
    "patched" where it gives none: the base kernel's run is labelled by
    the directory the runbook names, not by a default to override."""
    name = os.path.basename(os.path.normpath(out)).split("-")
    return name[1] if len(name) >= 3 and name[0].startswith("run") else "patched"


def host_setup(args, role, seed, command):
    """host-setup.py's command line for ROLE (run on the peer through
    wrap_peer()); the CPU lists are the runbook's, not the seed's defaults."""
    netif = args.netif if role == "sut" else args.peer_netif
    argv = ["python3", HOST_SETUP, command, "--netif", netif, "--role", role, "--seed", seed]
    if role == "peer":
        argv += ["--cpus-peer", args.cpus_peer]
    elif seed == "000":
        argv += ["--cpus-napi", args.cpus_napi, "--cpus-app", args.cpus_app]
    else:
        # Seed 001 pins memcached and the NIC's IRQs to the same cores.
        argv += ["--cpus-napi", args.server_cpus, "--cpus-app", args.server_cpus]
    if command == "apply" and args.setup_dry_run:
        argv.append("--dry-run")
    return argv


def bench_env(args):
    """The environment benchlib.HostPair and the CPU layout read."""
    env = dict(os.environ, NETIF=args.netif, BENCH_PEER_NETIF=args.peer_netif,
               BENCH_SUT_ADDR=args.sut_addr, BENCH_PEER_ADDR=args.peer_addr,
               BENCH_CPU_APP=args.cpus_app, BENCH_CPU_NAPI=args.cpus_napi,
               BENCH_CPU_PEER=args.cpus_peer)
    if args.peer_netns:
        env.update(BENCH_SUT_NETNS=args.sut_netns or "", BENCH_PEER_NETNS=args.peer_netns)
    else:
        env["BENCH_PEER_SSH"] = args.peer_ssh
    return env


def kernel_log():
    """The SUT's kernel log lines (dmesg); [] when it cannot be read."""
    done = subprocess.run(["dmesg"], capture_output=True, text=True, check=False)
    return done.stdout.splitlines() if done.returncode == 0 else []


def finish_run_dir(args, steps, log_start):
    """What bench_report.py reads besides the cells: the kernel label, the
    accelerator, machine.json, and the splat scan of the kernel log since
    line LOG_START (a host that has been up may have older reports that
    are not this run's)."""
    out = args.out
    with open(os.path.join(out, "kernel-label"), "w") as f:
        f.write(args.label + "\n")
    with open("/proc/cpuinfo") as f:
        accel = "tcg" if "QEMU TCG" in f.read() else "native"
    with open(os.path.join(out, "accel"), "w") as f:
        f.write(accel + "\n")
    with open(os.path.join(out, "machine.json"), "w") as f:
        json.dump(benchlib.machine_info(), f)
    with open(os.path.join(out, "console.log"), "w") as f:
        f.writelines(line + "\n" for line in kernel_log()[log_start:])
    steps.run("splat-scan", [PY, os.path.join(TOP, "workbench", "report", "splat.py"),
                             os.path.join(out, "console.log")],
              stdout_to=os.path.join(out, "splats.txt"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="run directory, e.g. /tmp/bench/run1-patched-host")
    parser.add_argument("--label", help="kernel label in the report (default: the run "
                        "directory's, run<N>-<label>-host, else patched)")
    parser.add_argument("--src", required=True, help="kernel tree with the YNL CLI and spec")
    parser.add_argument("--netif", required=True, help="the SUT's NIC")
    parser.add_argument("--peer-netif", help="the peer's NIC (default: --netif)")
    parser.add_argument("--sut-addr", required=True)
    parser.add_argument("--peer-addr", required=True)
    peer = parser.add_mutually_exclusive_group(required=True)
    peer.add_argument("--peer-ssh", help="user@host of the peer")
    peer.add_argument("--peer-netns", help="dry run: the peer is this network namespace")
    parser.add_argument("--sut-netns", help="dry run: the SUT's NIC is in this namespace")
    parser.add_argument("--cpus-app", default="3,4", help="seed 000: the application's CPUs")
    parser.add_argument("--cpus-napi", default="2", help="seed 000: IRQs and NAPI kthread")
    parser.add_argument("--cpus-peer", default="3", help="the peer's NIC IRQs and tools")
    parser.add_argument("--server-cpus", default="2-9", help="seed 001: memcached and IRQs")
    parser.add_argument("--server-threads", type=int, default=8, help="seed 001: memcached -t")
    parser.add_argument("--gen-cpus", default="2-9", help="seed 001: the peer's generators")
    parser.add_argument("--generators", type=int, default=4, help="seed 001: mc_load processes")
    parser.add_argument("--gen-threads", type=int, default=2,
                        help="seed 001: threads of each mc_load process")
    parser.add_argument("--connections", type=int, default=64,
                        help="seed 001: connections to memcached, over all generators")
    parser.add_argument("--setup-dry-run", action="store_true",
                        help="host-setup.py apply --dry-run (prints, changes nothing)")
    parser.add_argument("--rr-args", default="", help="more rr_grid.py options")
    parser.add_argument("--mc-args", default="", help="more mc_sweep.py options")
    parser.add_argument("--step-timeout", type=float, default=None, help="seconds per step")
    args = parser.parse_args(argv)
    args.peer_netif = args.peer_netif or args.netif
    args.label = args.label or label_of(args.out)
    args.out = os.path.abspath(args.out)
    sut_prefix, peer_prefix = (["ip", "netns", "exec", ns] if ns else []
                               for ns in (args.sut_netns, args.peer_netns))
    peer_prefix = peer_prefix or ["ssh", args.peer_ssh]
    steps = Steps(args.out, args.step_timeout)
    env = bench_env(args)
    log_start = len(kernel_log())

    def both(name, seed, command):
        steps.run(f"{name}-sut", sut_prefix + host_setup(args, "sut", seed, command))
        steps.run(f"{name}-peer", peer_prefix + host_setup(args, "peer", seed, command))

    steps.run("record-sut", sut_prefix + host_setup(args, "sut", "000", "record"),
              stdout_to=os.path.join(args.out, "host-sut-before.json"))
    steps.run("record-peer", peer_prefix + host_setup(args, "peer", "000", "record"),
              stdout_to=os.path.join(args.out, "host-peer-before.json"))
    both("setup-seed000", "000", "apply")
    steps.run("seed000-rr-grid", [
        PY, os.path.join(BENCH, "rr_grid.py"), "--devices", "host",
        "--out", args.out, "--src", args.src, "--napi-rr", os.path.join(BENCH, "rr", "napi_rr"),
        "--modes", SEED000_MODES, "--workload-indexes", SEED000_WORKLOADS, "--transports", "xdp",
        "--rate-scale", "1", "--perf-stat"] + shlex.split(args.rr_args), env=env)
    both("setup-seed001", "001", "apply")
    xs = SEED001_X.split()
    variants = " ".join(SEED001_VARIANTS_BASE.split() + [f"defer{x}" for x in xs]
                        + [f"suspend{x}" for x in xs])
    steps.run("seed001-mc-sweep", [
        PY, os.path.join(BENCH, "mc_sweep.py"), "--devices", "host",
        "--out", args.out, "--src", args.src,
        "--mc-load", os.path.join(BENCH, "memcached", "mc_load"),
        "--preload", os.path.join(BENCH, "memcached", "libepoll_busy_poll.so"),
        "--x", SEED001_X, "--variants", variants, "--loads", SEED001_LOADS,
        "--irq-suspend-ms", "20", "--server-threads", str(args.server_threads),
        "--server-cpus", args.server_cpus, "--generators", str(args.generators),
        "--gen-cpus", args.gen_cpus, "--gen-threads", str(args.gen_threads),
        "--connections", str(args.connections), "--perf-stat"] + shlex.split(args.mc_args),
        env=env)
    steps.run("record-sut-after", sut_prefix + host_setup(args, "sut", "001", "record"),
              stdout_to=os.path.join(args.out, "host-sut.json"))
    benchmarks_ok = all(s["rc"] == 0 for s in steps.done)
    finish_run_dir(args, steps, log_start)
    with open(os.path.join(args.out, "guest-finished"), "w") as f:
        f.write("0\n" if benchmarks_ok else "1\n")
    top = os.path.dirname(args.out)
    steps.run("report", [PY, os.path.join(BENCH, "bench_report.py"), top])
    result = {"ok": all(s["rc"] == 0 for s in steps.done), "steps": steps.done,
              "out": args.out, "seed_tables": os.path.join(top, "seed-tables.md")}
    return benchlib.conclude(result, os.path.join(args.out, "runbook.json"))


if __name__ == "__main__":
    sys.exit(main())
