# SPDX-License-Identifier: GPL-2.0
"""Cycles and instructions per query on the SUT's CPUs (seed 001's cpq and
ipq), from `perf stat` enabled and disabled through its control FIFO at
a tool's window edges (benchlib.run_windowed()).

A figure that perf could not count (no perf, no PMU: QEMU TCG has none,
or perf refused) is reported as not counted with the reason, never as 0.
Python standard library only: it runs in the guest and on real hosts.
"""

import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time

EVENTS = ("cycles", "instructions")
# perf writes these notices into its output file, on the counts' lines.
NOTICE = re.compile(r"Events (enabled|disabled)")
NOT_COUNTED = ("<not supported>", "<not counted>")


def base_event(name):
    """'cycles' for 'cycles', 'cycles:u' or a hybrid PMU's 'cpu_core/cycles/'."""
    name = name.split(":", 1)[0]
    if "/" in name:
        name = name.strip("/").split("/")[-1]
    return name


def parse_csv(text):
    """perf stat -x, output: {event: count or None}; None when perf printed
    <not supported> or <not counted>. Counts of one event from several PMUs
    (hybrid CPUs: cpu_core and cpu_atom) add up."""
    counts = {}
    for line in NOTICE.sub("", text).splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3 or not fields[2]:
            continue
        event, value = base_event(fields[2]), fields[0].strip()
        if value in NOT_COUNTED:
            counts.setdefault(event, None)
            continue
        try:
            number = int(float(value))
        except ValueError:
            continue
        counts[event] = (counts.get(event) or 0) + number
    return counts


def per_query(counts, queries, reason=None):
    """The figures of one window: {"cycles": n, "instructions": n, "cpq":
    x, "ipq": x} for what perf counted; an event it did not count and the
    per-query figures that need it are absent, "not_counted" says why."""
    out = {}
    why = {}
    if reason:
        return {"not_counted": {e: reason for e in EVENTS}}
    for event, key in zip(EVENTS, ("cpq", "ipq")):
        value = counts.get(event)
        if value is None:
            why[event] = ("perf printed <not supported> or <not counted> (no PMU?)"
                          if event in counts else "perf printed no count")
            continue
        out[event] = value
        if queries:
            out[key] = round(value / queries)
        else:
            why[key] = "no query served in the window"
    if why:
        out["not_counted"] = why
    return out


class PerfStat:
    """perf stat over CPUS (a taskset list), started disabled; enable()
    and disable() at the window's edges, result(queries) at the end.
    Every failure turns into a reason, never an exception: the benchmark
    cell stands without these figures."""

    def __init__(self, cpus, perf="perf", timeout=10.0):
        self.cpus, self.perf, self.timeout = cpus, perf, timeout
        self.reason = None
        self.proc = None
        self.ctl = self.ack = None
        self.acked = {}         # "enable"/"disable": time.monotonic() of perf's ack
        self.dir = tempfile.mkdtemp(prefix="perf-stat-")
        self.out = os.path.join(self.dir, "stat.csv")

    def __enter__(self):
        if not shutil.which(self.perf):
            self.reason = f"{self.perf} not installed"
            return self
        ctl, ack = (os.path.join(self.dir, n) for n in ("ctl", "ack"))
        os.mkfifo(ctl)
        os.mkfifo(ack)
        # Without a command perf counts until SIGINT; -D -1 starts it
        # disabled, so only the window between the edges counts.
        self.proc = subprocess.Popen(
            [self.perf, "stat", "-x,", "-e", ",".join(EVENTS), "-a", "-C", self.cpus,
             "-D", "-1", "--control", f"fifo:{ctl},{ack}", "-o", self.out],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # Opened before perf writes to it, so that no ack is lost.
        self.ack = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
        deadline = time.monotonic() + self.timeout
        while self.ctl is None:
            try:
                # Fails with ENXIO until perf has opened its end.
                self.ctl = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self._fail("perf stat did not open its control FIFO")
                    break
                time.sleep(0.01)
        return self

    def _fail(self, why):
        if self.reason is None:
            err = ""
            if self.proc and self.proc.poll() is not None:
                err = self.proc.stderr.read().strip()
            self.reason = f"{why}: {err}" if err else why

    def _command(self, word):
        """Send WORD to perf and wait for its ack."""
        if self.reason or self.ctl is None:
            return
        try:
            os.write(self.ctl, f"{word}\n".encode())
        except OSError as exc:
            self._fail(f"perf stat control FIFO: {exc}")
            return
        got = b""
        deadline = time.monotonic() + self.timeout
        while b"ack" not in got:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.ack], [], [], max(left, 0))
            if not ready:
                self._fail(f"perf stat did not acknowledge {word}")
                return
            got += os.read(self.ack, 64)
        self.acked[word] = time.monotonic()

    def enable(self):
        self._command("enable")

    def disable(self):
        self._command("disable")

    def result(self, queries):
        """Stop perf and return per_query() of what it counted."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._fail("perf stat did not stop")
        counts = {}
        if not self.reason:
            try:
                with open(self.out) as f:
                    counts = parse_csv(f.read())
            except OSError as exc:
                self._fail(f"no perf stat output: {exc}")
        out = per_query(counts, queries, self.reason)
        if not self.reason and len(self.acked) == 2:
            # What perf counted over, to compare with the tool's window.
            out["window_s"] = round(self.acked["disable"] - self.acked["enable"], 3)
        return out

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.ctl, self.ack):
            if fd is not None:
                os.close(fd)
        shutil.rmtree(self.dir, ignore_errors=True)
