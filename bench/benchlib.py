# SPDX-License-Identifier: GPL-2.0
"""Guest-side helpers shared by the benchmarks: the device pair under test,
NAPI mode set-up and the per-cell system counters.

The client side (namespace nsA) is the system under test: modes are
applied to its device, its NAPIs and its process. The peer in nsB is a
plain interrupt-driven reflector or load generator.
"""

import ctypes
import glob
import json
import os
import re
import subprocess
import sys
import time

NS_SUT, NS_PEER = "nsA", "nsB"
ADDR_SUT, ADDR_PEER = "192.0.2.1", "192.0.2.2"
# CPU layout (seed 000 keeps the application, the NAPI kthread/IRQs and
# the peer apart): the SUT application and its sender thread, the SUT
# NAPI kthread and IRQs, the peer. Needs 4 CPUs; override per machine.
CPU_APP = os.environ.get("BENCH_CPU_APP", "0,3")
CPU_NAPI = os.environ.get("BENCH_CPU_NAPI", "1")
CPU_PEER = os.environ.get("BENCH_CPU_PEER", "2")


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
        self.irq_names = []      # /proc/interrupts names of the SUT device
        self.nics = []
        self._macs = {}

    def wrap(self, side, argv):
        return ["ip", "netns", "exec", self.netns[side]] + list(argv)

    def link(self, side):
        out = sh(*self.wrap(side, ["ip", "-j", "link", "show", self.ifname[side]]))
        return json.loads(out)[0]

    def ifindex(self, side):
        return self.link(side)["ifindex"]

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

    @staticmethod
    def virtio_nics():
        """The virtio-net devices in init_net, ordered by MAC address."""
        udev_settle()
        nics = []
        for dev in os.listdir("/sys/class/net"):
            driver = f"/sys/class/net/{dev}/device/driver"
            if os.path.exists(driver) and os.path.basename(os.readlink(driver)) == "virtio_net":
                with open(f"/sys/class/net/{dev}/address") as f:
                    nics.append((f.read().strip(), dev))
        return [dev for _, dev in sorted(nics)]

    def setup(self):
        nics = self.virtio_nics()
        if len(nics) < 2:
            raise RuntimeError(f"need two virtio-net NICs, found {nics}: "
                               "boot the VM with --network loop")
        self.nics = nics[:2]
        for dev, ns in zip(self.nics, (NS_SUT, NS_PEER)):
            if ns == NS_SUT:
                virtio = os.path.basename(os.readlink(f"/sys/class/net/{dev}/device"))
                self.irq_names = [f"{virtio}-input", f"{virtio}-output"]
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "dev", dev, "netns", ns)
            self.ifname[ns] = dev
        self._address()

    def teardown(self):
        # Hand the NICs back before deleting the namespaces: the implicit
        # return happens in the asynchronous netns cleanup, seconds later.
        for side, dev in self.ifname.items():
            sh("ip", "-n", self.netns[side], "link", "set", "dev", dev, "netns", "1",
               check=False)
        super().teardown()
        busywait(lambda: all(os.path.exists(f"/sys/class/net/{d}") for d in self.nics),
                 10, "the virtio NICs back in init_net")


class HostPair(Pair):
    """Two real machines: this one is the SUT (interface NETIF, address
    BENCH_SUT_ADDR), the peer BENCH_PEER_ADDR is reached over ssh
    (BENCH_PEER_SSH=user@host) to start the reflector, with the same
    checkout at the same path there (or BENCH_PEER_NAPI_RR)."""

    kind = "host"

    def setup(self):
        try:
            self.ifname = {NS_SUT: os.environ["NETIF"],
                           NS_PEER: os.environ.get("BENCH_PEER_NETIF", os.environ["NETIF"])}
            self.addr = {NS_SUT: os.environ["BENCH_SUT_ADDR"],
                         NS_PEER: os.environ["BENCH_PEER_ADDR"]}
            self.ssh = os.environ["BENCH_PEER_SSH"]
        except KeyError as exc:
            raise RuntimeError(f"real machines need {exc.args[0]} set (see README.md)")
        self.netns = {NS_SUT: None, NS_PEER: None}
        self.irq_names = [f"{self.ifname[NS_SUT]}-"]
        sh("ping", "-c1", "-W1", self.addr[NS_PEER])

    def wrap(self, side, argv):
        if side == NS_SUT:
            return list(argv)
        return ["ssh", self.ssh] + list(argv)

    def mac(self, side):
        if side == NS_SUT:
            return super().mac(side)
        out = sh("ip", "-j", "neigh", "show", self.addr[NS_PEER])
        return json.loads(out)[0]["lladdr"]

    def teardown(self):
        pass


PAIRS = {"netdevsim": NsimPair, "virtio": VirtioPair, "host": HostPair}


class Modes:
    """NAPI set-up of the SUT device for a named mode (see MODES)."""

    def __init__(self, pair, ynl):
        self.pair, self.ynl = pair, ynl
        self.ifindex = pair.ifindex(NS_SUT)
        ynl.forget()
        self.has_napi_set = ynl.has_op(pair.netns[NS_SUT], "napi-set")
        self.napi_polls = NapiPollCounter(pair.ifname[NS_SUT])
        self._napi_ids = None
        self.state = {}     # unknown at first: the first apply() writes all

    def sysfs(self, attr, value):
        write(f"/sys/class/net/{self.pair.ifname[NS_SUT]}/{attr}", value,
              ns=self.pair.netns[NS_SUT])

    def napi_ids(self):
        # Stable: the benchmarks never change the queue count.
        if self._napi_ids is None:
            napis = self.ynl.napis(self.pair.netns[NS_SUT], self.ifindex)
            self._napi_ids = [n["id"] for n in napis]
        return self._napi_ids

    def napi_set(self, **attrs):
        if not self.has_napi_set:
            raise RuntimeError("kernel has no napi-set (unpatched base?)")
        for napi_id in self.napi_ids():
            body = {"id": napi_id}
            body.update({k.replace("_", "-"): v for k, v in attrs.items()})
            self.ynl.call(self.pair.netns[NS_SUT], "napi-set", "do", body)

    def apply(self, defer=0, gro=0, busy_read=0, busy_poll=0, threaded="disabled",
              irq_suspend=0):
        """Device-wide defer/gro through sysfs (works on the base kernel
        too), threaded mode and irq-suspend-timeout per NAPI via napi-set;
        only what differs from the previous mode is written (the YNL CLI
        takes seconds under TCG). Returns the PIDs of busy-poll kthreads,
        pinned to CPU_NAPI and SCHED_FIFO as in the seed's set-up."""
        want = {"busy_read": busy_read, "busy_poll": busy_poll, "defer": defer, "gro": gro,
                "threaded": threaded, "irq_suspend": irq_suspend}
        changed = {k: v for k, v in want.items() if self.state.get(k) != v}
        for key in ("busy_read", "busy_poll"):
            if key in changed:
                write(f"/proc/sys/net/core/{key}", changed[key])
        if "defer" in changed:
            self.sysfs("napi_defer_hard_irqs", defer)
        if "gro" in changed:
            self.sysfs("gro_flush_timeout", gro)
        napi_attrs = {}
        if "threaded" in changed:
            napi_attrs["threaded"] = threaded
        if "irq_suspend" in changed and self.has_napi_set:
            napi_attrs["irq_suspend_timeout"] = irq_suspend
        if napi_attrs and self.has_napi_set:
            self.napi_set(**napi_attrs)
        elif "threaded" in changed:
            self.sysfs("threaded", {"disabled": 0, "enabled": 1, "busy-poll": 2}[threaded])
        self.state = want
        pids = []
        if threaded == "busy-poll":
            napis = self.ynl.napis(self.pair.netns[NS_SUT], self.ifindex)
            pids = [n["pid"] for n in napis if "pid" in n]
            for pid in pids:
                sh("taskset", "-pc", CPU_NAPI, str(pid))
                sh("chrt", "-f", "-p", "50", str(pid))
        self.pin_irqs(CPU_NAPI)
        return pids

    def pin_irqs(self, cpu):
        for irq in device_irqs(self.pair.irq_names):
            write(f"/proc/irq/{irq}/smp_affinity_list", cpu)

    def reset(self):
        self.state = {}
        self.apply()
        self.napi_polls.close()


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


def device_irqs(names):
    """{irq: total count over all CPUs} of the /proc/interrupts lines
    whose name starts with one of NAMES (the device under test)."""
    irqs = {}
    with open("/proc/interrupts") as f:
        for line in f:
            fields = line.split()
            if fields and fields[0].rstrip(":").isdigit() and \
                    any(fields[-1].startswith(n) for n in names):
                irqs[int(fields[0].rstrip(":"))] = sum(int(v) for v in fields[1:] if v.isdigit())
    return irqs


def counters(irq_names):
    """Snapshot of the per-CPU and per-device counters a cell reports."""
    snap = {"time": time.monotonic(), "cpu": {}, "net_rx": []}
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
        for line in f:
            if line.strip().startswith("NET_RX:"):
                snap["net_rx"] = [int(v) for v in line.split()[1:]]
    snap["dev_irqs"] = sum(device_irqs(irq_names).values())
    return snap


def counter_delta(before, after, requests):
    """Per-cell counters: CPU use per CPU (%), and per request the NET_RX
    softirqs, device interrupts, context switches and NAPI polls."""
    per = max(requests, 1)
    cpu = {}
    for name, a in after["cpu"].items():
        b = before["cpu"][name]
        total = a["total"] - b["total"]
        cpu[name] = round(100.0 * (a["busy"] - b["busy"]) / total, 1) if total else 0.0
    return {
        "seconds": round(after["time"] - before["time"], 3),
        "cpu_busy_pct": cpu,
        "net_rx_softirqs_per_req": round((sum(after["net_rx"]) - sum(before["net_rx"])) / per, 3),
        "dev_irqs_per_req": round((after["dev_irqs"] - before["dev_irqs"]) / per, 3),
        "ctx_switches_per_req": round((after["ctxt"] - before["ctxt"]) / per, 3),
    }


class NapiPollCounter:
    """Counts napi:napi_poll events of one device from the trace ring
    buffer's per-CPU statistics (entries + overrun since the last reset):
    no reader process, and the event stays enabled for the whole run so
    its static key is patched once, not per cell. count() is None where
    tracefs or the event is missing."""

    TRACING = "/sys/kernel/tracing"

    def __init__(self, dev_name):
        self.event = f"{self.TRACING}/events/napi/napi_poll"
        self.ok = os.path.exists(f"{self.event}/enable")
        if self.ok:
            self._write(f"{self.event}/filter", f'dev_name == "{dev_name}"')
            self._write(f"{self.event}/enable", "1")

    @staticmethod
    def _write(path, text):
        with open(path, "w") as f:
            f.write(text + "\n")

    def reset(self):
        if self.ok:
            self._write(f"{self.TRACING}/trace", "")

    def count(self):
        if not self.ok:
            return None
        total = 0
        for stats in glob.glob(f"{self.TRACING}/per_cpu/cpu*/stats"):
            with open(stats) as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key in ("entries", "overrun"):
                        total += int(value)
        return total

    def close(self):
        if self.ok:
            self._write(f"{self.event}/enable", "0")
            self._write(f"{self.event}/filter", "0")


def machine_info():
    info = {"kernel": os.uname().release, "vcpus": os.cpu_count()}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    with open("/proc/cmdline") as f:
        info["cmdline"] = f.read().strip()
    return info
