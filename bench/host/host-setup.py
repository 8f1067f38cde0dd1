#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host set-up for the two-machine runbook (docs/two-host-runbook.md,
"Host set-up of the two machines"): the host state seed 000 (threaded NAPI busy polling, xsk_rr
latency) and seed 001 (IRQ suspension, memcached) were measured in, on the
machine under test (--role sut) and on the peer (--role peer).

  host-setup.py plan   --netif IF --role sut|peer [--seed 000|001] [options]
  host-setup.py apply  --netif IF --role sut|peer [--seed 000|001] [options] [--dry-run]
  host-setup.py record --netif IF --role sut|peer [--seed 000|001] [--out FILE]

plan prints every write and command as a shell script, each under a
comment with its reason and the seed text it comes from; apply runs them
(--dry-run: prints only); record writes a JSON snapshot of the host state
for the report. Read-only queries (ethtool -c/-g/-l/-i) run in every
command: the plan depends on what the NIC supports.

What changes per benchmark mode (busy_read, napi_defer_hard_irqs,
gro_flush_timeout, threaded, irq-suspend-timeout, the NAPI kthreads'
priority) is bench/rr_grid.py's and bench/mc_sweep.py's job; --napi-mode
sets one of seed 000's script cases instead, for runs by hand.

Python 3.11 standard library only. Exit codes: 0 success, 1 a change
failed, 2 usage error or a CPU list that does not fit the host.
"""

import argparse
import dataclasses
import datetime
import glob
import importlib.machinery
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys

# The benchmarks' own module, one directory up.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from nic_irqs import data_irqs, queue_ranks  # noqa: E402

# The order apply() works in; each group is planned again right before it
# runs, because the one before changes what it sees (SMT off takes CPUs
# offline, ethtool -L re-creates queues and IRQ vectors, threaded mode
# creates the NAPI kthreads).
GROUPS = ("host", "nic", "queues", "napi", "kthreads")

RUNBOOK = "runbook, not in the seed text"
SOURCES = {
    "000": {
        "timer_migration": 'seed 000: "echo 0 | sudo tee /proc/sys/kernel/timer_migration"',
        "smt": 'seed 000: "echo off | sudo tee /sys/devices/system/cpu/smt/control"',
        "channels": 'seed 000: "sudo ethtool -L eth0 rx 1 tx 1"',
        "rings": 'seed 000: "sudo ethtool -G eth0 rx 1024"',
        "rfs": 'seed 000: "echo 0 | sudo tee /proc/sys/net/core/rps_sock_flow_entries"',
        "rps": 'seed 000: "echo 0 | sudo tee /sys/class/net/eth0/queues/rx-0/rps_cpus"',
        "irqs": 'seed 000: "# pin IRQs on CPU 2 ... echo 2 | sudo tee '
                '/proc/irq/$irq/smp_affinity_list"',
        "rt": 'seed 000: "echo -1 | sudo tee /proc/sys/kernel/sched_rt_runtime_us"',
        "workqueues": 'seed 000: "echo 1,2,3,4,5,6 > /sys/devices/virtual/workqueue/*/cpumask"',
        "coalescing": 'seed 000: "sudo ethtool -C eth0 adaptive-rx off adaptive-tx off '
                      'rx-usecs 0 tx-usecs 0"',
        "threaded": 'seed 000: "echo 0 | sudo tee /sys/class/net/eth0/threaded"',
        "kthreads": 'seed 000: "sudo chrt -f -p 50 $NAPI_T; sudo taskset -pc 2 $NAPI_T"',
    },
    "001": {
        "smt": 'seed 001: "Hyperthreading disabled"',
        "channels": 'seed 001: "a single interface has 8 RX queues"',
        "irqs": "seed 001: \"The queues' IRQs and memcached are pinned to CPUs that are "
                'NUMA-local to the interface"',
        "coalescing": "seed 001: \"The NIC's interrupt coalescing configuration is left at "
                      'boot-time defaults"',
        "busy": 'seed 001: busy polling only "via the existing ioctl" per variant, '
                '"base: no other options enabled"',
        "rps": "seed 001's scripts [7] (irq.sh setirq1) write 0 to rps_cpus and rps_flow_cnt "
               "per queue",
    },
}

# Seed 000's set-up script takes one argument; each case writes these
# (sysctls under /proc/sys/net/core, the rest under /sys/class/net/IF).
# "harness" leaves them to rr_grid.py/mc_sweep.py, which write them per
# mode: only global busy polling is switched off until then.
NAPI_MODES = {
    "harness": ("rr_grid.py/mc_sweep.py set these per mode", {"busy_poll": 0, "busy_read": 0}),
    "busypoll": ('seed 000 script without argument (SO_BUSYPOLL): "echo 400 | sudo tee '
                 '/proc/sys/net/core/busy_read", defer 100, gro_flush_timeout 15000',
                 {"busy_read": 400, "napi_defer_hard_irqs": 100, "gro_flush_timeout": 15000}),
    "interrupt": ('seed 000 script "enable_interrupt": busy_read 0, defer 0, '
                  "gro_flush_timeout 15000",
                  {"busy_read": 0, "napi_defer_hard_irqs": 0, "gro_flush_timeout": 15000}),
    "threaded": ('seed 000 script "enable_threaded": busy_poll 0, busy_read 0, defer 100, '
                 "gro_flush_timeout 15000, threaded 2",
                 {"busy_poll": 0, "busy_read": 0, "napi_defer_hard_irqs": 100,
                  "gro_flush_timeout": 15000, "threaded": 2}),
}
NAPI_REASONS = {
    "busy_poll": "net.core.busy_poll: global busy polling of poll/select/epoll (us)",
    "busy_read": "net.core.busy_read: global busy polling of blocking reads (us)",
    "napi_defer_hard_irqs": "napi_defer_hard_irqs: polls that may pass before IRQs come back",
    "gro_flush_timeout": "gro_flush_timeout: the deferral timer (ns)",
    "threaded": "threaded: NAPI polled by kthreads, 2 = busy-polling kthreads (the series)",
}

# Seed 000's CPUs: IRQs and the NAPI kthread on CPU 2, xsk_rr on 3-5, the
# same script on both machines. Seed 001: the NIC's NUMA-local CPUs.
SEED_CPUS = {"000": {"napi": "2", "app": "3-5", "peer": "2"}}
SEED_QUEUES = {"000": 1, "001": 8}
SEED_RX_RING = {"000": 1024}
SEED_COALESCING = {"000": [("adaptive-rx", "off"), ("adaptive-tx", "off"),
                           ("rx-usecs", "0"), ("tx-usecs", "0")]}

RECORDED_SYSCTLS = ("kernel.timer_migration", "kernel.sched_rt_runtime_us",
                    "kernel.sched_rt_period_us", "kernel.numa_balancing",
                    "net.core.busy_poll", "net.core.busy_read", "net.core.rps_sock_flow_entries",
                    "net.core.netdev_budget", "net.core.netdev_budget_usecs",
                    "net.core.dev_weight")
RECORDED_NETIF_FILES = ("threaded", "napi_defer_hard_irqs", "gro_flush_timeout", "mtu",
                        "device/numa_node", "device/local_cpulist")

# --- IRQs of the NIC by the driver's naming ------------------------------------

def nic_irqs(host, netif):
    """(irq, name, queue) of NETIF's data vectors in /proc/interrupts, by
    its driver's naming (bench/nic_irqs.py)."""
    return data_irqs(host.read("/proc/interrupts"), netif,
                     host.link_name(f"/sys/class/net/{netif}/device"),
                     host.link_name(f"/sys/class/net/{netif}/device/driver"))[0]


# --- CPU lists -------------------------------------------------------------------

def load_napictl():
    """napictl (tools/, no .py suffix) parses and formats CPU lists."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "napictl")
    loader = importlib.machinery.SourceFileLoader("napictl", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("napictl", loader))
    loader.exec_module(module)
    return module


_napictl = load_napictl()
parse_cpu_list = _napictl.parse_cpu_list
format_cpu_list = _napictl.format_cpu_list


def cpu_mask_hex(cpus):
    """The hex mask a cpumask file takes: 32-bit words, most significant
    first, comma-separated (the kernel rejects longer words)."""
    bits = sum(1 << c for c in set(cpus))
    words = []
    while True:
        words.append(bits & 0xFFFFFFFF)
        bits >>= 32
        if not bits:
            break
    return ",".join([f"{words[-1]:x}"] + [f"{w:08x}" for w in reversed(words[:-1])])


def parse_cpu_mask(text):
    """A cpumask file's "ff,00000001" -> its CPUs."""
    bits = int((text or "0").replace(",", ""), 16)
    return [c for c in range(bits.bit_length()) if bits >> c & 1]


# --- ethtool output ----------------------------------------------------------------

PAIR = re.compile(r"([A-Za-z][\w /-]*?):[ \t]*(\S+)")


def ethtool_value(text):
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def ethtool_pairs(line):
    """[(key, value)] of one line of ethtool -c/-g/-l: "Adaptive RX: off
    TX: off" -> adaptive-rx, adaptive-tx (the later keys inherit the first
    one's prefix), "RX Mini: n/a" -> rx-mini. Section headers give none."""
    pairs, prefix = [], ""
    for m in PAIR.finditer(line):
        words = m.group(1).strip().lower().split()
        if not pairs:
            prefix = words[:-1]
        else:
            words = prefix + words
        pairs.append(("-".join(words), ethtool_value(m.group(2))))
    return pairs


def parse_ethtool_keys(text):
    """ethtool -c: {key: value}."""
    out = {}
    for line in (text or "").splitlines():
        out.update(ethtool_pairs(line))
    return out


def parse_ethtool_sections(text):
    """ethtool -g / -l: {"max": {...}, "current": {...}} from the
    "Pre-set maximums:" and "Current hardware settings:" sections."""
    out, section = {"max": {}, "current": {}}, None
    for line in (text or "").splitlines():
        head = line.strip().lower()
        if head.startswith("pre-set maximums"):
            section = "max"
        elif head.startswith("current hardware settings"):
            section = "current"
        elif section:
            out[section].update(ethtool_pairs(line))
    return out


def parse_ethtool_info(text):
    """ethtool -i: {key: value}; values may hold spaces (firmware-version)."""
    out = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


# --- the host and the runner -------------------------------------------------------

class Host:
    """Reads /proc and /sys under ROOT: "/" on a machine, a fixture tree
    in the tests."""

    def __init__(self, root="/"):
        self.root = root

    def path(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def read(self, path, default=None):
        try:
            with open(self.path(path)) as f:
                return f.read().strip()
        except OSError:
            return default

    def link_name(self, path):
        """The last component of a symlink's target (a device's name, a driver's)."""
        try:
            return os.path.basename(os.readlink(self.path(path)).rstrip("/"))
        except OSError:
            return None

    def glob(self, pattern):
        """Host paths (without ROOT) matching PATTERN, numbers in natural order."""
        prefix = self.path("/")
        found = ["/" + p[len(prefix):].lstrip("/") for p in glob.glob(self.path(pattern))]
        return sorted(found, key=lambda p: [int(t) if t.isdigit() else t
                                            for t in re.split(r"(\d+)", p)])


@dataclasses.dataclass(frozen=True)
class Step:
    """One change (a file write or a command) or a note, with why."""

    group: str
    reason: str
    path: str = ""
    value: str = ""
    argv: tuple = ()
    optional: bool = False      # a failure is only a warning
    note: str = ""

    def shell(self):
        if self.path:
            return f"echo {shlex.quote(str(self.value))} > {shlex.quote(self.path)}"
        return shlex.join(self.argv)


def write(group, path, value, reason, **kw):
    return Step(group, reason, path=path, value=str(value), **kw)


def run(group, argv, reason, **kw):
    return Step(group, reason, argv=tuple(str(a) for a in argv), **kw)


def note(group, text, reason=""):
    return Step(group, reason, note=text)


class Runner:
    """Every change goes through apply(), every command output through
    query(): DRY_RUN prints the changes without making them, and the
    tests replace execute() and query() to see the exact list."""

    def __init__(self, host, dry_run=False, out=sys.stdout):
        self.host, self.dry_run, self.out = host, dry_run, out
        self._last_reason = None

    def query(self, argv):
        """stdout of a read-only command, None if it cannot run."""
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return res.stdout if res.returncode == 0 else None

    def show(self, step):
        if step.reason and step.reason != self._last_reason:
            print(f"# [{step.group}] {step.reason}", file=self.out)
            self._last_reason = step.reason
        print(f"#   note: {step.note}" if step.note else step.shell(), file=self.out)

    def apply(self, step):
        """Print STEP and, unless dry-running, make it: None on success,
        the error text otherwise."""
        self.show(step)
        if step.note or self.dry_run:
            return None
        try:
            self.execute(step)
        except (OSError, subprocess.SubprocessError) as exc:
            err = getattr(exc, "stderr", None) or str(exc)
            return str(err).strip()
        return None

    def execute(self, step):
        if step.path:
            with open(self.host.path(step.path), "w") as f:
                f.write(f"{step.value}\n")
        else:
            subprocess.run(step.argv, check=True, capture_output=True, text=True, timeout=60)


# --- what to set up --------------------------------------------------------------------

@dataclasses.dataclass
class Setup:
    netif: str
    role: str
    seed: str
    napi_mode: str
    irq_cpus: list          # the NIC's IRQs, round-robin by queue
    busy_cpus: list         # IRQ, NAPI and application CPUs: no housekeeping there
    housekeeping: list      # where unbound workqueues may run
    queues: int
    max_cstate: int | None
    governor: str
    keep_smt: bool

    def summary(self):
        return {"netif": self.netif, "role": self.role, "seed": self.seed,
                "napi_mode": self.napi_mode, "irq_cpus": format_cpu_list(self.irq_cpus),
                "busy_cpus": format_cpu_list(self.busy_cpus),
                "housekeeping_cpus": format_cpu_list(self.housekeeping), "queues": self.queues,
                "max_cstate": self.max_cstate, "governor": self.governor,
                "keep_smt": self.keep_smt}


def online_cpus(host):
    text = host.read("/sys/devices/system/cpu/online")
    return parse_cpu_list(text) if text else []


def nic_local_cpus(host, netif, first_threads):
    """The online CPUs of the NIC's NUMA node (seed 001's "NUMA-local"),
    all online CPUs if the device does not say (virtio); FIRST_THREADS:
    without the ones SMT off takes away."""
    online = online_cpus(host)
    text = host.read(f"/sys/class/net/{netif}/device/local_cpulist")
    cpus = [c for c in parse_cpu_list(text) if c in online] if text else online
    if first_threads:
        cpus = [c for c in cpus if c not in smt_secondaries(host)]
    return cpus


def default_cpus(host, args, which):
    """--cpus-WHICH, else BENCH_CPU_<WHICH> (rr_grid.py's variables), else
    the seed's layout."""
    given = getattr(args, f"cpus_{which}") or os.environ.get(f"BENCH_CPU_{which.upper()}")
    if given:
        return parse_cpu_list(given)
    if args.seed in SEED_CPUS:
        return parse_cpu_list(SEED_CPUS[args.seed][which])
    return nic_local_cpus(host, args.netif, first_threads=not args.keep_smt)


def make_setup(host, args):
    if args.role == "sut":
        irq_cpus = default_cpus(host, args, "napi")
        busy = irq_cpus + default_cpus(host, args, "app")
    else:
        irq_cpus = default_cpus(host, args, "peer")
        busy = irq_cpus
    busy = sorted(set(busy))
    if args.cpus_housekeeping:
        housekeeping = parse_cpu_list(args.cpus_housekeeping)
    else:
        housekeeping = [c for c in online_cpus(host) if c not in busy]
    napi_mode = args.napi_mode or ("interrupt" if (args.seed, args.role) == ("000", "peer")
                                   else "harness")
    return Setup(netif=args.netif, role=args.role, seed=args.seed, napi_mode=napi_mode,
                 irq_cpus=irq_cpus, busy_cpus=busy, housekeeping=housekeeping,
                 queues=args.queues or SEED_QUEUES[args.seed], max_cstate=args.max_cstate,
                 governor=args.governor, keep_smt=args.keep_smt)


def smt_planned(setup):
    # Seed 001 describes only the machine under test.
    return not setup.keep_smt and (setup.seed == "000" or setup.role == "sut")


def smt_secondaries(host):
    """{cpu: first sibling} of the CPUs SMT off takes offline."""
    out = {}
    for path in host.glob("/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list"):
        cpu = int(re.search(r"/cpu(\d+)/", path).group(1))
        text = host.read(path)
        siblings = parse_cpu_list(text) if text else [cpu]
        if siblings[0] != cpu:
            out[cpu] = siblings[0]
    return out


def problems(host, setup):
    """Why SETUP does not fit the host (apply refuses; plan warns)."""
    out = []
    online = online_cpus(host)
    missing = [c for c in setup.busy_cpus if c not in online]
    if missing:
        out.append(f"CPUs {format_cpu_list(missing)} are not online "
                   f"(online: {format_cpu_list(online)}): pass --cpus-napi/--cpus-app/--cpus-peer")
    if smt_planned(setup) and host.read("/sys/devices/system/cpu/smt/control") == "on":
        secondaries = smt_secondaries(host)
        for cpu in setup.busy_cpus:
            if cpu in secondaries:
                out.append(f"CPU {cpu} goes offline with SMT off (thread sibling of "
                           f"{secondaries[cpu]}): pick first siblings or pass --keep-smt")
    if setup.seed == "001" and setup.napi_mode != "harness":
        out.append("--napi-mode other than harness is seed 000's script; seed 001's "
                   "variants are mc_sweep.py's")
    if not host.read(f"/sys/class/net/{setup.netif}/ifindex"):
        out.append(f"no network interface {setup.netif}")
    return out


# --- the plan, group by group -------------------------------------------------------------

def sysctl_path(name):
    return "/proc/sys/" + name.replace(".", "/")


def sysctl_steps(host, runner, setup):
    if setup.seed != "000":
        return [note("host", "kernel.timer_migration, kernel.sched_rt_runtime_us, "
                     "rps_sock_flow_entries left as found (recorded): seed 001 does not set them")]
    src = SOURCES["000"]
    return [
        write("host", sysctl_path("kernel.timer_migration"), 0,
              "kernel.timer_migration 0: timers stay on the CPU that armed them "
              f"({src['timer_migration']})"),
        write("host", sysctl_path("kernel.sched_rt_runtime_us"), -1,
              "kernel.sched_rt_runtime_us -1: no RT throttling of the SCHED_FIFO busy-polling "
              f"kthread and xsk_rr ({src['rt']})"),
        write("host", sysctl_path("net.core.rps_sock_flow_entries"), 0,
              "net.core.rps_sock_flow_entries 0: RFS off, packets stay on the IRQ's CPU "
              f"({src['rfs']})"),
    ]


def smt_steps(host, runner, setup):
    if not smt_planned(setup):
        why = "--keep-smt" if setup.keep_smt else "seed 001 describes only the machine under test"
        return [note("host", f"SMT left as found ({why})")]
    src = SOURCES[setup.seed]["smt"]
    reason = f"SMT off: no sibling thread shares the polling cores ({src})"
    control = host.read("/sys/devices/system/cpu/smt/control")
    if control != "on":
        return [note("host", f"SMT control is {control or 'absent'}: nothing to switch", reason)]
    return [write("host", "/sys/devices/system/cpu/smt/control", "off", reason)]


def process_running(host, comm):
    return any(host.read(p) == comm for p in host.glob("/proc/[0-9]*/comm"))


def irqbalance_steps(host, runner, setup):
    reason = f"irqbalance stopped: it would move the IRQs pinned below ({RUNBOOK})"
    if not process_running(host, "irqbalance"):
        return [note("host", "irqbalance is not running", reason)]
    return [run("host", ["systemctl", "stop", "irqbalance"], reason, optional=True)]


def cpu_number(path):
    return int(re.search(r"/cpu(\d+)/", path).group(1))


def governor_steps(host, runner, setup):
    reason = ("cpufreq governor performance: one frequency for every mode and repetition "
              f"({RUNBOOK}; seed 001 adds cycles per query because CPU use \"could be skewed "
              'due to frequency scaling")')
    if setup.governor == "keep":
        return [note("host", "governors left as found (--governor keep; recorded)")]
    files = host.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
    if not files:
        return [note("host", "no cpufreq: nothing to set", reason)]
    steps = [write("host", f, setup.governor, reason) for f in files
             if host.read(f) != setup.governor]
    return steps or [note("host", f"every CPU already runs {setup.governor}", reason)]


def cstate_steps(host, runner, setup):
    if setup.max_cstate is None:
        return [note("host", "C-states left as found (recorded; --max-cstate N limits them)")]
    reason = (f"C-states deeper than state{setup.max_cstate} disabled: no exit latency on "
              f"the wake-up path ({RUNBOOK})")
    steps = []
    for path in host.glob("/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state[0-9]*/disable"):
        index = int(re.search(r"/state(\d+)/", path).group(1))
        want = "1" if index > setup.max_cstate else "0"
        if host.read(path) != want:
            steps.append(write("host", path, want, reason))
    return steps or [note("host", "C-states already limited", reason)]


def workqueue_steps(host, runner, setup):
    if setup.seed != "000":
        return []
    reason = ("unbound workqueues on the housekeeping CPUs "
              f"{format_cpu_list(setup.housekeeping) or '(none)'} ({SOURCES['000']['workqueues']}"
              "; written as a hex mask: the file takes no CPU list)")
    if not setup.housekeeping:
        return [note("host", "no housekeeping CPU left: workqueues left as found", reason)]
    mask = cpu_mask_hex(setup.housekeeping)
    steps = [write("host", f, mask, reason)
             for f in host.glob("/sys/devices/virtual/workqueue/*/cpumask")
             if parse_cpu_mask(host.read(f)) != sorted(setup.housekeeping)]
    return steps or [note("host", "workqueues already on the housekeeping CPUs", reason)]


def threaded_off_steps(host, runner, setup):
    if setup.seed != "000":
        return []
    return [write("nic", f"/sys/class/net/{setup.netif}/threaded", 0,
                  f"threaded NAPI off to start from ({SOURCES['000']['threaded']})")]


def ethtool_params(values):
    """{"combined": 1} -> ["combined", "1"]."""
    return [str(x) for kv in values.items() for x in kv]


def channels_target(channels, want):
    """{param: value} for ethtool -L: combined channels where the NIC has
    them (one vector per queue pair), else separate rx and tx as the seed."""
    if not channels:
        return {"combined": want}
    limit, current = channels["max"], channels["current"]
    if isinstance(limit.get("combined"), int) and limit["combined"] > 0:
        target = {"combined": min(want, limit["combined"])}
        for side in ("rx", "tx"):
            if isinstance(current.get(side), int) and current[side] > 0:
                target[side] = 0
        return target
    return {side: min(want, limit[side]) if isinstance(limit.get(side), int) else want
            for side in ("rx", "tx")}


def channels_steps(host, runner, setup):
    if setup.seed == "001" and setup.role == "peer":
        return [note("nic", "channels left as found: seed 001 describes only the machine "
                     "under test")]
    reason = (f"{setup.queues} queue(s): the measured flow and the pinned vectors agree "
              f"({SOURCES[setup.seed]['channels']})")
    channels = parse_ethtool_sections(runner.query(["ethtool", "-l", setup.netif]))
    channels = channels if channels["max"] else None
    target = channels_target(channels, setup.queues)
    steps = []
    if channels is None:
        steps.append(note("nic", "ethtool -l gave nothing: assuming combined channels", reason))
    elif all(channels["current"].get(k) == v for k, v in target.items()):
        return [note("nic", f"channels already {' '.join(ethtool_params(target))}", reason)]
    elif max(target.values()) < setup.queues:
        steps.append(note("nic", f"the NIC has fewer than {setup.queues} channels", reason))
    return steps + [run("nic", ["ethtool", "-L", setup.netif] + ethtool_params(target), reason)]


def rings_steps(host, runner, setup):
    if setup.seed not in SEED_RX_RING:
        return [note("nic", "ring sizes left as found (recorded): seed 001 does not give them")]
    want = SEED_RX_RING[setup.seed]
    reason = f"RX ring {want} descriptors ({SOURCES[setup.seed]['rings']})"
    rings = parse_ethtool_sections(runner.query(["ethtool", "-g", setup.netif]))
    limit, current = rings["max"].get("rx"), rings["current"].get("rx")
    steps = []
    if isinstance(limit, int) and limit < want:
        steps.append(note("nic", f"the NIC's RX ring holds at most {limit}", reason))
        want = limit
    if current == want:
        return steps + [note("nic", f"RX ring already {want}", reason)]
    return steps + [run("nic", ["ethtool", "-G", setup.netif, "rx", want], reason)]


def coalescing_steps(host, runner, setup):
    if setup.seed not in SEED_COALESCING:
        return [note("nic", "coalescing left as found (recorded); after a seed 000 set-up "
                     "since boot, reboot to get the boot-time defaults back",
                     SOURCES["001"]["coalescing"])]
    reason = ("coalescing off: each packet interrupts at once, adaptive moderation off "
              f"({SOURCES[setup.seed]['coalescing']})")
    current = parse_ethtool_keys(runner.query(["ethtool", "-c", setup.netif]))
    steps, params = [], []
    for key, value in SEED_COALESCING[setup.seed]:
        if current.get(key) == "n/a":
            steps.append(note("nic", f"{key}: the driver has no such setting (n/a)", reason))
        elif str(current.get(key)) != value:
            params += [key, value]
    if not params:
        return steps + [note("nic", "coalescing already as the seed's", reason)]
    return steps + [run("nic", ["ethtool", "-C", setup.netif] + params, reason)]


def rx_queue_dirs(host, netif):
    return host.glob(f"/sys/class/net/{netif}/queues/rx-[0-9]*")


def rps_on(name, value):
    """Whether an rx queue's rps_cpus (a mask) or rps_flow_cnt (a count) is set."""
    if name == "rps_cpus":
        return bool(parse_cpu_mask(value))
    return value.isdigit() and int(value) > 0


def rps_steps(host, runner, setup):
    if setup.seed == "001" and setup.role == "peer":
        return []
    src = SOURCES[setup.seed]["rps"]
    reason = f"RPS off on every RX queue: packets are processed on the IRQ's CPU ({src})"
    names = ["rps_cpus"] + (["rps_flow_cnt"] if setup.seed == "001" else [])
    steps = []
    for queue in rx_queue_dirs(host, setup.netif):
        for name in names:
            value = host.read(f"{queue}/{name}")
            if value is not None and rps_on(name, value):
                steps.append(write("queues", f"{queue}/{name}", 0, reason))
    return steps or [note("queues", "RPS already off", reason)]


def irq_steps(host, runner, setup):
    where = "NAPI" if setup.role == "sut" else "peer"
    src = SOURCES[setup.seed]["irqs"]
    reason = (f"the NIC's IRQs on the {where} CPUs {format_cpu_list(setup.irq_cpus)}, "
              f"round-robin by queue ({src})")
    irqs = nic_irqs(host, setup.netif)
    if not irqs:
        driver = host.link_name(f"/sys/class/net/{setup.netif}/device/driver")
        return [note("queues", f"no data IRQs of {setup.netif} (driver {driver}) in "
                     "/proc/interrupts: nothing pinned", reason)]
    ranks = queue_ranks(irqs)
    return [write("queues", f"/proc/irq/{irq}/smp_affinity_list",
                  setup.irq_cpus[ranks[queue] % len(setup.irq_cpus)], reason)
            for irq, _, queue in irqs]


def napi_steps(host, runner, setup):
    source, values = NAPI_MODES[setup.napi_mode]
    if setup.seed == "001":
        source = SOURCES["001"]["busy"]
    values = dict({"busy_poll": 0}, **values)   # a leftover value would busy poll every socket
    steps = []
    for key, value in values.items():
        if key.startswith("busy_"):
            path = sysctl_path(f"net.core.{key}")
        else:
            path = f"/sys/class/net/{setup.netif}/{key}"
        steps.append(write("napi", path, value,
                           f"{NAPI_REASONS[key]} = {value} ({setup.napi_mode}: {source})"))
    return steps


def napi_kthreads(host, netif):
    """PIDs of NETIF's NAPI kthreads ("napi/<netif>-<napi id>"), None when
    the comm (15 characters) is too short to tell the device."""
    prefix = f"napi/{netif}-"
    if len(prefix) > 15:
        return None
    return [int(p.split("/")[2]) for p in host.glob("/proc/[0-9]*/comm")
            if (host.read(p) or "").startswith(prefix)]


def kthread_steps(host, runner, setup):
    if NAPI_MODES[setup.napi_mode][1].get("threaded") != 2:
        return []
    reason = (f"NAPI kthreads SCHED_FIFO 50 on the NAPI CPUs {format_cpu_list(setup.irq_cpus)} "
              f"({SOURCES['000']['kthreads']})")
    pids = napi_kthreads(host, setup.netif)
    if pids is None:
        return [note("kthreads", f"napi/{setup.netif}-* is cut to 15 characters: pin them by hand",
                     reason)]
    if not pids:
        return [note("kthreads", "no NAPI kthreads yet: apply pins them once threaded is on",
                     reason)]
    steps = []
    for i, pid in enumerate(sorted(pids)):
        steps.append(run("kthreads", ["chrt", "-f", "-p", 50, pid], reason))
        steps.append(run("kthreads", ["taskset", "-pc",
                                      setup.irq_cpus[i % len(setup.irq_cpus)], pid], reason))
    return steps


PLANNERS = {
    "host": (sysctl_steps, smt_steps, irqbalance_steps, governor_steps, cstate_steps,
             workqueue_steps),
    "nic": (threaded_off_steps, channels_steps, rings_steps, coalescing_steps),
    "queues": (rps_steps, irq_steps),
    "napi": (napi_steps,),
    "kthreads": (kthread_steps,),
}


def plan_group(host, runner, setup, group):
    return [step for planner in PLANNERS[group] for step in planner(host, runner, setup)]


def plan(host, runner, setup):
    return [step for group in GROUPS for step in plan_group(host, runner, setup, group)]


# --- record -------------------------------------------------------------------------------

def number_or_text(text):
    return int(text) if text is not None and re.fullmatch(r"-?\d+", text) else text


def record_cpus(host):
    cpus = {}
    for path in host.glob("/sys/devices/system/cpu/cpu[0-9]*"):
        cpu = cpu_number(path + "/")
        base = f"/sys/devices/system/cpu/cpu{cpu}"
        states = []
        for state in host.glob(f"{base}/cpuidle/state[0-9]*"):
            states.append({"state": os.path.basename(state), "name": host.read(f"{state}/name"),
                           "disable": number_or_text(host.read(f"{state}/disable")),
                           "latency_us": number_or_text(host.read(f"{state}/latency"))})
        cpus[f"cpu{cpu}"] = {"governor": host.read(f"{base}/cpufreq/scaling_governor"),
                             "cpufreq_driver": host.read(f"{base}/cpufreq/scaling_driver"),
                             "cstates": states}
    return {"online": host.read("/sys/devices/system/cpu/online"),
            "smt_control": host.read("/sys/devices/system/cpu/smt/control"),
            "per_cpu": cpus}


def record_netif(host, runner, netif):
    base = f"/sys/class/net/{netif}"
    queues = {os.path.basename(q): {"rps_cpus": host.read(f"{q}/rps_cpus"),
                                    "rps_flow_cnt": number_or_text(host.read(f"{q}/rps_flow_cnt"))}
              for q in rx_queue_dirs(host, netif)}
    return {
        "name": netif,
        "device": host.link_name(f"{base}/device"),
        "sysfs": {name: number_or_text(host.read(f"{base}/{name}"))
                  for name in RECORDED_NETIF_FILES},
        "rx_queues": queues,
        "driver": parse_ethtool_info(runner.query(["ethtool", "-i", netif])),
        "coalescing": parse_ethtool_keys(runner.query(["ethtool", "-c", netif])),
        "rings": parse_ethtool_sections(runner.query(["ethtool", "-g", netif])),
        "channels": parse_ethtool_sections(runner.query(["ethtool", "-l", netif])),
    }


def record_irqs(host, netif):
    return [{"irq": irq, "name": name, "queue": queue,
             "smp_affinity_list": host.read(f"/proc/irq/{irq}/smp_affinity_list"),
             "effective_affinity_list": host.read(f"/proc/irq/{irq}/effective_affinity_list")}
            for irq, name, queue in nic_irqs(host, netif)]


def record(host, runner, setup):
    """The host state the report needs, as one JSON-able dict."""
    return {
        "taken_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hostname": host.read("/proc/sys/kernel/hostname"),
        "setup": setup.summary(),
        "kernel": {"release": host.read("/proc/sys/kernel/osrelease"),
                   "version": host.read("/proc/sys/kernel/version"),
                   "cmdline": host.read("/proc/cmdline")},
        "sysctls": {name: number_or_text(host.read(sysctl_path(name)))
                    for name in RECORDED_SYSCTLS},
        "netif": record_netif(host, runner, setup.netif),
        "irqs": record_irqs(host, setup.netif),
        "cpus": record_cpus(host),
        "irqbalance_running": process_running(host, "irqbalance"),
        "workqueue_cpumask": {f.split("/")[-2]: host.read(f)
                              for f in host.glob("/sys/devices/virtual/workqueue/*/cpumask")},
    }


# --- commands -------------------------------------------------------------------------------

def print_header(host, setup, warnings, out):
    print("#!/bin/sh", file=out)
    print(f"# host-setup.py: seed {setup.seed}, role {setup.role}, {setup.netif} (driver "
          f"{host.link_name(f'/sys/class/net/{setup.netif}/device/driver')}, device "
          f"{host.link_name(f'/sys/class/net/{setup.netif}/device')}), NAPI mode "
          f"{setup.napi_mode}", file=out)
    print(f"# CPUs: IRQs {format_cpu_list(setup.irq_cpus)}, busy "
          f"{format_cpu_list(setup.busy_cpus)}, housekeeping "
          f"{format_cpu_list(setup.housekeeping) or '-'}", file=out)
    for text in warnings:
        print(f"# WARNING: {text}", file=out)


def cmd_plan(host, runner, setup):
    print_header(host, setup, problems(host, setup), runner.out)
    for step in plan(host, runner, setup):
        runner.show(step)
    return 0


def cmd_apply(host, runner, setup):
    found = problems(host, setup)
    print_header(host, setup, found, runner.out)
    if found:
        print("host-setup.py: not applying: " + "; ".join(found), file=sys.stderr)
        return 2
    failed = []
    for group in GROUPS:
        for step in plan_group(host, runner, setup, group):
            err = runner.apply(step)
            if err is not None:
                level = "warning" if step.optional else "failed"
                print(f"host-setup.py: {level}: {step.shell()}: {err}", file=sys.stderr)
                if not step.optional:
                    failed.append(step)
    return 1 if failed else 0


def cmd_record(host, runner, setup, out_path=None):
    text = json.dumps(record(host, runner, setup), indent=2) + "\n"
    if out_path:
        with open(out_path, "w") as f:
            f.write(text)
    else:
        runner.out.write(text)
    return 0


def count(minimum):
    def convert(text):
        if not text.isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: need an integer >= {minimum}")
        return int(text)
    return convert


def build_parser():
    parser = argparse.ArgumentParser(
        prog="host-setup.py", description="Host set-up of the two-machine benchmark runbook.",
        epilog="Exit codes: 0 success, 1 a change failed, 2 usage error or CPUs that do not fit.")
    parser.add_argument("command", choices=("plan", "apply", "record"))
    parser.add_argument("--netif", required=True, help="the NIC under test")
    parser.add_argument("--role", required=True, choices=("sut", "peer"))
    parser.add_argument("--seed", default="000", choices=("000", "001"))
    parser.add_argument("--napi-mode", choices=tuple(NAPI_MODES),
                        help="seed 000's script case (default: harness on the SUT, "
                             "interrupt on seed 000's peer)")
    for which, what in (("napi", "SUT: the NIC's IRQs and NAPI kthreads"),
                        ("app", "SUT: the application"),
                        ("peer", "peer: the NIC's IRQs and the reflector/load generator"),
                        ("housekeeping", "unbound workqueues (default: online CPUs not "
                                         "used above)")):
        parser.add_argument(f"--cpus-{which}", metavar="LIST", help=what)
    parser.add_argument("--queues", type=count(1),
                        help="channels (default: seed 000 1, seed 001 8)")
    parser.add_argument("--max-cstate", type=count(0), metavar="N",
                        help="disable cpuidle states deeper than stateN (0 = POLL only)")
    parser.add_argument("--governor", default="performance",
                        help="cpufreq governor, 'keep' to leave it")
    parser.add_argument("--keep-smt", action="store_true", help="leave SMT on")
    parser.add_argument("--dry-run", action="store_true", help="apply: print only")
    parser.add_argument("--out", help="record: write the JSON here")
    parser.add_argument("--root", default="/", help=argparse.SUPPRESS)  # fixture trees
    return parser


def main(argv=None, runner=None):
    args = build_parser().parse_args(argv)
    host = runner.host if runner else Host(args.root)
    try:
        setup = make_setup(host, args)
    except ValueError as exc:
        print(f"host-setup.py: {exc}", file=sys.stderr)
        return 2
    runner = runner or Runner(host, dry_run=args.dry_run or args.command == "plan")
    if args.command == "plan":
        return cmd_plan(host, runner, setup)
    if args.command == "apply":
        return cmd_apply(host, runner, setup)
    return cmd_record(host, runner, setup, args.out)


if __name__ == "__main__":
    sys.exit(main())
