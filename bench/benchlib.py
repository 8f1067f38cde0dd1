# SPDX-License-Identifier: GPL-2.0
"""Guest-side helpers shared by the benchmarks: the device pair under test,
NAPI mode set-up and the per-cell system counters.

The client side (namespace nsA) is the system under test: modes are
applied to its device, its NAPIs and its process. The peer in nsB is a
plain interrupt-driven reflector or load generator.
"""

import contextlib
import ctypes
import glob
from collections import defaultdict
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time

import insn_ranges
import nic_irqs
import perf_stat

NS_SUT, NS_PEER = "nsA", "nsB"
ADDR_SUT, ADDR_PEER = "192.0.2.1", "192.0.2.2"
# CPU layout (seed 000 keeps the application, the NAPI kthread/IRQs and
# the peer apart): the SUT application and its sender thread, the SUT
# NAPI kthread and IRQs, the peer. Needs 4 CPUs; override per machine.
CPU_APP = os.environ.get("BENCH_CPU_APP", "0,3")
CPU_NAPI = os.environ.get("BENCH_CPU_NAPI", "1")
CPU_PEER = os.environ.get("BENCH_CPU_PEER", "2")
# A CPU none of them uses, kept free of interrupts: the SCHED_FIFO
# spinner of the spinning modes' matched control runs there (rr_grid.py,
# "interrupts+matched"). make bench boots a fifth vCPU for it.
CPU_SPARE = os.environ.get("BENCH_CPU_SPARE", "4")


def sh(*cmd, ns=None, check=True, capture=True, timeout=60):
    if ns:
        cmd = ("ip", "netns", "exec", ns) + cmd
    res = subprocess.run(cmd, capture_output=capture, text=True, timeout=timeout)
    if check and res.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr.strip()}")
    return res.stdout if capture else ""


def write(path, value, ns=None):
    sh("sh", "-c", f"echo {value} > {path}", ns=ns)


def udev_settle():
    """udev renames new network devices asynchronously: let it finish
    before we use a name."""
    subprocess.run(["udevadm", "settle", "--timeout=10"], capture_output=True, check=False)


def busywait(cond, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.01)


class Ynl:
    """The in-tree YNL library for the netdev family (what the CLI
    tools/net/ynl/cli.py runs), in-process: starting the CLI for every
    call costs seconds per mode switch under TCG. Each command is logged
    as the equivalent CLI call, so the set-up can be replayed by hand."""

    def __init__(self, src, log=None):
        self.cli = os.path.join(src, "tools/net/ynl/cli.py")
        self.spec = os.path.join(src, "Documentation/netlink/specs/netdev.yaml")
        sys.path.insert(0, os.path.join(src, "tools/net/ynl"))
        from lib import YnlFamily  # pylint: disable=import-outside-toplevel
        self._family_class = YnlFamily
        self._families = {}
        self.log = log

    def family(self, ns):
        """A netdev family socket opened inside netns NS (None: ours)."""
        if ns not in self._families:
            with netns(ns):
                self._families[ns] = self._family_class(self.spec, "")
        return self._families[ns]

    def call(self, ns, op, kind, attrs):
        if self.log:
            prefix = f"ip netns exec {ns} " if ns else ""
            print(f"{prefix}{self.cli} --spec {self.spec} --no-schema --{kind} {op} "
                  f"--json '{json.dumps(attrs)}'", file=self.log, flush=True)
        family = self.family(ns)
        return family.dump(op, attrs) if kind == "dump" else family.do(op, attrs)

    def forget(self):
        """Drop the sockets: the namespaces they live in are going away."""
        self._families.clear()

    def napis(self, ns, ifindex):
        return self.call(ns, "napi-get", "dump", {"ifindex": ifindex}) or []

    def has_op(self, ns, op):
        return op in self.family(ns).ops


class netns:
    """Context manager: run the enclosed code in network namespace NAME
    (a socket created inside stays there)."""

    CLONE_NEWNET = 0x40000000

    def __init__(self, name):
        self.name = name
        self.libc = ctypes.CDLL(None, use_errno=True)

    def _setns(self, path):
        fd = os.open(path, os.O_RDONLY)
        try:
            if self.libc.setns(fd, self.CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), f"setns {path}")
        finally:
            os.close(fd)

    def __enter__(self):
        if self.name:
            self.home = os.open("/proc/self/ns/net", os.O_RDONLY)
            self._setns(f"/run/netns/{self.name}")
        return self

    def __exit__(self, *exc):
        if self.name:
            self._setns(f"/proc/self/fd/{self.home}")
            os.close(self.home)


class Pair:
    """Two linked devices, one per namespace, one queue each. Sides are
    named NS_SUT and NS_PEER; wrap() runs a command on a side."""

    kind = None

    def __init__(self):
        self.ifname = {}
        self.addr = {NS_SUT: ADDR_SUT, NS_PEER: ADDR_PEER}
        self.netns = {NS_SUT: NS_SUT, NS_PEER: NS_PEER}
        self.irq_regex = None    # the SUT device's data vectors (nic_irqs)
        self.irq_note = None     # why it has none
        self.peer_irq_regex = None   # the peer device's, pinned apart
        self.nics = []
        self._macs = {}

    def wrap(self, side, argv):
        return ["ip", "netns", "exec", self.netns[side]] + list(argv)

    def _find_irqs(self, dev, side=NS_SUT):
        """The data vectors of DEV, the SIDE device, from init_net's view of
        it."""
        regex = nic_irqs.netif_irq_regex(dev)
        if side != NS_SUT:
            self.peer_irq_regex = regex
            return
        self.irq_regex = regex
        if self.irq_regex is None:
            self.irq_note = f"no data vectors of {dev} found in /proc/interrupts"

    def link(self, side):
        out = sh(*self.wrap(side, ["ip", "-j", "link", "show", self.ifname[side]]))
        return json.loads(out)[0]

    def ifindex(self, side):
        return self.link(side)["ifindex"]

    def wait_for_link(self, timeout=10):
        """Both sides' carrier (LOWER_UP). Attaching or detaching an XDP
        program, or a ring or channel change, makes igb reopen the device:
        its link comes back from the watchdog some 0.5 s later, and what
        a cell sends meanwhile is lost without a drop counter."""
        for side in (NS_SUT, NS_PEER):
            busywait(lambda s=side: "LOWER_UP" in self.link(s).get("flags", []), timeout,
                     f"the carrier of {self.ifname[side]} ({self.kind}, {side})")

    def mac(self, side):
        if side not in self._macs:
            self._macs[side] = self.link(side)["address"]
        return self._macs[side]

    def _address(self):
        for ns, addr in ((NS_SUT, ADDR_SUT), (NS_PEER, ADDR_PEER)):
            dev = self.ifname[ns]
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", "dev", dev, "up")
            sh("ip", "-n", ns, "link", "set", "dev", "lo", "up")
        # Resolve neighbours once so that AF_XDP frames have a peer MAC.
        busywait(lambda: subprocess.run(
            ["ip", "netns", "exec", NS_SUT, "ping", "-c1", "-W1", ADDR_PEER],
            capture_output=True).returncode == 0, 20, "ping over the pair")
        sh("ping", "-c1", "-W1", ADDR_SUT, ns=NS_PEER)

    def teardown(self):
        for ns in (NS_SUT, NS_PEER):
            sh("ip", "netns", "del", ns, check=False)


class NsimPair(Pair):
    kind = "netdevsim"

    def __init__(self):
        super().__init__()
        self.irq_note = ("netdevsim has no interrupts: the peer's transmit schedules "
                         "its NAPI, on the peer's CPU")

    def setup(self):
        fds = []
        for i, ns in ((1, NS_SUT), (2, NS_PEER)):
            sh("ip", "netns", "add", ns)
            write("/sys/bus/netdevsim/new_device", f"{i} 1 1")
            udev_settle()
            dev = os.listdir(f"/sys/bus/netdevsim/devices/netdevsim{i}/net")[0]
            sh("ip", "link", "set", "dev", dev, "netns", ns)
            sh("ip", "-n", ns, "link", "set", "dev", dev, "name", f"nsim{i}")
            self.ifname[ns] = f"nsim{i}"
        for ns in (NS_SUT, NS_PEER):
            fds.append(os.open(f"/run/netns/{ns}", os.O_RDONLY))
        link = f"{fds[0]}:{self.ifindex(NS_SUT)} {fds[1]}:{self.ifindex(NS_PEER)}"
        try:
            with open("/sys/bus/netdevsim/link_device", "w") as f:
                f.write(link)
        finally:
            for fd in fds:
                os.close(fd)
        self._address()

    def teardown(self):
        for i in (1, 2):
            if os.path.exists(f"/sys/bus/netdevsim/devices/netdevsim{i}"):
                write("/sys/bus/netdevsim/del_device", str(i))
        super().teardown()


class VirtioPair(Pair):
    """The NICs of 'vng --network loop': two virtio-net NICs on one QEMU
    hub, with real (emulated) MSI-X interrupts."""

    kind = "virtio"
    driver = "virtio_net"
    how = "boot the VM with --network loop"

    @classmethod
    def nics_of_driver(cls):
        """The devices of our driver in init_net, ordered by MAC address."""
        udev_settle()
        return [dev for _, dev in nic_irqs.nics_of_driver(cls.driver)]

    def setup(self):
        nics = self.nics_of_driver()
        if len(nics) < 2:
            raise RuntimeError(f"need two {self.driver} NICs, found {nics}: {self.how}")
        self.nics = nics[:2]
        for dev, ns in zip(self.nics, (NS_SUT, NS_PEER)):
            # Up first: igb requests its vectors at open, virtio_net at
            # probe. Their names stay when it goes down into the netns.
            sh("ip", "link", "set", "dev", dev, "up")
            self._find_irqs(dev, ns)
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "dev", dev, "netns", ns)
            self.ifname[ns] = dev
            self.one_queue(ns, dev)
        self._address()

    def one_queue(self, ns, dev):
        """virtio-net NICs of vng have one queue pair already."""

    def teardown(self):
        # Hand the NICs back before deleting the namespaces: the implicit
        # return happens in the asynchronous netns cleanup, seconds later.
        for side, dev in self.ifname.items():
            sh("ip", "-n", self.netns[side], "link", "set", "dev", dev, "netns", "1",
               check=False)
        super().teardown()
        busywait(lambda: all(os.path.exists(f"/sys/class/net/{d}") for d in self.nics),
                 10, "the virtio NICs back in init_net")


class IgbPair(VirtioPair):
    """Two igb NICs (QEMU's 82576, VM_NICS=igb) on a hub of their own: a
    real NIC driver masking and unmasking MSI-X vectors, one vector per
    RX and per TX queue ("<dev>-rx-0", "<dev>-tx-0")."""

    kind = "igb"
    driver = "igb"
    how = "boot the VM with VM_NICS=igb (QEMU 8.0+)"

    def one_queue(self, ns, dev):
        # One queue, so that the test flow and the measured vectors agree;
        # seed 000's ring size and no interrupt throttling (igb has no
        # adaptive coalescing to turn off).
        sh("ip", "netns", "exec", ns, "ethtool", "-L", dev, "combined", "1")
        sh("ip", "netns", "exec", ns, "ethtool", "-G", dev, "rx", "1024")
        sh("ip", "netns", "exec", ns, "ethtool", "-C", dev, "rx-usecs", "0", "tx-usecs", "0")


class HostPair(Pair):
    """Two real machines: this one is the SUT (interface NETIF, address
    BENCH_SUT_ADDR), the peer BENCH_PEER_ADDR is reached over ssh
    (BENCH_PEER_SSH=user@host) to start the reflector, with the same
    checkout at the same path there (or BENCH_PEER_NAPI_RR).
    BENCH_SUT_NETNS and BENCH_PEER_NETNS stand the two hosts in network
    namespaces of this machine instead (the runbook's dry run,
    bench/host/runbook_dryrun.py); the global sysctls stay this
    machine's."""

    kind = "host"

    def setup(self):
        self.netns = {NS_SUT: os.environ.get("BENCH_SUT_NETNS") or None,
                      NS_PEER: os.environ.get("BENCH_PEER_NETNS") or None}
        try:
            self.ifname = {NS_SUT: os.environ["NETIF"],
                           NS_PEER: os.environ.get("BENCH_PEER_NETIF", os.environ["NETIF"])}
            self.addr = {NS_SUT: os.environ["BENCH_SUT_ADDR"],
                         NS_PEER: os.environ["BENCH_PEER_ADDR"]}
            self.ssh = None if self.netns[NS_PEER] else os.environ["BENCH_PEER_SSH"]
        except KeyError as exc:
            raise RuntimeError(f"real machines need {exc.args[0]} set (see docs/two-host-runbook.md)")
        self._find_irqs(self.ifname[NS_SUT])
        sh(*self.wrap(NS_SUT, ["ping", "-c1", "-W1", self.addr[NS_PEER]]))

    def wrap(self, side, argv):
        if self.netns[side]:
            return super().wrap(side, argv)
        if side == NS_SUT:
            return list(argv)
        return ["ssh", self.ssh] + list(argv)

    def mac(self, side):
        if side == NS_SUT:
            return super().mac(side)
        out = sh(*self.wrap(NS_SUT, ["ip", "-j", "neigh", "show", self.addr[NS_PEER]]))
        return json.loads(out)[0]["lladdr"]

    def teardown(self):
        pass


PAIRS = {"netdevsim": NsimPair, "virtio": VirtioPair, "igb": IgbPair, "host": HostPair}


def rx_napi_ids(queues, napis):
    """IDs of the NAPIs that RX QUEUES (a queue-get dump) are linked to,
    in NAPIS (a napi-get dump) order; all of NAPIS if none is linked."""
    linked = {q["napi-id"] for q in queues if q.get("type") == "rx" and "napi-id" in q}
    ids = [n["id"] for n in napis if n["id"] in linked]
    return ids or [n["id"] for n in napis]


class Modes:
    """NAPI set-up of the SUT device for a named mode (see MODES)."""

    def __init__(self, pair, ynl):
        self.pair, self.ynl = pair, ynl
        self.ifindex = pair.ifindex(NS_SUT)
        ynl.forget()
        self.has_napi_set = ynl.has_op(pair.netns[NS_SUT], "napi-set")
        self.probes = TraceProbes(pair.ifname[NS_SUT])
        self._napi_ids = None
        self.state = {}     # unknown at first: the first apply() writes all
        self.pids = []      # the NAPI kthreads apply() last made SCHED_FIFO

    def sysfs(self, attr, value):
        write(f"/sys/class/net/{self.pair.ifname[NS_SUT]}/{attr}", value,
              ns=self.pair.netns[NS_SUT])

    def napi_ids(self, every=False):
        """The NAPIs the per-NAPI modes are set on: those that serve the
        SUT's RX queues, or EVERY NAPI of the device (a control of the
        collapse experiment). igb gives TX completions NAPIs of their
        own; a busy-polling kthread on one of them would, at the same
        SCHED_FIFO priority on the same CPU, never let the RX NAPI's
        kthread run (a spinning FIFO task is only preempted by a higher
        priority). Devices that do not link queues to NAPIs: all NAPIs."""
        # Stable: the benchmarks never change the queue count.
        if self._napi_ids is None:
            ns = self.pair.netns[NS_SUT]
            napis = self.ynl.napis(ns, self.ifindex)
            queues = self.ynl.call(ns, "queue-get", "dump", {"ifindex": self.ifindex}) or []
            self._napi_ids = {True: [n["id"] for n in napis],
                              False: rx_napi_ids(queues, napis)}
        return self._napi_ids[every]

    def has_other_napis(self):
        """Whether the device has NAPIs besides those of its RX queues."""
        return self.napi_ids(every=True) != self.napi_ids()

    def napi_set(self, ids, **attrs):
        if not self.has_napi_set:
            raise RuntimeError("kernel has no napi-set (unpatched base?)")
        for napi_id in ids:
            body = {"id": napi_id}
            body.update({k.replace("_", "-"): v for k, v in attrs.items()})
            self.ynl.call(self.pair.netns[NS_SUT], "napi-set", "do", body)

    def apply(self, defer=0, gro=0, busy_read=0, busy_poll=0, threaded="disabled",
              irq_suspend=0, kthread_fifo=True, all_napis=False):
        """Device-wide defer/gro through sysfs (works on the base kernel
        too), threaded mode and irq-suspend-timeout per NAPI via napi-set,
        on the RX queues' NAPIs (ALL_NAPIS: on every NAPI of the device);
        only what differs from the previous mode is written (the YNL CLI
        takes seconds under TCG). Returns the PIDs of the NAPI kthreads,
        pinned to CPU_NAPI and, unless KTHREAD_FIFO is false, SCHED_FIFO
        as in the seed's set-up."""
        self.relax_kthreads()
        want = {"busy_read": busy_read, "busy_poll": busy_poll, "defer": defer, "gro": gro,
                "threaded": threaded, "irq_suspend": irq_suspend, "all_napis": all_napis}
        changed = {k: v for k, v in want.items() if self.state.get(k) != v}
        for key in ("busy_read", "busy_poll"):
            if key in changed:
                write(f"/proc/sys/net/core/{key}", changed[key])
        if "defer" in changed:
            self.sysfs("napi_defer_hard_irqs", defer)
        if "gro" in changed:
            self.sysfs("gro_flush_timeout", gro)
        ids = self.napi_ids(every=all_napis) if self.has_napi_set else []
        napi_attrs = {}
        if "threaded" in changed or "all_napis" in changed:
            napi_attrs["threaded"] = threaded
        if "irq_suspend" in changed or "all_napis" in changed:
            napi_attrs["irq_suspend_timeout"] = irq_suspend
        if self.has_napi_set:
            # The NAPIs this mode leaves alone go back to the defaults.
            if "all_napis" in changed and self.state:
                others = [i for i in self.napi_ids(every=True) if i not in ids]
                self.napi_set(others, threaded="disabled", irq_suspend_timeout=0)
            if napi_attrs:
                self.napi_set(ids, **napi_attrs)
        elif "threaded" in changed:
            self.sysfs("threaded", {"disabled": 0, "enabled": 1, "busy-poll": 2}[threaded])
        self.state = want
        pids = []
        if threaded != "disabled":
            napis = self.ynl.napis(self.pair.netns[NS_SUT], self.ifindex)
            pids = [n["pid"] for n in napis if "pid" in n and n["id"] in self.napi_ids(all_napis)]
            for pid in pids:
                sh("taskset", "-pc", CPU_NAPI, str(pid))
                if kthread_fifo:
                    sh("chrt", "-f", "-p", "50", str(pid))
                else:
                    sh("chrt", "-o", "-p", "0", str(pid))
        self.pids = pids if kthread_fifo else []
        self.pin_irqs(CPU_NAPI)
        return pids

    def relax_kthreads(self):
        """Make the kthreads apply() made SCHED_FIFO SCHED_OTHER. A
        spinning FIFO kthread can starve another of its priority on its
        CPU, and with it whatever waits for that one: napi_disable() in a
        driver reset (igb's TX watchdog) with RTNL held, a mode change."""
        for pid in self.pids:
            sh("chrt", "-o", "-p", "0", str(pid), check=False)
        self.pids = []

    def pin_irqs(self, cpus):
        """The SUT's vectors on CPUS, the peer's on its own CPUs, so that
        the SUT's CPUs count only the SUT's interrupts and softirqs; a
        list of CPUs (mc_sweep.py --server-cpus) gets them round-robin by
        queue, as host-setup.py pins them."""
        self.probes.set_irqs(device_irqs(self.pair.irq_regex))
        for regex, where in ((self.pair.irq_regex, cpus), (self.pair.peer_irq_regex, CPU_PEER)):
            if regex is None:
                continue
            with open("/proc/interrupts") as f:
                vectors = nic_irqs.match_irqs(nic_irqs.interrupt_lines(f.read()), regex)
            targets = [c.removeprefix("cpu") for c in cpu_set(where)]
            for irq, cpu in nic_irqs.spread_by_queue(vectors, targets).items():
                write(f"/proc/irq/{irq}/smp_affinity_list", cpu)

    def reset(self):
        self.state = {}
        self.apply()
        self.probes.close()


def record_plan(out, bench, devices, **plan):
    """Write what a benchmark script sets out to run (status "plan")
    before its first cell: a device it never reaches (the guest died,
    the script stopped) still has a line that names it, and the report
    a goal row that says so."""
    out.write(json.dumps(dict({"bench": bench, "status": "plan", "devices": list(devices)},
                              **plan)) + "\n")
    out.flush()


def each_pair(bench, devices, ynl, out):
    """Set up each device pair in turn and yield (pair, modes), tearing
    it down on every path. A pair that cannot be set up (no virtio NICs,
    no netdevsim) is recorded as skipped."""
    for device in devices:
        pair = PAIRS[device]()
        try:
            pair.setup()
        except (RuntimeError, OSError, TimeoutError) as exc:
            print(f"{bench} {device}: skipped, {exc}", flush=True)
            out.write(json.dumps({"bench": bench, "device": device, "status": "skip",
                                  "error": str(exc)}) + "\n")
            pair.teardown()
            continue
        modes = None
        try:
            modes = Modes(pair, ynl)
            yield pair, modes
        finally:
            if modes:
                modes.reset()
            pair.teardown()


class Occupancy:
    """Context manager: the CPU occupancy of a mode without its code.
    SPINNERS are (policy, cpus) pairs, policy "fifo" (SCHED_FIFO 50, as
    the busy-poll kthread) or "other"; RT_RUNTIME_US, if set, is written
    to kernel.sched_rt_runtime_us for the duration (the guest runs with
    RT throttling off, -1, as the seed's host set-up); IRQ_FREE, a CPU
    whose interrupts are moved away first (irqs_left: those that could
    not be)."""

    RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"

    def __init__(self, spinners=(), rt_runtime_us=None, irq_free=None):
        self.spinners, self.rt_runtime_us = spinners, rt_runtime_us
        self.irq_free, self.irqs_left = irq_free, None
        self.procs, self.saved_rt = [], None

    def __enter__(self):
        if self.rt_runtime_us is not None:
            self.saved_rt = read_text(self.RT_RUNTIME)
            write(self.RT_RUNTIME, self.rt_runtime_us)
        if self.irq_free is not None:
            self.irqs_left = irqs_off(self.irq_free)
        for policy, cpus in self.spinners:
            sched = ["chrt", "-f", "50"] if policy == "fifo" else ["chrt", "-o", "0"]
            self.procs.append(subprocess.Popen(
                sched + ["taskset", "-c", cpus, "sh", "-c", "while :; do :; done"]))
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.kill()
            proc.wait()
        if self.saved_rt is not None:
            write(self.RT_RUNTIME, self.saved_rt)
        return False


def stop_process(proc, timeout=10):
    """SIGTERM, then SIGKILL if PROC does not exit in time; returns its
    (stdout, stderr)."""
    proc.terminate()
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


def record(out, result, started, summary):
    """Append one cell's RESULT to OUT and print SUMMARY with its status
    and wall time. Returns whether the cell succeeded."""
    result["wall_s"] = round(time.monotonic() - started, 1)
    out.write(json.dumps(result) + "\n")
    out.flush()
    ok = result["status"] == "ok"
    print(f"{summary} {result['status']} ({result['wall_s']}s)"
          f"{'' if ok else ' ' + result.get('error', '')}", flush=True)
    return ok


def rotated(items, rep):
    """Repetition REP starts at another item: interleaved modes or
    variants, so that drifts during a run hit all of them alike."""
    k = rep % len(items) if items else 0
    return items[k:] + items[:k]


def interrupt_lines(irq_regex):
    """(irq, name, total count over all CPUs) of each /proc/interrupts
    line whose name IRQ_REGEX (the device under test's) matches whole."""
    if irq_regex is None:
        return []
    with open("/proc/interrupts") as f:
        return [line for line in nic_irqs.interrupt_lines(f.read())
                if irq_regex.fullmatch(line[1])]


def device_irqs(irq_regex):
    """{irq: total count} of the device's /proc/interrupts lines."""
    return {irq: count for irq, _, count in interrupt_lines(irq_regex)}


def irq_direction(name):
    """What a device vector serves, from its /proc/interrupts name:
    virtio-net's "virtioN-input.Q" / "virtioN-output.Q", igb's
    "eth0-rx-Q" / "eth0-tx-Q", or one vector for both ("eth0-TxRx-Q"),
    whose count cannot be split, as mlx5's completion vectors
    ("mlx5_comp<N>@pci:...") cannot; None for anything else (virtio's
    config vector)."""
    low = name.lower()
    if re.match(r"mlx5_(?:comp|combined)\d+@", low):
        return "rxtx"
    rx = "input" in low or "rx" in low
    tx = "output" in low or "tx" in low
    if rx and tx:
        return "rxtx"
    return "rx" if rx else "tx" if tx else None


def snapshot(irq_regex):
    """The counters at one edge of the measured window: time, CPU use per
    CPU, context switches and NET_RX softirqs per CPU (system-wide), and
    the SUT device's interrupts per vector. Only cheap /proc reads: the
    window's edges should not move while we read."""
    snap = {"time": time.monotonic(), "cpu": {}, "net_rx": {}}
    with open("/proc/stat") as f:
        for line in f:
            fields = line.split()
            if re.fullmatch(r"cpu\d+", fields[0]):
                vals = [int(v) for v in fields[1:8]]
                # user nice system idle iowait irq softirq
                snap["cpu"][fields[0]] = {"busy": sum(vals) - vals[3] - vals[4],
                                          "total": sum(vals), "softirq": vals[6]}
            elif fields[0] == "ctxt":
                snap["ctxt"] = int(fields[1])
    with open("/proc/softirqs") as f:
        cpus = f.readline().split()
        for line in f:
            if line.strip().startswith("NET_RX:"):
                snap["net_rx"] = {cpu.lower(): int(v) for cpu, v in zip(cpus, line.split()[1:])}
    snap["irqs"] = {name: count for _, name, count in interrupt_lines(irq_regex)}
    return snap


def cpu_numbers(spec):
    """ "0,3" or "1-2" (a taskset list) -> [0, 3] / [1, 2]."""
    cpus = []
    for part in str(spec).split(","):
        lo, _, hi = part.partition("-")
        cpus += list(range(int(lo), int(hi or lo) + 1))
    return cpus


def read_text(path):
    with open(path) as f:
        return f.read().strip()


def online_cpus():
    return cpu_numbers(read_text("/sys/devices/system/cpu/online"))


def spare_cpu_problem(cpu=CPU_SPARE):
    """Why CPU cannot be the matched control's CPU without interrupts,
    or None: it must be online and not one the other roles use."""
    used = cpu_numbers(CPU_APP) + cpu_numbers(CPU_NAPI) + cpu_numbers(CPU_PEER)
    if int(cpu) in used:
        return f"BENCH_CPU_SPARE={cpu} is the application's, the NAPI's or the peer's"
    if int(cpu) not in online_cpus():
        return f"CPU {cpu} is not online (make bench boots BENCH_VM_CPUS=5)"
    return None


def irqs_off(cpu):
    """Move every interrupt the kernel lets us move off CPU; returns the
    IRQs whose effective affinity still includes it."""
    cpu, left = int(cpu), []
    for path in sorted(glob.glob("/proc/irq/[0-9]*")):
        with contextlib.suppress(OSError, ValueError):
            allowed = cpu_numbers(read_text(f"{path}/smp_affinity_list"))
            if cpu in allowed and len(allowed) > 1:
                with open(f"{path}/smp_affinity_list", "w") as f:
                    f.write(",".join(str(c) for c in allowed if c != cpu))
        with contextlib.suppress(OSError, ValueError):
            effective = read_text(f"{path}/effective_affinity_list")
            if effective and cpu in cpu_numbers(effective):
                left.append(int(os.path.basename(path)))
    return left


def cpu_set(spec):
    """ "0,3" or "1-2" -> ["cpu0", "cpu3"] / ["cpu1", "cpu2"]."""
    return [f"cpu{c}" for c in cpu_numbers(spec)]


def per(value, exchanges):
    return round(value / exchanges, 4) if value is not None and exchanges else None


def window_counts(before, after, exchanges, sut_cpus, events=None, kthread_pids=(),
                  notes=None):
    """The counters of one measured window, from the snapshots BEFORE and
    AFTER its edges, per exchange (EXCHANGES: see measured_counts()):
    the SUT's own counts under "sut", system-wide ones under "system"
    (secondary: they include the peer, the load generator and kworkers).
    EVENTS are the window's trace events (window_events()), None when
    tracing was unavailable; NOTES say why a count is missing. A count
    that could not be measured is None, with its reason in
    "not_measured"."""
    not_measured = dict(notes or {})
    cpu = {}
    for name, a in after["cpu"].items():
        b = before["cpu"].get(name)
        total = a["total"] - b["total"] if b else 0
        cpu[name] = round(100.0 * (a["busy"] - b["busy"]) / total, 1) if total else 0.0
    net_rx = {c: after["net_rx"][c] - before["net_rx"].get(c, 0) for c in after["net_rx"]}
    # The SUT's interrupts and NET_RX softirqs from the trace where it
    # has them (the polls' window), else from the /proc snapshots.
    traced_irqs = (events or {}).get("irq_counts")
    traced_net_rx = (events or {}).get("net_rx")
    sut_net_rx = net_rx if traced_net_rx is None else traced_net_rx
    sut = {"net_rx_softirqs_sut_cpus": per(sum(sut_net_rx.get(c, 0) for c in sut_cpus),
                                           exchanges)}
    irqs = {"rx": None, "tx": None, "rxtx": None}
    for name, count in after["irqs"].items():
        way = irq_direction(name)
        if way:
            n = count - before["irqs"].get(name, 0) if traced_irqs is None \
                else traced_irqs.get(name, 0)
            irqs[way] = (irqs[way] or 0) + n
    if not after["irqs"]:
        not_measured.setdefault("irqs", "the device has no interrupt lines in /proc/interrupts")
    elif irqs["rx"] is None and irqs["rxtx"] is None:
        not_measured.setdefault("irqs", "no RX vector among the device's interrupt lines")
    for way, count in irqs.items():
        sut[f"{way}_irqs"] = per(count, exchanges)
    # A combined vector (ice/idpf "TxRx", mlx5's completion vectors) also
    # raises the RX interrupts: the RX criterion counts it (rxtx_irqs
    # tells the report to say so).
    if irqs["rxtx"] is not None:
        sut["rx_irqs"] = per((irqs["rx"] or 0) + irqs["rxtx"], exchanges)
    if events is None:
        not_measured.setdefault("polls", "no napi tracepoints")
        not_measured.setdefault("suspension", "no napi tracepoints")
    else:
        sut.update(poll_counts(events["polls"], exchanges, kthread_pids))
        sut.update(suspension_counts(events, exchanges))
        sut.update(rearm_counts(events, exchanges))
        _, unplaced = napi_id_resolver(events)
        if unplaced:
            not_measured.setdefault("suspension", unplaced)
        if events.get("rearms") is None:
            not_measured.setdefault("rearms", "no re-arm probe")
    return {
        "window_s": round(after["time"] - before["time"], 3),
        "exchanges": exchanges,
        "sut_counts_from": {"irqs": "/proc" if traced_irqs is None else "trace",
                            "net_rx": "/proc" if traced_net_rx is None else "trace"},
        "sut": sut,
        "system": {
            "cpu_busy_pct": cpu,
            "net_rx_softirqs": per(sum(net_rx.values()), exchanges),
            "ctx_switches": per(after["ctxt"] - before["ctxt"], exchanges),
        },
        "not_measured": not_measured,
    }


def poll_context(poll, kthread_pids):
    """Who ran an RX poll: "softirq" (NET_RX processing, also in
    ksoftirqd), "kthread" (the NAPI's thread), or "app" (busy polling from
    a system call in process context)."""
    if poll["softirq"]:
        return "softirq"
    if poll["pid"] in kthread_pids or poll["comm"].startswith("napi/"):
        return "kthread"
    return "app"


def poll_counts(polls, exchanges, kthread_pids):
    """RX polls that did work, per exchange and by context, and the
    packets the kthread polled per exchange."""
    counts = {"softirq": 0, "kthread": 0, "app": 0}
    kthread_packets = 0
    for poll in polls:
        ctx = poll_context(poll, kthread_pids)
        counts[ctx] += 1
        if ctx == "kthread":
            kthread_packets += poll["work"]
    out = {f"rx_polls_{ctx}": per(n, exchanges) for ctx, n in counts.items()}
    out["kthread_packets"] = per(kthread_packets, exchanges)
    return out


def rearm_counts(events, exchanges):
    """RX re-arms (the driver re-enables its RX vector after
    napi_complete_done() returned true) per exchange, and those of a NAPI
    inside its own suspension (there should be none; None when the
    re-arms cannot be told apart by NAPI): what the kernel controls,
    where an emulated NIC's interrupt count shows the model's
    behaviour."""
    rearms = events.get("rearms")
    if rearms is None:
        return {"rx_rearms": None, "rx_rearms_suspended": None}
    napi_id, _ = napi_id_resolver(events)
    suspended = suspended_intervals(events)
    at = events.get("rearms_by_napi") or [(ts, None) for ts in rearms]
    return {"rx_rearms": per(len(rearms), exchanges),
            "rx_rearms_suspended": None if napi_id is None else sum(
                1 for ts, napi in at if inside(ts, suspended.get(napi_id(napi), ())))}


def inside(ts, intervals):
    return any(a <= ts <= b for a, b in intervals)


def napi_id_resolver(events):
    """(the NAPI ID of a NAPI struct address, None or why not): a poll or
    a re-arm names its NAPI by address, a suspension by NAPI ID. The
    pairs TraceProbes' NAPI_PTR_EVENT recorded map them; without them
    one RX NAPI and one suspended NAPI are each other's. Where every
    suspended NAPI has its address, an RX NAPI without one never
    suspended. (None, why) when several NAPIs suspended and no pair maps
    one of them."""
    known = events.get("napi_ids") or {}
    suspended = {napi_id for _, _, _, napi_id in events["irq"]}
    if not suspended:
        return (lambda napi: None), None
    rx_napis = events.get("rx_napis") or set()
    if len(suspended) <= 1 and len(rx_napis | set(known)) <= 1:
        only = next(iter(suspended), None)
        return (lambda napi: known.get(napi, only)), None
    if suspended <= set(known.values()):
        return known.get, None
    return None, (f"{len(suspended)} NAPIs suspended, {len(rx_napis - set(known))} RX NAPIs "
                  "with no NAPI ID (no napi_irq_ptr pair): polls and re-arms cannot be "
                  "placed in their NAPI's suspension")


def suspended_intervals(events):
    """Each NAPI's suspended intervals in the window, clipped to it, from
    the whole buffer's suspend and resume events: {napi_id: [(start,
    end)]}. A resume ends its own NAPI's suspension only: with several
    queues, one NAPI's resume says nothing of another's."""
    t0, t1 = events["window"]
    since, intervals = {}, defaultdict(list)
    for ts, kind, _, napi_id in events["irq"]:
        if kind == "suspend":
            since.setdefault(napi_id, ts)
            intervals[napi_id]      # suspended before the window: a NAPI of ours
        elif napi_id in since:
            intervals[napi_id].append((since.pop(napi_id), ts))
    for napi_id, start in since.items():
        intervals[napi_id].append((start, t1))
    return {napi_id: [(max(a, t0), min(b, t1)) for a, b in spans if b > t0 and a < t1]
            for napi_id, spans in intervals.items()}


def suspension_counts(events, exchanges):
    """IRQ suspension in the window from the series' tracepoints, per
    NAPI: suspend events (extensions included) per exchange, suspensions
    started, resumes by reason, the share of the window suspended (the
    mean over the NAPIs that were suspended in the buffer: each must
    stay suspended; an RX NAPI that polled in the window and never
    suspended counts as 0), and the softirq RX polls that ran while
    their own NAPI was suspended (there should be none; None when polls
    cannot be told apart by NAPI)."""
    t0, t1 = events["window"]
    suspended = set()           # the buffer starts with no suspension
    resumes = {}
    suspend_events = started = 0
    for ts, kind, reason, napi_id in events["irq"]:
        if kind == "suspend":
            if t0 <= ts <= t1:
                suspend_events += 1
                started += napi_id not in suspended
            suspended.add(napi_id)
        elif napi_id in suspended:
            if t0 <= ts <= t1:
                resumes[reason] = resumes.get(reason, 0) + 1
            suspended.discard(napi_id)
    clipped = suspended_intervals(events)
    napi_id, _ = napi_id_resolver(events)
    shares = [sum(b - a for a, b in spans) / (t1 - t0) for spans in clipped.values()] \
        + [0.0] * never_suspended(events["polls"], clipped, napi_id) if t1 > t0 else None
    return {
        "suspend_events": per(suspend_events, exchanges),
        "suspensions": started,
        "resumes": resumes,
        "suspended_frac": None if shares is None else
        round(sum(shares) / len(shares), 4) if shares else 0.0,
        "softirq_polls_suspended": None if napi_id is None else sum(
            1 for p in events["polls"]
            if p["softirq"] and inside(p["ts"], clipped.get(napi_id(p.get("napi")), ()))),
    }


def never_suspended(polls, suspended, napi_id):
    """How many of the RX NAPIs that polled with work in the window
    (POLLS) are none of SUSPENDED ({napi_id: intervals}); NAPI_ID maps
    an address to its ID (napi_id_resolver(), None: it cannot), then at
    least those beyond the suspended NAPIs' number."""
    polled = {p["napi"] for p in polls if p.get("napi") is not None}
    if napi_id is None:
        return max(len(polled) - len(suspended), 0)
    return sum(1 for napi in polled if napi_id(napi) not in suspended)


# Kprobe group and event of TraceProbes' re-arm return probe.
REARM_EVENT = ("napi_bench", "napi_rearm")
# ... and of its probe on the suspension tracepoints' own function, which
# records the NAPI's address right before the event records its NAPI ID.
NAPI_PTR_EVENT = ("napi_bench", "napi_irq_ptr")
# The two are microseconds apart on one CPU; farther, they are not a pair.
NAPI_PTR_PAIRING_S = 0.001

# One line of tracefs' "trace" file: comm-pid, [cpu], the context flags
# (irqs-off, need-resched, hardirq/softirq, ...), timestamp, event, fields.
TRACE_LINE = re.compile(r"^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+(\d+\.\d+):\s+(\w+):\s+(.*)$")
NET_RX_SOFTIRQ = 3


def parse_trace(lines, t0, t1):
    """The window's events out of tracefs' trace text: the RX polls with
    work inside [T0, T1] ({ts, pid, comm, softirq, work, napi: its
    address}), the IRQ suspension events of the whole buffer ((ts,
    "suspend"|"resume", reason, napi_id)), which tell each NAPI's state
    at T0, and the re-arms (REARM_EVENT: napi_complete_done() returned
    true) of the SUT's RX NAPIs inside the window: those of the NAPIs
    whose polls did work anywhere in the buffer (the napi_poll events are
    the SUT device's only; TX-only NAPIs poll with work 0), as times and
    as (time, address). napi_ids: the NAPI ID of each address, from the
    NAPI_PTR_EVENT recorded on the same CPU right before a suspension
    event. Also, inside the window, the SUT's vectors' interrupts by name
    (irq_handler_entry) and NET_RX softirqs by CPU (softirq_entry):
    counted over the same window as the polls."""
    polls, irq, rearms, rx_napis = [], [], [], set()
    irq_counts, net_rx = defaultdict(int), defaultdict(int)
    # Per CPU, the NAPI addresses NAPI_PTR_EVENT recorded and their
    # tracepoint event has not yet taken (a stack: a hard IRQ's
    # suspension may nest); and the NAPI ID each address was seen with.
    pending, napi_ids = defaultdict(list), defaultdict(lambda: defaultdict(int))
    for line in lines:
        m = TRACE_LINE.match(line)
        if not m:
            continue
        comm, pid, cpu, flags, ts, event, rest = m.groups()
        ts = float(ts)
        if event == "irq_handler_entry":
            name = re.search(r"\bname=(\S+)", rest)
            if name and t0 <= ts <= t1:
                irq_counts[name.group(1)] += 1
            continue
        if event == "softirq_entry":
            if f"vec={NET_RX_SOFTIRQ} " in f"{rest} " and t0 <= ts <= t1:
                net_rx[f"cpu{int(cpu)}"] += 1
            continue
        if event == "napi_poll":
            work = re.search(r"\bwork (\d+)", rest)
            napi = re.search(r"napi struct (?:0x)?([0-9a-f]+)", rest)
            if work and napi:
                rx_napis.add(int(napi.group(1), 16))
            if work and t0 <= ts <= t1:
                polls.append({"ts": ts, "pid": int(pid), "comm": comm.strip(),
                              # hardirq/softirq column: s softirq, H hardirq in softirq
                              "softirq": len(flags) > 2 and flags[2] in "sH",
                              "work": int(work.group(1)),
                              "napi": int(napi.group(1), 16) if napi else None})
        elif event in ("napi_irq_suspend", "napi_irq_resume"):
            reason = re.search(r"\breason=(\S+)", rest)
            napi_id = re.search(r"\bnapi_id=(\d+)", rest)
            napi_id = int(napi_id.group(1)) if napi_id else None
            irq.append((ts, event[len("napi_irq_"):], reason.group(1) if reason else "?",
                        napi_id))
            if pending[cpu]:
                at, napi = pending[cpu].pop()
                if ts - at <= NAPI_PTR_PAIRING_S and napi_id is not None:
                    napi_ids[napi][napi_id] += 1
        elif event == NAPI_PTR_EVENT[1]:
            napi = re.search(r"\bnapi=0x([0-9a-f]+)", rest)
            if napi:
                pending[cpu].append((ts, int(napi.group(1), 16)))
        elif event == REARM_EVENT[1]:
            napi = re.search(r"\bnapi=0x([0-9a-f]+)", rest)
            if napi and t0 <= ts <= t1:
                rearms.append((ts, int(napi.group(1), 16)))
    rearms = [(ts, napi) for ts, napi in rearms if napi in rx_napis]
    return {"window": (t0, t1), "polls": polls, "irq": irq,
            "rearms": [ts for ts, _ in rearms], "rearms_by_napi": rearms,
            "rx_napis": rx_napis,
            # An address the filter let a foreign event pair with loses the vote.
            "napi_ids": {napi: max(seen, key=seen.get) for napi, seen in napi_ids.items()},
            "irq_counts": dict(irq_counts), "net_rx": dict(net_rx)}


def missed_note(missed, probe, what):
    """Why PROBE's events of a window cannot be trusted, or None: it
    MISSED some WHAT (kprobe_profile nmissed), or how many is unknown."""
    if missed is None:
        return f"{probe}'s misses unknown (kprobe_profile unreadable)"
    return f"{probe} missed {missed} {what} (kprobe_profile nmissed)" if missed else None


class TraceProbes:
    """The series' view of the SUT device from tracefs: napi:napi_poll
    events that did work (work > 0) and napi:napi_irq_suspend/resume,
    filtered on the device's name, recorded into the ring buffer with the
    CLOCK_MONOTONIC trace clock so that they can be cut to the measured
    window afterwards. The events stay enabled for the whole run (their
    static keys are patched once, not per cell: see docs/benchmarks.md,
    multi-threaded TCG); reset() empties the buffer before each cell. Without tracefs, an
    event or the ring buffer's room, the counts degrade to "not
    measured" (notes), never to an error."""

    TRACING = "/sys/kernel/tracing"
    EVENTS = ("napi_poll", "napi_irq_suspend", "napi_irq_resume")
    BUFFER_KB = 8192        # per CPU: a 2 s window of polls at TCG rates fits
    # The driver re-arms its IRQ exactly when napi_complete_done() returns
    # true: a return probe with the NAPI (an entry argument, 6.9+).
    REARM_PROBE = (f"r:{REARM_EVENT[0]}/{REARM_EVENT[1]} napi_complete_done "
                   "napi=$arg1:x64 done=$retval:u8")
    # The suspension events name a NAPI by ID, polls and re-arms by
    # address: the events' own function has both (its second argument).
    NAPI_PTR_PROBE = (f"p:{NAPI_PTR_EVENT[0]}/{NAPI_PTR_EVENT[1]} "
                      "trace_event_raw_event_napi_irq_suspend_class napi=$arg2:x64")

    def __init__(self, dev_name):
        self.enabled = []
        self.notes = {}
        self.rearm_probe = False
        self.napi_ptr_probe = False
        self.missed_at_reset = {}
        self.counting = []
        filters = {"napi_poll": f'dev_name == "{dev_name}" && work > 0',
                   "napi_irq_suspend": f'dev_name == "{dev_name}"',
                   "napi_irq_resume": f'dev_name == "{dev_name}"'}
        try:
            # Timestamps on the clock of time.monotonic() and of the tools.
            self._write("trace_clock", "mono")
        except OSError as exc:
            self.notes["polls"] = self.notes["suspension"] = f"tracefs unusable: {exc}"
            return
        try:
            if int(self._read("buffer_size_kb").split()[0]) < self.BUFFER_KB:
                self._write("buffer_size_kb", self.BUFFER_KB)
        except (OSError, ValueError, IndexError):
            pass    # a smaller buffer may still do: overrun() tells
        for event in self.EVENTS:
            path = f"events/napi/{event}"
            try:
                self._write(f"{path}/filter", filters[event])
                self._write(f"{path}/enable", "1")
                self.enabled.append(event)
            except OSError as exc:
                what = "polls" if event == "napi_poll" else "suspension"
                self.notes[what] = f"no tracepoint napi:{event} ({exc.strerror})"
        self.rearm_probe = self._add_rearm_probe()
        self.napi_ptr_probe = self.rearm_probe and self._add_napi_ptr_probe()
        # Interrupts and NET_RX softirqs from the trace too: the same
        # window as the polls (set_irqs() names the vectors).
        self.counting = []
        for event, filt in (("irq_handler_entry", "irq == -1"),
                            ("softirq_entry", f"vec == {NET_RX_SOFTIRQ}")):
            try:
                self._write(f"events/irq/{event}/filter", filt)
                self._write(f"events/irq/{event}/enable", "1")
                self.counting.append(event)
            except OSError as exc:
                self.notes[f"trace_{event}"] = f"no tracepoint irq:{event} ({exc.strerror})"

    def set_irqs(self, irqs):
        """Trace the interrupts of the vectors IRQS (numbers) only."""
        if "irq_handler_entry" in self.counting:
            self._write("events/irq/irq_handler_entry/filter",
                        " || ".join(f"irq == {irq}" for irq in irqs) or "irq == -1")

    def _add_rearm_probe(self):
        """The re-arm return probe, matched to the polls' NAPIs by address:
        pointers in the trace unhashed (hash-ptr off). False, with a note,
        where the kernel cannot."""
        try:
            self._write("options/hash-ptr", "0")
            self._remove_rearm_probe()      # left by an earlier pair
        except OSError as exc:
            self.notes["rearms"] = f"no return probe on napi_complete_done ({exc.strerror})"
            return False
        return self._add_probe(REARM_EVENT, self.REARM_PROBE, "done != 0", "rearms",
                               "no return probe on napi_complete_done")

    def _add_probe(self, name, definition, filter_, note, failure):
        """Add and enable the kprobe event NAME (group, event); False,
        with FAILURE and the error in notes[NOTE], where the kernel
        refuses it."""
        group, event = name
        try:
            self._append("kprobe_events", definition)
            if filter_:
                self._write(f"events/{group}/{event}/filter", filter_)
            self._write(f"events/{group}/{event}/enable", "1")
            return True
        except OSError as exc:
            self.notes[note] = f"{failure} ({exc.strerror})"
            return False

    def _remove_rearm_probe(self):
        for group, event in (NAPI_PTR_EVENT, REARM_EVENT):
            if os.path.exists(self._path(f"events/{group}/{event}")):
                self._write(f"events/{group}/{event}/enable", "0")
                self._append("kprobe_events", f"-:{group}/{event}")

    def _add_napi_ptr_probe(self):
        """The probe that pairs a suspension event's NAPI ID with the
        NAPI's address (parse_trace()); False, with a note, where the
        kernel cannot: then polls and re-arms are placed in a suspension
        only where one NAPI suspends."""
        return self._add_probe(NAPI_PTR_EVENT, self.NAPI_PTR_PROBE, None, "napi_ids",
                               "no probe pairing NAPI addresses and IDs")

    def probe_missed(self, event):
        """How many hits the kprobe EVENT (REARM_EVENT's or NAPI_PTR_EVENT's
        name) missed since it was created (kprobe_profile's nmissed: no
        free return instance, or a probe hit inside another), None if
        unreadable."""
        try:
            for line in self._read("kprobe_profile").splitlines():
                fields = line.split()
                if len(fields) == 3 and fields[0] == event:
                    return int(fields[2])
        except (OSError, ValueError):
            pass
        return None

    def probe_misses(self):
        """{event: probe_missed()} of the kprobes in use."""
        used = ((REARM_EVENT[1], self.rearm_probe), (NAPI_PTR_EVENT[1], self.napi_ptr_probe))
        return {event: self.probe_missed(event) for event, on in used if on}

    def probes_missed(self):
        """{event: hits missed since reset(), None if unknown} of the
        kprobes in use."""
        before = self.missed_at_reset
        return {event: None if now is None or before.get(event) is None else now - before[event]
                for event, now in self.probe_misses().items()}

    def _path(self, name):
        return os.path.join(self.TRACING, name)

    def _write(self, name, text):
        with open(self._path(name), "w") as f:
            f.write(f"{text}\n")

    def _append(self, name, text):
        # Not open(..., "a"): Python seeks to the end, which tracefs refuses.
        fd = os.open(self._path(name), os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, f"{text}\n".encode())
        finally:
            os.close(fd)

    def _read(self, name):
        with open(self._path(name)) as f:
            return f.read()

    def reset(self):
        if self.enabled:
            self._write("trace", "")
        self.missed_at_reset = self.probe_misses()

    def overrun(self):
        """Events lost since the last reset (the buffer wrapped)."""
        lost = 0
        for stats in glob.glob(self._path("per_cpu/cpu*/stats")):
            with open(stats) as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key.strip() in ("overrun", "dropped events"):
                        lost += int(value)
        return lost

    def window(self, t0, t1):
        """(events of the window [T0, T1] or None, notes): read after the
        cell, when the timing no longer matters."""
        notes = dict(self.notes)
        if "napi_poll" not in self.enabled:
            return None, notes
        try:
            lost = self.overrun()
            with open(self._path("trace")) as f:
                events = parse_trace(f, t0, t1)
        except (OSError, ValueError) as exc:
            notes["polls"] = notes["suspension"] = f"trace buffer unreadable: {exc}"
            return None, notes
        if lost:
            notes["polls"] = notes["suspension"] = notes["rearms"] = \
                f"trace buffer overran ({lost} events lost): raise buffer_size_kb"
            return None, notes
        missed = self.probes_missed()
        if not self.rearm_probe:
            events["rearms"] = None
        else:
            # A missed return is a re-arm not counted, perhaps one while
            # suspended: no count then, rather than a low one.
            why = missed_note(missed[REARM_EVENT[1]], "the re-arm probe", "returns")
            if why:
                events["rearms"], notes["rearms"] = None, why
        if self.napi_ptr_probe:
            # A missed address lets a suspension event pair with an older
            # one on its CPU: no pair is trusted then.
            why = missed_note(missed[NAPI_PTR_EVENT[1]], "the NAPI address probe", "hits")
            if why:
                events["napi_ids"], notes["napi_ids"] = {}, why
        for event, key in (("irq_handler_entry", "irq_counts"), ("softirq_entry", "net_rx")):
            if event not in self.counting:
                events[key] = None
        return events, notes

    def close(self):
        for event in self.enabled:
            path = f"events/napi/{event}"
            try:
                self._write(f"{path}/enable", "0")
                self._write(f"{path}/filter", "0")
            except OSError:
                pass    # tearing down: the next pair sets its own filter
        self.enabled = []
        for event in self.counting:
            try:
                self._write(f"events/irq/{event}/enable", "0")
                self._write(f"events/irq/{event}/filter", "0")
            except OSError:
                pass
        self.counting = []
        if self.rearm_probe:
            try:
                self._remove_rearm_probe()
                self._write("options/hash-ptr", "1")
            except OSError:
                pass    # the next pair removes it first
            self.rearm_probe = self.napi_ptr_probe = False


# --- loss accounting -----------------------------------------------------------

SNMP_COUNTERS = {("Udp", "RcvbufErrors"): "udp_rcvbuf_errors", ("Udp", "InErrors"): "udp_in_errors",
                 ("Udp", "NoPorts"): "udp_no_ports", ("Udp", "SndbufErrors"): "udp_sndbuf_errors",
                 ("Tcp", "RetransSegs"): "tcp_retrans_segs"}


def netns_loss_counters(netns_name, ifname):
    """Where packets die inside one namespace: its UDP/TCP MIB counters
    and its device's drop counters (/proc/net/dev: RX drops; netdevsim
    counts a full peer RX queue as a TX drop of the sender)."""
    out = {}
    with netns(netns_name):
        with open("/proc/thread-self/net/snmp") as f:
            rows = [line.split() for line in f]
        for head, vals in zip(rows[::2], rows[1::2]):
            for (proto, name), key in SNMP_COUNTERS.items():
                if head[0] == f"{proto}:" and name in head:
                    out[key] = int(vals[head.index(name)])
        with open("/proc/thread-self/net/dev") as f:
            for line in f:
                dev, _, stats = line.partition(":")
                if dev.strip() == ifname:
                    fields = stats.split()
                    out["rx_drops"], out["tx_drops"] = int(fields[3]), int(fields[11])
    return out


def loss_snapshot(pair):
    """Loss counters of both sides; a side we cannot read (the peer of
    two real machines) maps to why."""
    snap = {}
    for side, role in ((NS_SUT, "sut"), (NS_PEER, "peer")):
        if pair.kind == "host" and side == NS_PEER and not pair.netns[side]:
            snap[role] = "the peer is another machine"
            continue
        try:
            snap[role] = netns_loss_counters(pair.netns[side], pair.ifname[side])
        except (OSError, ValueError, IndexError) as exc:
            snap[role] = f"unreadable: {exc}"
    return snap


def loss_delta(before, after):
    """{"sut": {counter: increase}, "peer": ...}; a side that could not be
    read keeps the reason as a string."""
    out = {}
    for role, a in after.items():
        b = before.get(role)
        if isinstance(a, str) or isinstance(b, str):
            out[role] = a if isinstance(a, str) else b
        else:
            out[role] = {k: v - b[k] for k, v in a.items() if k in b}
    return out


EDGE_COUNTS = ("ns", "sent", "served")


def window_edge(line):
    """The window edge a tool announced on LINE, None if it is no edge
    line. Both tools print bench/include/window.h's
    {"window": "start"|"end", "ns": N, "sent": S, "served": R}; this
    returns {"edge": "start"|"end", "ns": N, "sent": S, "served": R}, a
    field the line lacks None: an edge line of a tool built before
    window.h has no sent and served (napi_rr's "replies" is not read), and
    the harness falls back to the tool's own totals."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("window") not in ("start", "end"):
        return None
    return dict({k: msg.get(k) for k in EDGE_COUNTS}, edge=msg["window"])


class WindowedTool:
    """A client or load generator that prints a window_edge() line on
    stdout at each edge of its measured window (bench/rr/napi_rr.c,
    bench/memcached/mc_load.c). wait_edge() returns when the edge is
    seen, so that the caller snapshots its counters right then; stdout
    is read raw, not line-buffered, so select() sees every line. stderr
    goes to a file: the tool never blocks on it."""

    def __init__(self, argv):
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.stderr,
                                     bufsize=0)
        self.lines = []
        self.edges = {}         # "start"/"end": the first window_edge() of each
        self._partial = b""

    def _read(self, timeout):
        """Read what stdout has within TIMEOUT; False at EOF."""
        ready, _, _ = select.select([self.proc.stdout], [], [], max(timeout, 0))
        if not ready:
            return True
        data = os.read(self.proc.stdout.fileno(), 65536)
        if not data:
            return False
        *done, self._partial = (self._partial + data).split(b"\n")
        for line in done:
            self.lines.append(line.decode(errors="replace"))
            said = window_edge(self.lines[-1])
            if said:
                self.edges.setdefault(said["edge"], said)
        return True

    def wait_edge(self, edge, deadline):
        """What the tool said at EDGE (window_edge()) once it did, None if
        it exited or the monotonic DEADLINE passed first."""
        while edge not in self.edges:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                return None
        return self.edges[edge]

    def finish(self, timeout):
        """Wait for the tool's exit: (returncode, stdout, stderr); killed
        after TIMEOUT seconds (returncode None)."""
        deadline = time.monotonic() + timeout
        while self._read(deadline - time.monotonic()) and time.monotonic() < deadline:
            pass
        try:
            rc = self.proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        self.proc.stdout.close()
        self.stderr.seek(0)
        err = self.stderr.read()
        self.stderr.close()
        return rc, "\n".join(self.lines + [self._partial.decode(errors="replace")]), err


# bench/qemu-plugin/napi_insn.so's snapshots, written by the host's QEMU
# into the run's directory (guest-bench.sh sets it when the boot loaded
# the plugin); the tools enter its marker at their window edges.
INSN_LOG = os.environ.get("BENCH_INSN_LOG")


def insn_marks(path=None):
    """The marker snapshots napi_insn.so wrote so far, oldest first; None
    without the plugin. A last line without its newline is half written."""
    path = path or INSN_LOG
    if not path:
        return None
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    marks = []
    for line in text.split("\n")[:-1]:
        try:
            snap = json.loads(line)
        except ValueError:
            continue
        if isinstance(snap, dict) and "mark" in snap:
            marks.append(snap)
    return marks


def insn_per_exchange(marks, exchanges):
    """Instructions executed per exchange in each NAPI core function on
    every vCPU between a window's two MARKS: ({function: n}, None), or
    (None, why) when the window does not have exactly its two marks.
    Every vCPU, not the SUT's: QEMU's plugin numbers the vCPUs in an
    order of its own (the tool's marks came from index 4, 3 and 2 in
    three boots, from guest CPU 0 or 3) and a mark entered from each CPU
    in turn named one index for all, so no index can be taken for a
    guest CPU. Both ends of the pair run the kernel under test: the sum
    is the NAPI core's work for a request and its reply."""
    if len(marks) != 2:
        return None, f"{len(marks)} instruction-counter marks in the window, 2 expected"
    if not exchanges:
        return None, "no exchange in the window"
    before, after = (m["insns"] for m in marks)
    # A function's clones and .cold part are ranges of their own: one sum.
    by_function = defaultdict(int)
    for symbol, n in after.items():
        by_function[insn_ranges.logical_name(symbol)] += sum(n) - sum(before.get(symbol, []))
    return {fn: round(n / exchanges, 1) for fn, n in by_function.items()}, None


def conclude(result, path):
    """Write RESULT (a dict with "ok") to PATH, print it as the caller's
    last stdout line and return the exit code it stands for."""
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result))
    return 0 if result["ok"] else 1


def run_windowed(argv, irq_regex, timeout, extra=None, perf=None):
    """Run a WindowedTool and snapshot the counters at its window's
    edges (EXTRA() adds the caller's own, e.g. a process's CPU time;
    PERF, a perf_stat.PerfStat, is enabled at the start edge and
    disabled at the end edge):
    {"rc", "stdout", "stderr", "before", "after"}; the snapshots are None
    when the tool exited or hung before announcing the edge. Each holds
    what the tool said at its edge: "tool_time" (CLOCK_MONOTONIC of the
    edge itself, not when we got to read it), "tool_sent", "tool_served"
    (None when the line lacks them)."""
    marks_before = insn_marks()
    tool = WindowedTool(argv)
    deadline = time.monotonic() + timeout
    edges = {"before": None, "after": None}
    for edge, key in (("start", "before"), ("end", "after")):
        said = tool.wait_edge(edge, deadline)
        if not said:
            break
        if perf and edge == "end":
            perf.disable()
        edges[key] = snapshot(irq_regex)
        if perf and edge == "start":
            perf.enable()
        edges[key]["tool_time"] = said["ns"] / 1e9 if said["ns"] is not None else None
        edges[key]["tool_sent"] = said["sent"]
        edges[key]["tool_served"] = said["served"]
        if extra:
            try:
                edges[key]["extra"] = extra()
            except (OSError, ValueError, IndexError):
                edges[key]["extra"] = None      # the caller's process is gone
    rc, stdout, stderr = tool.finish(max(deadline - time.monotonic(), 1.0))
    marks = insn_marks()
    if marks is not None and marks_before is not None:
        marks = marks[len(marks_before):]
    return dict(edges, rc=rc, stdout=stdout, stderr=stderr, insn_marks=marks)


def tasks_cpu_ns(pids):
    """CPU time of the tasks PIDS together, in ns (schedstat)."""
    total = 0
    for pid in pids or ():
        with open(f"/proc/{pid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


def kthread_cpu_pct(run):
    """The NAPI kthreads' CPU time over a run_windowed() RUN's window, in
    % of one CPU, from the tasks_cpu_ns() extras at its edges; None when
    an edge has none."""
    edges = [run[k] for k in ("before", "after")]
    if None in [e and e.get("extra") for e in edges]:
        return None
    elapsed = edges[1]["time"] - edges[0]["time"]
    used = edges[1]["extra"] - edges[0]["extra"]
    return round(100.0 * used / (elapsed * 1e9), 1) if elapsed > 0 else None


def exit_text(rc):
    return "timed out" if rc is None else f"exit {rc}"


def brief(counts):
    """A few SUT figures per exchange for the progress line."""
    if not counts or not counts.get("sut"):
        return ""
    sut = counts["sut"]
    keys = ("rx_polls_softirq", "rx_polls_kthread", "rx_polls_app", "rx_irqs", "suspended_frac")
    return "sut/x: " + " ".join(f"{k.replace('rx_', '')}={sut[k]}" for k in keys
                                if sut.get(k) is not None)


def tool_difference(run, count):
    """What the tool counted between the edges of a run_windowed() RUN:
    COUNT "sent" or "served"; None unless both edges carry it."""
    values = [run[k].get(f"tool_{count}") for k in ("before", "after")]
    return None if None in values else values[1] - values[0]


def perf_counter(wanted, cpus):
    """A perf_stat.PerfStat over CPUS (cpu_set() names) for run_windowed()
    when WANTED (--perf-stat), else a context that counts nothing (None)."""
    if not wanted:
        return contextlib.nullcontext()
    return perf_stat.PerfStat(",".join(str(c).removeprefix("cpu") for c in cpus))


# An edge line is read after the tool printed it, seconds later at
# worst: a tool's edge later than our read, or earlier by more than
# this, is on another clock than the trace's.
MAX_EDGE_LAG_S = 5.0
EDGE_CLOCK_SLACK_S = 0.001


def shares_clock(pair, side):
    """Whether a tool on SIDE of PAIR reads the SUT's CLOCK_MONOTONIC:
    not on a peer that is another machine."""
    return side == NS_SUT or pair.kind != "host" or bool(pair.netns.get(side))


def trace_window(run, same_clock=True):
    """(t0, t1, why, offset) of a run_windowed() RUN on the SUT's
    CLOCK_MONOTONIC, the trace clock: the tool's own edge times where
    they are on it (SAME_CLOCK, and each edge at most MAX_EDGE_LAG_S
    before we read it), a peer's moved onto it by the OFFSET measured at
    our reads (peer_window()), else the times we read the edge lines, WHY
    saying so (None when the tool gave no times: nothing to check)."""
    reads = [run[k]["time"] for k in ("before", "after")]
    said = [run[k].get("tool_time") for k in ("before", "after")]
    if None in said:
        return (*reads, None, None)
    if not same_clock:
        return peer_window(reads, said)
    lags = [r - t for r, t in zip(reads, said)]
    if not all(-EDGE_CLOCK_SLACK_S <= lag <= MAX_EDGE_LAG_S for lag in lags):
        return (*reads, f"the tool's edges are {lags[0]:.3f} s and {lags[1]:.3f} s before the "
                        "harness read them: not the SUT's clock, trace cut at the reads", None)
    return (*said, None, None)


def peer_window(reads, said):
    """trace_window() of a tool on another machine's clock: its edges
    SAID moved by the offset between the clocks, measured where we READ
    them (the smaller lag: a line is read after its edge, never before).
    Whatever the peer's clock reads, the window is the tool's. Lags that
    differ by more than WINDOW_TOLERANCE of the window leave no one
    offset to trust: cut at the reads, WHY saying so."""
    lags = [r - t for r, t in zip(reads, said)]
    offset, apart = min(lags), max(lags) - min(lags)
    if said[1] <= said[0] or apart > WINDOW_TOLERANCE * (said[1] - said[0]):
        return (*reads, f"the peer's edges reached the harness {apart:.3f} s apart from one "
                        f"offset over a {said[1] - said[0]:.3f} s window: no one offset places "
                        "them on the SUT's clock, trace cut at the reads", offset)
    return said[0] + offset, said[1] + offset, None, offset


def irq_affinity_problem(sut, peer, sut_cpus):
    """Why the SUT's counts on SUT_CPUS are not the SUT device's alone,
    or None: one of its vectors (SUT: {name: effective CPU list}) is
    delivered elsewhere, or one of the peer's (PEER) on one of them, or
    a vector's affinity could not be read (None): unknown is no pass."""
    mine = {int(c.removeprefix("cpu")) for c in sut_cpus}
    found = []
    for side, vectors in (("SUT", sut), ("peer", peer)):
        found += [f"{side} vector {name}: effective affinity unreadable"
                  for name, cpus in vectors.items() if not cpus]
    for name, cpus in sut.items():
        if cpus and not set(cpu_numbers(cpus)) <= mine:
            found.append(f"SUT vector {name} on CPU {cpus}, outside the SUT's CPUs")
    for name, cpus in peer.items():
        if cpus and set(cpu_numbers(cpus)) & mine:
            found.append(f"peer vector {name} on CPU {cpus}, one of the SUT's")
    return "; ".join(found) or None


def measured_counts(run, pair, probes, tool_total, sut_cpus, kthread_pids=(), perf=None,
                    tool_side=NS_SUT):
    """The window's counters of a run_windowed() RUN per exchange, with
    the trace events cut to the window; None fields say why in
    "not_measured". PERF (the run's perf_stat.PerfStat) adds "perf":
    cycles and instructions per exchange, or why they were not counted. An exchange is a request served in the window (the
    difference of the tool's served counts at its edges); TOOL_TOTAL,
    the tool's own count of measured requests, stands in when an edge
    line carries no served count. TOOL_SIDE: where the tool ran."""
    if not run["before"] or not run["after"]:
        return {"exchanges": tool_total, "exchanges_from": "tool total", "sut": {},
                "system": {}, "not_measured": {"all": "the tool announced no measured window"}}
    # The trace is cut at the tool's own edges where they are on the
    # trace's clock: our snapshots come when we get to read its lines,
    # later at one edge than at the other under load, which shifted a 2 s
    # window's polls by about 1 %. /proc counters can only be read when
    # we get there.
    same_clock = shares_clock(pair, tool_side)
    t0, t1, clock_problem, offset = trace_window(run, same_clock)
    events, notes = probes.window(t0, t1)
    sent, served = tool_difference(run, "sent"), tool_difference(run, "served")
    exchanges = tool_total if served is None else served
    if pair.irq_note:
        notes.setdefault("irqs", pair.irq_note)
    if served == 0:
        notes.setdefault("exchanges", "no request served in the window")
    counts = window_counts(run["before"], run["after"], exchanges, sut_cpus, events,
                           kthread_pids, notes)
    counts["sut"]["kthread_cpu_pct"] = kthread_cpu_pct(run) if kthread_pids else None
    if run.get("insn_marks") is not None:
        by_function, why = insn_per_exchange(run["insn_marks"], exchanges)
        counts["napi_core_insns_by_function"] = by_function
        counts["sut"]["napi_core_insns"] = round(sum(by_function.values()), 1) if by_function else None
        if why:
            counts["not_measured"].setdefault("napi_core_insns", why)
    if not kthread_pids:
        counts["not_measured"].setdefault("kthread_cpu", "no NAPI kthread in this mode")
    counts["exchanges_from"] = "tool total" if served is None else "served in window"
    counts["trace_window_s"] = round(t1 - t0, 3)
    if perf:
        counts["perf"] = dict(perf.result(exchanges), cpus=perf.cpus)
        # perf is switched when the harness reads the edge lines, not at
        # the edges themselves: say so where that matters.
        perf_window = counts["perf"].get("window_s")
        if perf_window and counts["trace_window_s"] and \
                abs(perf_window / counts["trace_window_s"] - 1) > WINDOW_TOLERANCE:
            counts["perf"]["window_mismatch"] = (f"perf counted over {perf_window} s, the tool's "
                                                 f"window is {counts['trace_window_s']} s")
    # The offered load of the window, and what the application received
    # in it: with the RX packets polled, it tells a receiver that fell
    # behind.
    counts["sent_in_window"] = sent
    counts["served_in_window"] = served
    sut_affinity, peer_affinity = irq_affinity(pair.irq_regex), irq_affinity(pair.peer_irq_regex)
    counts["irq_affinity"] = {**sut_affinity, **peer_affinity}
    problem = irq_affinity_problem(sut_affinity, peer_affinity, sut_cpus)
    if problem:
        counts["irq_affinity_problem"] = problem
    if offset is not None:
        counts["peer_clock_offset_s"] = round(offset, 6)
        counts["window_clock"] = ("the tool runs on the peer's clock: its edges moved onto the "
                                  "SUT's by the offset measured where the harness read them")
    if clock_problem:
        # The trace is cut at our reads: not the window the tool counted.
        counts["clock_mismatch"] = clock_problem
    if counts["window_s"] and abs(counts["trace_window_s"] / counts["window_s"] - 1) > WINDOW_TOLERANCE:
        counts["window_mismatch"] = (f"/proc counts over {counts['window_s']} s, trace over "
                                     f"{counts['trace_window_s']} s")
    return counts


# The /proc snapshots and the trace cut may cover windows this far apart
# (relative) before a cell is flagged.
WINDOW_TOLERANCE = 0.005


def irq_affinity(irq_regex):
    """{vector name: the CPUs it is effectively delivered to} of the
    device whose vectors IRQ_REGEX names."""
    found = {}
    for irq, name, _ in interrupt_lines(irq_regex):
        try:
            found[name] = read_text(f"/proc/irq/{irq}/effective_affinity_list")
        except OSError:
            found[name] = None
    return found


def machine_info():
    info = {"kernel": os.uname().release, "vcpus": os.cpu_count()}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    info["cmdline"] = read_text("/proc/cmdline")
    return info
