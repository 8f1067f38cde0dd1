#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0

"""tools/napi-irq-suspend.bt, the bpftrace script we ship, against the
tracepoints it reads: during an IRQ-suspension workload (an epoll
receiver with prefer_busy_poll on NAPIs with irq-suspend-timeout set),
its per-NAPI suspend counts and end reasons equal what a trace instance
recorded of the same events over the same window, and each histogram
holds one sample per suspension the script saw end. A BPF program does
not run for an event that fires while another one runs on the CPU (a
timer's resume in hard IRQ context, under KASAN's slowness): the kernel
counts those misses, and the script may then be short by that many.

Installed by workbench/vm/ksft-install.sh beside the drivers/net selftests,
whose library it uses; runs on netdevsim or on a NIC given by NETIF.
"""

import os
import re
import signal
import subprocess
import time
from collections import Counter

from lib.py import ksft_run, ksft_exit, ksft_pr
from lib.py import ksft_eq, ksft_ge, ksft_busy_wait
from lib.py import KsftSkipEx, NetDrvEpEnv, NetdevFamily, NapiTrace, VerifiedStream
from lib.py import defer, keep_napi_settings, napi_irq_reasons, rx_napis

BT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "napi-irq-suspend.bt")
STREAM_BYTES = 64 << 20
EXIT_LIMIT = 300    # s


def _start_bpftrace():
    proc = subprocess.Popen(["bpftrace", BT], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    defer(lambda: proc.poll() is None and proc.kill())
    first = proc.stdout.readline()      # "Attaching N probes..." once live
    if not first.startswith("Attaching"):
        raise RuntimeError(f"bpftrace did not attach: {first}{proc.stdout.read()}")
    return proc


def _recursion_misses(pid):
    """Events the programs of process PID did not run for, because another
    BPF program was running on the CPU (fdinfo of its program fds)."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as fp:
                found = re.search(r"^recursion_misses:\s+(\d+)", fp.read(), re.M)
        except OSError:
            continue
        total += int(found[1]) if found else 0
    return total


def _kernel_stacks(pid):
    """Where each thread of process PID waits in the kernel."""
    stacks = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        try:
            with open(f"/proc/{pid}/task/{tid}/stack") as fp:
                stacks.append(f"thread {tid}:\n{fp.read()}")
        except OSError:
            continue
    return "".join(stacks)


def _stop_bpftrace(proc):
    """The maps bpftrace prints when interrupted. Its exit detaches the
    probes, which waits for RCU grace periods (tracepoints, the uprobes of
    BEGIN and END): slow under emulation, once over 120 s in CI. Its time
    is printed; past EXIT_LIMIT it hangs, and where it waits is shown."""
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=EXIT_LIMIT)
    except subprocess.TimeoutExpired:
        stacks = _kernel_stacks(proc.pid)
        # Blocked tasks and every CPU's backtrace into the kernel log.
        for request in "wl":
            with open("/proc/sysrq-trigger", "w") as fp:
                fp.write(request)
        raise RuntimeError(f"bpftrace did not exit on SIGINT:\n{stacks}") from None
    suspends, reasons, hist = Counter(), Counter(), Counter()
    current = None
    for line in out.splitlines():
        if m := re.match(r"@extensions\[(\d+)\]: (\d+)", line):
            suspends[int(m[1])] = int(m[2])
        elif m := re.match(r"@ended_by_reason\[(\d+), (\d+)\]: (\d+)", line):
            reasons[int(m[1]), int(m[2])] = int(m[3])
        elif m := re.match(r"@suspended_us\[(\d+)\]:", line):
            current = int(m[1])
        elif current is not None and (m := re.match(r"\[[^])]*[])]\s+(\d+)\s+\|", line)):
            hist[current] += int(m[1])
    return suspends, reasons, hist


def _from_trace(trace, numbers):
    """Suspend events by NAPI and resume events by NAPI and reason, from
    the trace instance's lines."""
    suspends, reasons = Counter(), Counter()
    event = re.compile(r"(napi_irq_suspend|napi_irq_resume): napi_id=(\d+) .* reason=([\w-]+)")
    for line in trace.lines():
        if not (m := event.search(line)):
            continue
        if m[1] == "napi_irq_suspend":
            suspends[int(m[2])] += 1
        else:
            reasons[int(m[2]), numbers[m[3]]] += 1
    return suspends, reasons


def _check_counts(name, got, want, misses):
    """GOT from the script against WANT from the trace: equal, or short by
    at most the events the script's programs missed."""
    if not misses:
        ksft_eq(dict(got), dict(want), f"script's {name} against the trace")
        return
    ksft_eq([k for k in got if got[k] > want[k]], [], f"script's {name} above the trace's")
    ksft_ge(misses, sum((want - got).values()), f"script's {name} short by more than its misses")


def bt_matches_tracepoints(cfg, nf) -> None:
    cfg.require_cmd("bpftrace")
    # The script's #define makes bpftrace run clang over the kernel's
    # headers (this kernel has no BTF): its build tree or the workbench's.
    if not (os.path.isdir(f"/lib/modules/{os.uname().release}/build")
            or os.environ.get("BPFTRACE_KERNEL_SOURCE")):
        raise KsftSkipEx("no kernel headers for bpftrace (BPFTRACE_KERNEL_SOURCE)")
    keep_napi_settings(nf, cfg.ifindex)
    for napi in rx_napis(nf, cfg.ifindex).values():
        nf.napi_set({"id": napi["id"], "defer-hard-irqs": 100,
                     "gro-flush-timeout": 50000, "irq-suspend-timeout": 20000000})
    trace = NapiTrace({"napi/napi_irq_suspend": "napi_id != 0",
                       "napi/napi_irq_resume": "napi_id != 0"})
    started = time.monotonic()
    bpftrace = _start_bpftrace()
    attached = time.monotonic()
    trace.clear()
    stream = VerifiedStream(cfg, receiver="epoll")
    ksft_busy_wait(lambda: stream.received >= STREAM_BYTES or stream.error, deadline=60,
                   comment="stream too slow")
    sent = stream.finish()
    ksft_eq((stream.error, stream.bad_offset, stream.received), (None, None, sent),
            "stream under suspension")

    misses = _recursion_misses(bpftrace.pid)
    streamed = time.monotonic()
    suspends, reasons, samples = _stop_bpftrace(bpftrace)
    ksft_pr(f"seconds: bpftrace attach {attached - started:.0f}, stream "
            f"{streamed - attached:.0f}, bpftrace exit {time.monotonic() - streamed:.0f}")
    traced = _from_trace(trace, napi_irq_reasons())
    ksft_pr(f"trace: suspends {dict(traced[0])}, resumes by reason {dict(traced[1])}; "
            f"script: histogram samples {dict(samples)}, missed events {misses}")
    ksft_ge(sum(traced[0].values()), 1, "no suspension in the workload")
    _check_counts("suspends", suspends, traced[0], misses)
    _check_counts("end reasons", reasons, traced[1], misses)
    for napi_id, count in samples.items():
        ended = sum(n for (nid, _), n in reasons.items() if nid == napi_id)
        ksft_ge(ended, count, f"NAPI {napi_id}: more histogram samples than resumes")
    ksft_eq(sorted(samples), sorted(suspends), "NAPIs with a histogram against suspended ones")


def main() -> None:
    with NetDrvEpEnv(__file__) as cfg:
        ksft_run([bt_matches_tracepoints], args=(cfg, NetdevFamily()))
    ksft_exit()


if __name__ == "__main__":
    main()
