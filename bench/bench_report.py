#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the JSON lines of the bench runs under DIR (run*/rr.jsonl,
run*/mc.jsonl) into seed-style markdown tables (DIR/bench.md), one JSON
summary (DIR/bench.json) and plots (DIR/*.png). bench.md opens with the
series' benchmark goals per device, judged on every planned repetition, never on a
median: "broken" (which repetition, why) if one is missing, failed, ran
in a boot whose guest did not finish or whose kernel splatted, recorded
no counters or did not serve its traffic (errors, timeouts, under 95 %
of the offered rate, load generator saturated), or a ratio's reference
is under 0.01 per request; else "missed" if every repetition misses a
criterion, "unresolved" if only some do or they spread wider than the
goal's tolerance, "not measured" (why), "pass (partial: ...)" if a
criterion does not apply to the device, and only then "pass". In the
tables every number is the median over the repetitions that produced
one, and says how many that is (n=ok/all); failed and missing
repetitions are listed, not dropped; spread is min..max. Counts
"per request/query" are over the measured window only (see
bench/benchlib.py); "SUT" counts are the system under test's device and
CPUs, "system-wide" ones everything. Exit 1 when a run has no usable
cell.
"""

import glob
import json
import math
import os
import statistics
import sys
from collections import defaultdict

import insn_ranges
import rr_grid
import seed_tables

PCTS = ("p5", "p50", "p95", "p99")
MAX_LOSS = 0.01         # no ratio where either side lost more
SERVED = 0.95           # a repetition must serve this share of the offered rate
MIN_REF = 0.01          # per request: a smaller reference gives no ratio
TCG_NOTE = ("Under TCG (emulation): absolute times are not comparable with hardware; "
            "read the ratios between modes and the per-request counts.")
# Per-exchange SUT counts (bench/benchlib.py window_counts()).
SUT_KEYS = ("rx_polls_softirq", "rx_polls_kthread", "rx_polls_app", "kthread_packets",
            "rx_irqs", "tx_irqs", "rxtx_irqs", "net_rx_softirqs_sut_cpus", "suspend_events",
            "suspensions", "suspended_frac", "softirq_polls_suspended", "kthread_cpu_pct",
            "rx_rearms", "rx_rearms_suspended", "napi_core_insns")
SYSTEM_KEYS = ("net_rx_softirqs", "ctx_switches")
# Modes that cannot engage on a device/transport: no ratio, but why.
CANNOT_ENGAGE = {("netdevsim", "xdp", m): "netdevsim's generic XDP gives AF_XDP no NAPI ID "
                 "to busy poll" for m in ("busy-inline", "busy-thread", "epoll-prefer",
                                          "epoll-suspend")}


def load_runs(top):
    runs = []
    for d in sorted(glob.glob(os.path.join(top, "run*"))):
        # The runbook plan's boot has no cells: its dry run has its own
        # verdict and report (bench/host/runbook_dryrun.py).
        if d.endswith("-runbook"):
            continue
        run = {"dir": os.path.basename(d), "label": read(d, "kernel-label", "?"),
               "accel": read(d, "accel", "?"), "plan": os.path.basename(d).rsplit("-", 1)[-1]}
        run["tcg_thread"] = tcg_thread(run["accel"])
        try:
            with open(os.path.join(d, "machine.json")) as f:
                run["machine"] = json.load(f)
        except (OSError, ValueError):
            run["machine"] = {}
        run["plan_records"] = []
        for bench in ("rr", "mc"):
            run[bench] = []
            path = os.path.join(d, f"{bench}.jsonl")
            if os.path.exists(path):
                with open(path) as f:
                    run[bench] = [json.loads(line) for line in f if line.strip()]
            # What the script set out to run (benchlib.record_plan()): no cell.
            run["plan_records"] += [c for c in run[bench] if c.get("status") == "plan"]
            run[bench] = [c for c in run[bench] if c.get("status") != "plan"]
        # A device whose pair could not be set up (benchlib.each_pair()).
        run["skipped"] = {(c["bench"], c["device"]): c.get("error", "?")
                          for c in run["rr"] + run["mc"]
                          if c.get("status") == "skip" and "mode" not in c}
        run["insn_symbols"] = insn_symbols(d)
        run["napi_struct"] = read(d, "napi_struct.pahole", None)
        # A repetition is judged with the boot it ran in.
        run["problem"] = run_problem(d)
        if run["problem"]:
            for c in run["rr"] + run["mc"]:
                c["run_problem"] = run["problem"]
        # The collapse and on/off experiments' cells have their own sections.
        run["collapse"] = [c for c in run["rr"] if c.get("experiment") == "collapse"]
        run["on_off"] = [c for c in run["rr"] if c.get("experiment") == "on-off"]
        run["rr"] = [c for c in run["rr"] if c.get("experiment") not in ("collapse", "on-off")]
        runs.append(run)
    for run in runs:
        run["kernel"] = goal_kernel(run, runs)
    return runs


def goal_kernel(run, runs):
    """The kernel RUN's cells count for in the goals: its label, and its
    directory too where another run that judges goals has the same label
    (a re-run, or the other kernel's run with --label left at its
    default): one run's cells never replace another's."""
    judged = [r for r in runs if r["plan"] not in ("baseline", "spinning")]
    if sum(r["label"] == run["label"] for r in judged) > 1:
        return f"{run['label']} ({run['dir']})"
    return run["label"]


def insn_symbols(d):
    """The functions the run's instruction counter counted
    (insn_ranges.py's insn-symbols.json) as a set of function names, a
    string saying why there is none, or None without the file."""
    path = os.path.join(d, "insn-symbols.json")
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            return {insn_ranges.logical_name(s) for s in json.load(f)["found"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"insn-symbols.json unreadable: {exc}"


def run_problem(d):
    """Why no cell of the run in D can count toward a goal, or None: the
    guest did not finish (guest-bench.sh writes guest-finished last; a
    nonzero status there comes from failed cells or a script that died,
    whose repetitions are judged one by one, missing ones included) or
    the kernel splatted (bench.sh writes splat.py's findings to splats.txt)."""
    if read(d, "guest-finished", None) is None:
        return "guest did not finish (no guest-finished)"
    try:
        splats = json.loads(read(d, "splats.txt", None) or "")
    except ValueError:
        return "no splat scan (splats.txt missing or unreadable)"
    if isinstance(splats, dict):
        return f"no splat scan ({splats.get('error', '?')})"
    if splats:
        return f"kernel splat: {splats[0].get('kind')}: {splats[0].get('text', '')}"[:120]
    return None


def read(d, name, default):
    try:
        with open(os.path.join(d, name)) as f:
            return f.read().strip()
    except OSError:
        return default


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values):
    values = [v for v in values if v is not None]
    return (min(values), max(values)) if values else (None, None)


def fmt(v, nd=1):
    return "-" if v is None else f"{v:.{nd}f}"


def ratio(a, b, nd=2):
    return round(a / b, nd) if a is not None and b else None


def is_tcg(run):
    return "tcg" in run["accel"]


def tcg_thread(accel):
    """"single" or "multi" for a TCG boot (workbench/vm/vm.sh's accel line:
    "tcg (thread=multi)"), None for KVM or a real host."""
    if "tcg" not in accel:
        return None
    return "multi" if "thread=multi" in accel else "single"


def run_name(run):
    """The run as the tables name it: its kernel, and TCG's threading
    where it is multi (the single-threaded default goes unsaid)."""
    return f"{run['label']} kernel" + (", multi-threaded TCG" if run["tcg_thread"] == "multi"
                                       else "")


# --- what each repetition is worth ------------------------------------------

def rep_failure(cell):
    """Why a repetition has no latency to offer, or None: the harness
    failed, or not a single reply came back (a collapse, not a gap)."""
    if cell.get("status") != "ok":
        return f"error: {cell.get('error', '?')}"[:90]
    if cell["bench"] == "rr" and not cell["client"].get("received"):
        unsent = cell["client"].get("unsent")
        return f"0 replies of {cell['client'].get('sent', 0)}" + \
            (f", {unsent} never sent" if unsent else "")
    if cell["bench"] == "mc" and not cell["load_gen"].get("received"):
        return f"0 replies of {cell['load_gen'].get('sent', 0)}"
    return None


def rep_problem(cell):
    """Why a repetition cannot count toward a goal, or None: its boot did
    not finish or splatted, it failed, recorded no counters, its trace
    was not cut at the tool's window edges, or it did not serve its
    traffic."""
    why = cell.get("run_problem") or rep_failure(cell)
    if why or not cell.get("counters"):
        return why or "no counters recorded"
    # Counts on the SUT's CPUs that are not the SUT device's alone.
    if cell["counters"].get("irq_affinity_problem"):
        return f"IRQ affinity: {cell['counters']['irq_affinity_problem']}"[:120]
    # Trace counts cut from another window than the one the tool counted.
    if cell["counters"].get("clock_mismatch"):
        return f"window edges: {cell['counters']['clock_mismatch']}"[:160]
    return unserved(cell)


def unserved(cell):
    """How a repetition failed to serve the traffic it was offered, or
    None: errors, timeouts, less than SERVED of the offered rate, or a
    load generator that fell behind its schedule."""
    if cell["bench"] == "rr":
        client = cell["client"]
        found = [f"{client['send_errors']} send errors" if client.get("send_errors") else None]
        if client.get("received", 0) < SERVED * offered(client):
            found.append(f"served {client.get('received', 0)} of {offered(client)} requests "
                         f"(< {SERVED:.0%})")
    else:
        lg, load = cell["load_gen"], cell.get("load")
        found = [f"{lg[k]} {k}" if lg.get(k) else None for k in ("errors", "timeouts")]
        # The closed loop (MAX) offers no rate.
        if isinstance(load, (int, float)) and lg.get("achieved_qps", 0) < SERVED * load:
            found.append(f"achieved {lg.get('achieved_qps', 0):.0f} of {load} qps")
        if lg.get("saturated"):
            found.append("load generator saturated (behind its schedule)")
    return "; ".join(f for f in found if f) or None


MISSING = "missing (no cell recorded)"


def planned_reps(cells):
    """How many repetitions the run planned: rr_grid.py and mc_sweep.py
    record it in each cell; without it, one more than the highest seen."""
    recorded = [c["reps"] for c in cells if c.get("reps")]
    return max(recorded) if recorded else max((c.get("rep", 0) for c in cells), default=-1) + 1


def rep_record(cell):
    """What the goals read from one repetition."""
    client = cell.get("client") or {}
    return {"rep": cell.get("rep"), "problem": rep_problem(cell),
            "sut": (cell.get("counters") or {}).get("sut") or {},
            "cpu": cell.get("server_cpu_pct"), "lost": lost(client), "sent": offered(client)}


def rep_fields(every, planned):
    """reps, failed (for reps_text) and per_rep of an aggregated cell:
    every planned repetition, a missing one included."""
    seen = {c.get("rep") for c in every}
    missing = [{"rep": r, "problem": MISSING, "sut": {}, "cpu": None, "lost": 0, "sent": 0}
               for r in range(planned) if r not in seen]
    per_rep = sorted([rep_record(c) for c in every] + missing, key=lambda r: r["rep"] or 0)
    return {"reps": len(per_rep), "per_rep": per_rep,
            "failed": sorted([(c.get("rep"), rep_failure(c)) for c in every if rep_failure(c)]
                             + [(r["rep"], MISSING) for r in missing], key=lambda f: f[0] or 0)}


def reps_text(a):
    """n=ok/all, and what happened to the others."""
    text = f"n={a['reps_ok']}/{a['reps']}"
    if a["failed"]:
        text += " (" + "; ".join(f"rep{r}: {why}" for r, why in a["failed"]) + ")"
    return text


def loss_sources(cell):
    """Where the requests a cell lost went, over the client's whole run
    (warm-up and grace period included), as {source: count}: which way
    they were lost (the reflector's own counts), the devices' queue drops
    and the UDP socket-buffer errors on both sides, replies that arrived
    after the client's grace period, the sender's lag, and the requests
    a sender too far behind its schedule gave up on. Empty when nothing
    was lost."""
    client = cell.get("client") or {}
    if not lost(client):
        return {}
    found = {"requests never sent (the sender fell a whole run behind)": client.get("unsent", 0)}
    server = cell.get("server")
    if server:
        sent = client.get("warmup_sent", 0) + client.get("sent", 0)
        got = client.get("warmup_received", 0) + client.get("received", 0)
        found["requests that never reached the peer"] = sent - server.get("requests", 0)
        found["replies sent by the peer, never received"] = server.get("replies", 0) - got
    for role, counters in (cell.get("loss") or {}).items():
        if isinstance(counters, str):
            continue
        for key, label in (("rx_drops", "RX-queue drops"), ("tx_drops", "TX drops"),
                           ("udp_rcvbuf_errors", "UdpRcvbufErrors"),
                           ("udp_in_errors", "UdpInErrors")):
            found[f"{role} {label}"] = counters.get(key, 0)
        if role == "sut":
            found["replies after the grace period (SUT UdpNoPorts)"] = \
                counters.get("udp_no_ports", 0)
    lag = (client.get("sched_lag_ns") or {}).get("p99")
    if lag is not None and lag >= 1e6:
        found["sender lag p99 (ms)"] = round(lag / 1e6, 1)
    found = {k: v for k, v in found.items() if v}
    if not found:
        found["unexplained" + (" (AF_XDP ring drops are not counted)"
                               if cell.get("transport") == "xdp" else "")] = client["lost"]
    return found


def lost(client):
    """The measured requests without a reply: those sent and never
    answered, and those the sender gave up on (not offered is not
    sustained)."""
    return client.get("lost", 0) + client.get("unsent", 0)


def offered(client):
    """The measured requests on the schedule: sent or given up on."""
    return client.get("sent", 0) + client.get("unsent", 0)


def merge_sources(cells):
    total = defaultdict(float)
    for c in cells:
        for k, v in loss_sources(c).items():
            total[k] = max(total[k], v) if k.startswith("sender lag") else total[k] + v
    return {k: (round(v, 1) if k.startswith("sender lag") else int(v)) for k, v in total.items()}


def sources_text(sources):
    return ", ".join(f"{k} {v}" for k, v in sources.items()) or "-"


def counts_of(cells, group):
    """Medians of the per-exchange counts under counters[GROUP] and the
    union of the reasons some were not measured."""
    cnt = [c.get("counters") or {} for c in cells]
    keys = SUT_KEYS if group == "sut" else SYSTEM_KEYS
    out = {k: med([(x.get(group) or {}).get(k) for x in cnt]) for k in keys}
    if group == "system":
        cpus = {cpu for x in cnt for cpu in (x.get("system") or {}).get("cpu_busy_pct", {})}
        out["cpu_busy_pct"] = {cpu: med([(x.get("system") or {}).get("cpu_busy_pct", {}).get(cpu)
                                         for x in cnt]) for cpu in sorted(cpus)}
    else:
        resumes = defaultdict(int)
        for x in cnt:
            for reason, n in (x.get("sut") or {}).get("resumes", {}).items():
                resumes[reason] += n
        out["resumes_all_reps"] = dict(resumes)
    return out


def window_flags(cells):
    """'rep N: why' of the repetitions whose /proc count window and trace
    window are more than benchlib's WINDOW_TOLERANCE apart."""
    return [f"rep {c.get('rep', 0)}: {c['counters'][key]}" for c in cells
            for key in ("window_mismatch", "clock_mismatch")
            if (c.get("counters") or {}).get(key)]


def not_measured(cells):
    why = {}
    for c in cells:
        why.update((c.get("counters") or {}).get("not_measured", {}))
    return why


def engage_reason(device, transport, mode):
    return CANNOT_ENGAGE.get((device, transport, mode))


def why_no_ratio(a, b, what, key="p99"):
    """Why A/B would mislead, or None: either side was not run, lost more
    than MAX_LOSS, has no KEY, or its mode cannot engage there."""
    for side in (a, b):
        if side is None:
            return f"n/a: {what} not run"
        if side.get("cannot_engage"):
            return f"n/a: {side['name']}: {side['cannot_engage']}"
        if side["loss_frac"] is None:
            return f"n/a: {side['name']} sent nothing"
        if side["loss_frac"] > MAX_LOSS:
            return f"n/a: {side['name']} lost {side['loss_frac']:.1%}"
        if key and side.get(key) is None:
            return f"n/a: {side['name']} has no {key}"
    return None


def ratio_or_na(a, b, what, key="p99"):
    """(A/B of KEY or None, what to print)."""
    why = why_no_ratio(a, b, what, key)
    if why:
        return None, why
    value = ratio(a[key], b[key])
    return value, fmt(value, 2)


def ratio_value(a, b, what, key):
    """A/B of KEY, or the "n/a: why" text (for the JSON findings)."""
    value, shown = ratio_or_na(a, b, what, key)
    return shown if value is None else value


# --- request/response latency (seed 000: threaded busy polling) --------------

def rr_cells(cells):
    """(device, transport, rate, delay, mode) -> medians over the
    repetitions that produced a figure, with how many did (n) and what
    happened to the others, missing ones included; per_rep: what the
    goals judge."""
    planned = planned_reps(cells)
    groups = defaultdict(list)
    for c in cells:
        if c.get("status") in ("ok", "error") and "mode" in c:
            groups[(c["device"], c["transport"], c["rate"], c["delay_us"], c["mode"])].append(c)
    agg = {}
    for key, every in groups.items():
        ok = [c for c in every if c.get("status") == "ok"]
        # A cell without any reply has no latency, but its loss counts.
        good = [c for c in ok if not rep_failure(c)]
        lat = [c["client"]["latency_ns"] or {} for c in good]
        a = {p: med([x.get(p) / 1000 if x.get(p) is not None else None for x in lat])
             for p in PCTS + ("p999", "max")}
        a["p99_spread"] = [x / 1000 if x is not None else None
                           for x in spread([x.get("p99") for x in lat])]
        a.update(rep_fields(every, planned), name=key[4], reps_ok=len(good),
                 cannot_engage=engage_reason(key[0], key[1], key[4]))
        a["lost"] = sum(lost(c["client"]) for c in ok)
        a["sent"] = sum(offered(c["client"]) for c in ok)
        a["loss_frac"] = a["lost"] / a["sent"] if a["sent"] else None
        a["loss_sources"] = merge_sources(ok)
        a["lag_p99_us"] = med([(c["client"].get("sched_lag_ns") or {}).get("p99") for c in ok])
        a["lag_max_us"] = med([(c["client"].get("sched_lag_ns") or {}).get("max") for c in ok])
        for k in ("lag_p99_us", "lag_max_us"):
            a[k] = a[k] / 1000 if a[k] is not None else None
        a["sut"] = counts_of(ok, "sut")
        a["system"] = counts_of(ok, "system")
        a["not_measured"] = not_measured(ok)
        a["window_flags"] = window_flags(ok)
        a["perf"] = seed_tables.perf_of(ok)
        # XDP hook to application, from the XDP metadata stamp.
        for p in ("p50", "p99"):
            a[f"deliver_{p}"] = med([c["client"][f"deliver_{p}_ns"] / 1000 for c in good
                                     if c["client"].get(f"deliver_{p}_ns") is not None])
        agg[key] = a
    return agg


def rr_tables(run, agg, lines, summary):
    all_modes = sorted({k[4] for k in agg}, key=mode_key)
    combos = sorted({k[:2] for k in agg})
    for device, transport in combos:
        lines.append(f"\n### {device}, {transport.upper()}: latency in us ({run_name(run)})\n")
        if is_tcg(run):
            lines.append(f"{TCG_NOTE}\n")
        here = [m for m in all_modes if any(k[:2] == (device, transport) and k[4] == m
                                             for k in agg)]
        absent = [m for m in all_modes if m not in here]
        if absent:
            lines.append(f"Not run on {device}, {transport.upper()}: "
                         + "; ".join(f"{m} ({rr_grid.not_run_because(m, transport, device) or 'not in this run'})"
                                     for m in absent)
                         + ".\n")
        modes = here
        lines.append("| Experiment | " + " | ".join(modes) + " |")
        lines.append("|---|" + "---|" * len(modes))
        workloads = sorted({k[2:4] for k in agg if k[:2] == (device, transport)},
                           key=lambda w: WORKLOAD_ORDER.get(w, 99))
        for rate, delay in workloads:
            cells = [agg.get((device, transport, rate, delay, m)) for m in modes]
            lines.append(f"| {rate} pkt/s + {delay}us delay |" + " |" * len(modes))

            def row(text, cells=cells):
                lines.append("| | " + " | ".join(text(c) if c else "-" for c in cells) + " |")
            row(reps_text)
            for p in PCTS:
                row(lambda c, p=p: f"{p}: {fmt(c[p])}")
            row(lambda c: f"p99 spread {fmt(c['p99_spread'][0])}..{fmt(c['p99_spread'][1])}")
            row(lambda c: f"lost {c['lost']}/{c['sent']}")
            row(lambda c: f"sender lag p99/max {fmt(c['lag_p99_us'], 0)}/{fmt(c['lag_max_us'], 0)}")
            if any(c and c["lost"] for c in cells):
                row(lambda c: f"loss: {sources_text(c['loss_sources'])}" if c["lost"] else "")
            if any(c and c["cannot_engage"] for c in cells):
                row(lambda c: f"cannot engage: {c['cannot_engage']}" if c["cannot_engage"] else "")
            if any(c and c["deliver_p50"] is not None for c in cells):
                row(lambda c: f"XDP→app p50/p99: {fmt(c['deliver_p50'])}/{fmt(c['deliver_p99'])}")
            ratios, shown = {}, {}
            thr = agg.get((device, transport, rate, delay, "threaded-busy"))
            for ref in ("interrupts", "busy-thread"):
                base = agg.get((device, transport, rate, delay, ref))
                if thr or base:
                    value, shown[ref] = ratio_or_na(thr, base, "threaded-busy" if not thr else ref)
                    ratios[f"threaded_p99_over_{ref}_p99"] = value
            summary["rr"].append({"kernel": run["label"], "run": run_name(run),
                                  "tcg_thread": run["tcg_thread"], "device": device,
                                  "transport": transport,
                                  "rate": rate, "delay_us": delay, "ratios": ratios,
                                  "ratios_shown": shown,
                                  "modes": {m: agg.get((device, transport, rate, delay, m))
                                            for m in modes}})
        rr_count_table(device, transport, workloads, modes, agg, lines)


def rr_count_table(device, transport, workloads, modes, agg, lines):
    lines.append(f"\n{device}, {transport.upper()}: per request over the measured window, "
                 "medians. SUT: the SUT device's RX polls that did work by context "
                 "(softirq / NAPI kthread / application busy poll), packets the kthread "
                 "polled, the NAPI kthreads' CPU time (% of one CPU over the window), "
                 "the SUT device's RX and TX interrupts, its RX re-arms (napi_complete_done() "
                 "returned true: the driver re-enables its IRQ), NET_RX softirqs on the SUT's "
                 "CPUs, IRQ suspend events and the share of the window suspended. "
                 "System-wide (secondary: peer and kworkers included): NET_RX softirqs, "
                 "context switches, CPU busy % per CPU\n")
    lines.append("| workload | mode | n | SUT polls sirq/kthr/app | SUT kthr pkts | "
                 "SUT kthr CPU% | SUT RX irq | SUT RX re-arm | SUT TX irq | SUT NET_RX | "
                 "SUT susp ev | SUT susp % | sys softirq | sys ctxsw | sys CPU% |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    reasons, flags = {}, []
    for rate, delay in workloads:
        for m in modes:
            c = agg.get((device, transport, rate, delay, m))
            if c:
                lines.append(f"| {rate}+{delay}us | {m} | {c['reps_ok']}/{c['reps']} | "
                             + " | ".join(sut_columns(c)) + " | "
                             + " | ".join(system_columns(c)) + " |")
                reasons.update(c["not_measured"])
                flags += [f"{rate}+{delay}us {m} {f}" for f in c.get("window_flags", [])]
    not_measured_lines(reasons, lines)
    window_flag_lines(flags, lines)
    model_irqs_line(device, lines)


def window_flag_lines(flags, lines):
    if flags:
        lines.append("\nFlagged, count and trace windows apart by more than 0.5 %: "
                     + "; ".join(flags))


def model_irqs_line(device, lines):
    """Whose figures the IRQ columns are, where not the kernel's."""
    if device in NO_IRQS and device != "netdevsim":
        lines.append(f"\nThe IRQ columns are the emulated device's: {NO_IRQS[device]}. "
                     "The RX re-arm column is the kernel's.\n")


def sut_columns(c):
    s = c["sut"]
    polls = "/".join(fmt(s[k], 3) for k in ("rx_polls_softirq", "rx_polls_kthread",
                                            "rx_polls_app"))
    irq_rx = s["rx_irqs"] if s["rxtx_irqs"] is None else None
    rx = fmt(irq_rx, 3) if s["rxtx_irqs"] is None else f"rx+tx {fmt(s['rxtx_irqs'], 3)}"
    frac = s["suspended_frac"]
    return [polls, fmt(s["kthread_packets"], 3), fmt(s.get("kthread_cpu_pct"), 0), rx,
            fmt(s.get("rx_rearms"), 3), fmt(s["tx_irqs"], 3),
            fmt(s["net_rx_softirqs_sut_cpus"], 3), fmt(s["suspend_events"], 3),
            fmt(frac * 100 if frac is not None else None, 0)]


def system_columns(c):
    s = c["system"]
    cpu = "/".join(fmt(v, 0) for v in s["cpu_busy_pct"].values())
    return [fmt(s["net_rx_softirqs"], 2), fmt(s["ctx_switches"], 2), cpu]


def not_measured_lines(reasons, lines):
    """'-' in a counts table: not measured, and why."""
    if reasons:
        lines.append("\nNot measured ('-'): " + "; ".join(
            f"{what}: {why}" for what, why in sorted(reasons.items())))


MODE_ORDER = ["interrupts", "interrupts+matched", "interrupts+spinners", "busy-inline", "busy-thread",
              "threaded-busy", "threaded-busy-adaptive", "threaded-busy+block", "threaded-busy+other", "threaded",
              "threaded-busy+all", "epoll-prefer", "epoll-suspend", "uring-prefer", "uring-suspend",
              "xsk-prefer", "xsk-suspend"]
WORKLOAD_ORDER = {}


def mode_key(mode):
    return MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)


def rr_ratio_lines(summary, lines):
    lines.append("\n### Threaded busy poll p99 relative to interrupts and to busy-thread\n")
    lines.append(f"No ratio (n/a) where either side lost more than {MAX_LOSS:.0%} of its "
                 "requests or its mode cannot engage on that device and transport.\n")
    lines.append("| run | device | transport | workload | threaded/interrupts | "
                 "threaded/busy-thread |")
    lines.append("|---|---|---|---|---|---|")
    for s in summary["rr"]:
        shown = s["ratios_shown"]
        if shown:
            lines.append(f"| {s['run']} | {s['device']} | {s['transport']} | "
                         f"{s['rate']}+{s['delay_us']}us | {shown.get('interrupts', '-')} | "
                         f"{shown.get('busy-thread', '-')} |")


# Each compared SUT count: the per-request counts it sums.
BASELINE_SUMS = {"rx_polls_with_work": ("rx_polls_softirq", "rx_polls_kthread", "rx_polls_app"),
                 "rx_irqs": ("rx_irqs",),
                 "net_rx_softirqs_sut_cpus": ("net_rx_softirqs_sut_cpus",),
                 "napi_core_insns": ("napi_core_insns",),
                 "rx_rearms": ("rx_rearms",)}
BASELINE_KEYS = tuple(BASELINE_SUMS)


def sum_of(sut, keys):
    """The sum of the SUT counts KEYS, None if any is missing."""
    parts = [sut.get(k) for k in keys]
    return None if None in parts else sum(parts)


def baseline_rows(base_agg, patched_agg):
    """Patched / base per cell of the baseline plan's mode (interrupts,
    or BENCH_BASELINE_MODE): latency and the SUT
    counts per request (medians), n/a where either side lost more than
    MAX_LOSS; base and patched: both cells, for the goal."""
    rows = []
    for key, base in sorted(base_agg.items()):
        new = patched_agg.get(key)
        if not new:
            continue
        row = {"key": key, "base": base, "patched": new}
        for metric in ("p50", "p99"):
            row[metric], row[f"{metric}_shown"] = ratio_or_na(new, base, "base", metric)
        for metric in BASELINE_KEYS:
            a, b = (sum_of(x["sut"], BASELINE_SUMS[metric]) for x in (new, base))
            why = why_no_ratio(new, base, "base", None)
            row[metric] = None if why else ratio(a, b, 3)
            row[f"{metric}_shown"] = why or fmt(row[metric], 3)
        rows.append(row)
    return rows


def baseline_of(runs):
    """baseline_rows() of the baseline-plan runs, None without both
    kernels; each row knows the functions each kernel's instruction
    counter counted (insn_functions)."""
    baseline = [r for r in runs if r["plan"] == "baseline"]
    by_label = {r["label"]: rr_cells(r["rr"]) for r in baseline}
    if "base" not in by_label or "patched" not in by_label:
        return None
    functions = {r["label"]: r["insn_symbols"] for r in baseline}
    return [dict(row, insn_functions=functions)
            for row in baseline_rows(by_label["base"], by_label["patched"])]


def insn_function_difference(functions):
    """Why the two kernels' instruction counts do not cover the same
    functions, or None: FUNCTIONS ({"base"|"patched": a set of function
    names, or why none}) from each run's insn-symbols.json. The series'
    own helpers exist on the patched kernel only."""
    found = {}
    for side in ("base", "patched"):
        names = functions.get(side)
        if not isinstance(names, set):
            return f"{side}: {names or 'no insn-symbols.json'}: which functions were counted is unknown"
        found[side] = names - set(insn_ranges.SERIES_HELPERS)
    if found["base"] == found["patched"]:
        return None
    return ("not the same functions counted on both kernels (a function out of line on one, "
            "inlined into an uncounted caller on the other): base only: "
            f"{', '.join(sorted(found['base'] - found['patched'])) or '-'}; patched only: "
            f"{', '.join(sorted(found['patched'] - found['base'])) or '-'}")


def baseline_modes(runs):
    """The modes of the baseline-plan runs' cells, for the headings."""
    return ", ".join(sorted({c["mode"] for run in runs if run["plan"] == "baseline"
                             for c in run["rr"] if "mode" in c}))


def baseline_lines(runs, rows, lines, summary):
    """Patched vs base, in the baseline-plan runs' mode."""
    if rows is None:
        return
    lines.append(f"\n### Cost when off: patched / base, mode {baseline_modes(runs)} "
                 "(1.00 = no cost)\n")
    if any(is_tcg(r) for r in runs if r["plan"] == "baseline"):
        lines.append(f"{TCG_NOTE}\n")
    lines.append("| device | transport | workload | p50 | p99 | SUT polls w/ work/req | "
                 "SUT RX irq/req | SUT NET_RX/req | NAPI core instructions/req | "
                 "SUT RX re-arm/req |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        key = row["key"]
        summary["baseline"].append({"device": key[0], "transport": key[1], "rate": key[2],
                                    "delay_us": key[3], "mode": key[4], "patched_over_base": {
                                        k: row[k] for k in ("p50", "p99") + BASELINE_KEYS}})
        lines.append(f"| {key[0]} | {key[1]} | {key[2]}+{key[3]}us | " + " | ".join(
            row[f"{k}_shown"] for k in ("p50", "p99") + BASELINE_KEYS) + " |")
    # One number per metric, with the range it summarises.
    overall = {}
    for k in ("p50", "p99") + BASELINE_KEYS:
        values = [r[k] for r in rows if r[k]]
        if values:
            overall[k] = {"geomean": round(statistics.geometric_mean(values), 2),
                          "min": min(values), "max": max(values), "cells": len(values)}
    summary["baseline_geomean"] = overall
    lines.append("| all cells | | geometric mean (min..max) | " + " | ".join(
        f"{overall[k]['geomean']:.2f} ({overall[k]['min']:.2f}..{overall[k]['max']:.2f})"
        if k in overall else "-" for k in ("p50", "p99") + BASELINE_KEYS) + " |")


def insn_function_lines(runs, lines, summary):
    """Where the NAPI core's instructions per request go, by function,
    base and patched side by side (medians over the repetitions), from
    the baseline-plan runs' interrupt-mode cells."""
    per = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for run in runs:
        if run["plan"] != "baseline":
            continue
        for c in run["rr"]:
            by_fn = (c.get("counters") or {}).get("napi_core_insns_by_function")
            if c.get("status") == "ok" and by_fn:
                key = (c["device"], c["transport"], c["rate"], c["delay_us"])
                for fn, n in by_fn.items():
                    per[key][fn][run["label"]].append(n)
    if not per:
        return
    lines.append("\n### NAPI core instructions per request by function, "
                 f"mode {baseline_modes(runs)} "
                 "(QEMU's count on every vCPU: the SUT's and the peer's NAPI core, both the kernel under test; base / patched, medians)\n")
    lines.append("Counted by `bench/qemu-plugin/napi_insn.so` between the tool's window edges; "
                 "a function missing from a kernel's System.map was inlined into its callers "
                 "or does not exist there (the series' own: "
                 + ", ".join(f"`{name}`" for name in insn_ranges.SERIES_HELPERS) + ") "
                 "(`insn-symbols.json` of the run).\n")
    lines.append("| device | transport | workload | function | base | patched |")
    lines.append("|---|---|---|---|---|---|")
    for key, fns in sorted(per.items()):
        for fn, by_label in sorted(fns.items()):
            base, new = (med(by_label.get(k, [])) for k in ("base", "patched"))
            summary.setdefault("napi_core_insns_by_function", []).append(
                {"device": key[0], "transport": key[1], "rate": key[2], "delay_us": key[3],
                 "function": fn, "base": base, "patched": new})
            lines.append(f"| {key[0]} | {key[1]} | {key[2]}+{key[3]}us | {fn} | "
                         f"{fmt(base)} | {fmt(new)} |")


def layout_lines(runs, lines):
    """pahole's struct napi_struct of each kernel benchmarked."""
    layouts = {}
    for run in runs:
        if run.get("napi_struct"):
            layouts.setdefault(run["label"], run["napi_struct"])
    if not layouts:
        return
    lines.append("\n### struct napi_struct (pahole, the benchmarked builds)\n")
    for label, text in sorted(layouts.items()):
        size = [t.strip() for t in text.splitlines() if "/* size:" in t]
        lines.append(f"- {label}: `{size[0] if size else '?'}`")
    for label, text in sorted(layouts.items()):
        lines.append(f"\n<details><summary>{label}</summary>\n\n```\n{text}\n```\n</details>")


# --- the threaded busy-poll collapse (rr_grid.py --collapse) -----------------

COLLAPSE_LOSS = 0.05        # a cell collapsed if it lost more than this,
COLLAPSE_P50_US = 100000.0  # or its median latency exceeded 100 ms
# What each control changes against threaded-busy.
COLLAPSE_CONTROLS = {
    "interrupts": "reference: interrupt mode",
    "interrupts+matched": "interrupts with threaded-busy's spinning on the emulator (spinning "
                          "receiver, SCHED_FIFO spinner on a CPU without IRQs), no series code, "
                          "the interrupt path's CPU left free",
    "interrupts+spinners": "interrupts + threaded-busy's CPU occupancy (SCHED_FIFO spinner "
                           "on the kthread's CPU, SCHED_OTHER spinner on the receiver's), "
                           "no series code",
    "threaded-busy": "the mode under suspicion (SCHED_FIFO kthread, spinning receiver)",
    "threaded-busy+block": "threaded-busy with a blocking receiver",
    "threaded-busy+other": "threaded-busy with the kthread SCHED_OTHER, RT throttling on",
    "threaded": "threaded NAPI without busy polling (SCHED_FIFO kthread, spinning receiver)",
    "threaded-busy+all": "threaded-busy on every NAPI of the device, not only the RX queues' "
                         "(igb's TX NAPIs get busy-polling SCHED_FIFO kthreads on the same CPU "
                         "too); UDP only, as on XDP the program's attach deadlocks in "
                         "napi_disable() behind the starved kthread",
}


def collapsed(a):
    """Whether the aggregated cell A collapsed (more than COLLAPSE_LOSS
    lost, p50 over COLLAPSE_P50_US, or no repetition with a reply);
    None if it was not run."""
    if a is None:
        return None
    if not a["reps_ok"]:
        return True
    return (a["loss_frac"] or 0) > COLLAPSE_LOSS or (a["p50"] or 0) > COLLAPSE_P50_US


def mode_collapsed(agg, device, transport, mode, workload=None):
    """Whether MODE collapsed at WORKLOAD ((rate, delay); None: at any);
    None if not run."""
    states = [collapsed(a) for k, a in agg.items()
              if k[0] == device and k[1] == transport and k[4] == mode
              and workload in (None, k[2:4])]
    return any(states) if states else None


def collapse_verdict(agg, device, transport, workload=None):
    """(verdict, why) of the collapse experiment on one device and
    transport, at WORKLOAD ((rate, delay); None: all together): each
    control removes one suspect, so the first control that changes the
    outcome names the cause."""
    def state(mode):
        return mode_collapsed(agg, device, transport, mode, workload)
    if state("threaded-busy") is None:
        return "not run", "threaded-busy was not run"
    if not state("threaded-busy"):
        why = (f"threaded-busy lost at most {COLLAPSE_LOSS:.0%} with p50 "
               f"≤ {COLLAPSE_P50_US / 1000:.0f} ms")
        if state("threaded-busy+all"):
            return ("harness choice", why + "; with busy-polling SCHED_FIFO kthreads on every "
                    "NAPI of the device on one CPU (threaded-busy+all) it collapses: a "
                    "spinning FIFO thread never lets one of equal priority run, so one NAPI's "
                    "kthread starves behind another's")
        return "not reproduced", why
    if state("interrupts"):
        return ("no verdict", "interrupt mode collapsed as well: the load is beyond what "
                "this machine sustains")
    if state("interrupts+matched"):
        return ("emulation artefact", "the same spinning without any series code, on a CPU "
                "without IRQs (interrupts+matched), collapsed too: the spinning vCPUs starve "
                "the emulated machine, not a kernel path")
    if state("interrupts+spinners"):
        return ("CPU starvation", "a SCHED_FIFO spinner on the IRQs' CPU collapses interrupt "
                "mode too (interrupts+spinners), the matched control does not: a spinning "
                "FIFO thread starves that CPU's softirq work, with or without the series")
    cured = [COLLAPSE_CONTROLS[m] for m in ("threaded-busy+block", "threaded-busy+other")
             if state(m) is False]
    if cured:
        return ("harness choice", "threaded-busy stops collapsing with "
                + " and with ".join(cured) + ": the harness's set-up, not the kernel")
    if state("threaded"):
        return ("kernel bug (threaded NAPI)", "plain threaded NAPI collapses too, the "
                "occupancy control does not: a kthread path, not busy polling alone")
    return ("kernel bug", "only threaded busy poll collapses; no control removes it")


def collapse_lines(run, agg, lines, summary):
    if not agg:
        return
    lines.append(f"\n### Threaded busy-poll collapse experiment ({run_name(run)})\n")
    lines.append(f"One boot, modes interleaved per repetition. Collapsed: more than "
                 f"{COLLAPSE_LOSS:.0%} lost, p50 over {COLLAPSE_P50_US / 1000:.0f} ms or no "
                 "reply at all. Controls: " + "; ".join(
                     f"{m}: {why}" for m, why in COLLAPSE_CONTROLS.items()) + ".\n")
    if is_tcg(run):
        lines.append(f"{TCG_NOTE}\n")
    for device, transport in sorted({k[:2] for k in agg}):
        # Each workload gets its own verdict: a load that collapses even
        # interrupt mode says nothing about the lighter one.
        workloads = sorted({k[2:4] for k in agg if k[:2] == (device, transport)},
                           key=lambda w: (WORKLOAD_ORDER.get(w, 99), w))
        for workload in workloads:
            verdict, why = collapse_verdict(agg, device, transport, workload)
            summary["collapse"].append({"kernel": run["label"], "run": run_name(run),
                                        "tcg_thread": run["tcg_thread"], "device": device,
                                        "transport": transport,
                                        "workload": f"{workload[0]}+{workload[1]}us",
                                        "verdict": verdict, "why": why})
            lines.append(f"\n{device}, {transport.upper()}, {workload[0]} pps + "
                         f"{workload[1]} us: **{verdict}**: {why}\n")
        lines.append("| workload | mode | n | p50 us | p99 us | lost/sent | loss went to | "
                     "sender lag p99/max us | SUT polls sirq/kthr/app | collapsed |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        keys = sorted((k for k in agg if k[:2] == (device, transport)),
                      key=lambda k: (WORKLOAD_ORDER.get(k[2:4], 99), k[2], mode_key(k[4])))
        for k in keys:
            a = agg[k]
            s = a["sut"]
            polls = "/".join(fmt(s.get(x), 3) for x in ("rx_polls_softirq", "rx_polls_kthread",
                                                        "rx_polls_app"))
            lines.append(f"| {k[2]}+{k[3]}us | {k[4]} | {reps_text(a)} | {fmt(a['p50'])} | "
                         f"{fmt(a['p99'])} | {a['lost']}/{a['sent']} | "
                         f"{sources_text(a['loss_sources']) if a['lost'] else '-'} | "
                         f"{fmt(a['lag_p99_us'], 0)}/{fmt(a['lag_max_us'], 0)} | {polls} | "
                         f"{'yes' if collapsed(a) else 'no'} |")


def on_off_lines(run, agg, lines, summary):
    """The on/off experiment: bursts of requests with idle gaps longer
    than threaded-busy-adaptive's irq-suspend-timeout. Over a window of
    bursts and gaps, the kthread's CPU time shows what it gives back in
    the gaps, the latency and loss what that costs in the bursts."""
    if not agg:
        return
    pattern = run["on_off"][0].get("on_off") or "?"
    lines.append(f"\n### On/off traffic ({run_name(run)}): bursts and gaps of "
                 f"{pattern.replace(':', ' / ')} ms\n")
    lines.append("Per request over the window of bursts and gaps, medians. kthr CPU%: the "
                 "NAPI kthreads' CPU time, % of one CPU over the whole window (gaps "
                 "included); RX irq: the SUT device's RX interrupts; kthr pkts: packets "
                 "the kthread polled.\n")
    if is_tcg(run):
        lines.append(f"{TCG_NOTE} The kthread CPU time is meaningful under TCG.\n")
    lines.append("| device | workload | mode | n | p50 us | p99 us | lost/sent | kthr CPU% | "
                 "RX irq/req | kthr pkts/req |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for k in sorted(agg, key=lambda k: (k[0], k[2], mode_key(k[4]))):
        a, sut = agg[k], agg[k]["sut"]
        summary["on_off"].append({"kernel": run["label"], "device": k[0], "rate": k[2],
                                  "delay_us": k[3], "mode": k[4], "pattern": pattern,
                                  "p50_us": a["p50"], "p99_us": a["p99"], "lost": a["lost"],
                                  "sent": a["sent"], "kthread_cpu_pct": sut["kthread_cpu_pct"],
                                  "rx_irqs": sut["rx_irqs"],
                                  "kthread_packets": sut["kthread_packets"]})
        lines.append(f"| {k[0]} | {k[2]}+{k[3]}us | {k[4]} | {reps_text(a)} | {fmt(a['p50'])} | "
                     f"{fmt(a['p99'])} | {a['lost']}/{a['sent']} | "
                     f"{fmt(sut['kthread_cpu_pct'], 0)} | {fmt(sut['rx_irqs'], 3)} | "
                     f"{fmt(sut['kthread_packets'], 3)} |")


def md_table(lines, title, columns, rows):
    """A markdown section TITLE with a table of COLUMNS and ROWS (lists
    of cell texts)."""
    lines.append(f"\n## {title}\n")
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "---|" * len(columns))
    lines.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)


def collapse_head(verdicts, lines):
    """The verdicts, for the top of bench.md."""
    if not verdicts:
        return
    md_table(lines, "Threaded busy-poll collapse: verdict, from this run",
             ("run", "device", "transport", "workload", "verdict", "why"),
             [(v["run"], v["device"], v["transport"], v["workload"],
               f"**{v['verdict']}**", v["why"]) for v in verdicts])


# --- the spinning modes under both of TCG's schedulers: a verdict where they agree

def p99_order(a, b):
    """A's p99 against B's over every repetition: "lower" or "higher"
    where their ranges do not overlap, else "same"."""
    (a_lo, a_hi), (b_lo, b_hi) = a["p99_spread"], b["p99_spread"]
    if a_hi < b_lo:
        return "lower"
    return "higher" if a_lo > b_hi else "same"


def latency_verdict(agg, key):
    """(verdict or None, figures or why not) of threaded-busy's p99
    against interrupt mode's at KEY (device, transport, rate, delay),
    every repetition judged. The matched control spins as threaded-busy
    does without its code: where it moves p99 the same way, at least as
    far, the difference is the emulator's scheduling of spinning vCPUs."""
    thr, irq, ctl = (agg.get(key + (mode,))
                     for mode in ("threaded-busy", "interrupts", "interrupts+matched"))
    why = (why_no_ratio(thr, irq, "threaded-busy and interrupts")
           or why_no_ratio(ctl, irq, "interrupts+matched"))
    broken = [] if why else (broken_reps(thr, "threaded-busy") + broken_reps(irq, "interrupts")
                             + broken_reps(ctl, "interrupts+matched"))
    if why or broken:
        return None, why or "n/a: " + "; ".join(broken)
    figures = (f"threaded-busy/interrupts {fmt(ratio(thr['p99'], irq['p99']), 2)}, "
               f"matched/interrupts {fmt(ratio(ctl['p99'], irq['p99']), 2)}")
    order = p99_order(thr, irq)
    if order == "same":
        return "no difference", figures
    if p99_order(ctl, irq) == order and p99_order(thr, ctl) != order:
        return "the emulator's (the matched control too)", figures
    return f"threaded-busy p99 {order}", figures


def both_schedulers(judged):
    """One verdict from JUDGED ({"single"|"multi": (verdict or None,
    text)}): a verdict stands only where both schedulers give it."""
    missing = [t for t in ("single", "multi") if t not in judged]
    if missing:
        return f"no verdict: not run under {missing[0]}-threaded TCG"
    unjudged = [t for t in ("single", "multi") if judged[t][0] is None]
    if unjudged:
        return f"no verdict: none under {unjudged[0]}-threaded TCG"
    single, multi = judged["single"][0], judged["multi"][0]
    return single if single == multi else "depends on the emulator's scheduling"


def spinning_rows(runs):
    """Per device, transport and workload, threaded-busy's latency and the
    collapse experiment judged under single- and multi-threaded TCG."""
    # Per kernel: one kernel's cells never stand for another's.
    seen = defaultdict(lambda: ({}, {}))
    for run in runs:
        if run["tcg_thread"] and run["plan"] == "spinning" and not run["problem"]:
            seen[(run["label"], run["tcg_thread"])][0].update(rr_cells(run["rr"]))
            seen[(run["label"], run["tcg_thread"])][1].update(rr_cells(run["collapse"]))
    judged = defaultdict(dict)
    for (kernel, thread), (grid, collapse) in seen.items():
        for key in {k[:4] for k in grid if k[4] == "threaded-busy"}:
            judged[("latency p99",) + key + (kernel,)][thread] = latency_verdict(grid, key)
        for key in {k[:4] for k in collapse}:
            judged[("collapse",) + key + (kernel,)][thread] = \
                collapse_verdict(collapse, *key[:2], key[2:4])
    rows = []
    for key in sorted(judged, key=lambda k: (k[5], k[0], k[1], k[2],
                                             WORKLOAD_ORDER.get(k[3:5], 99))):
        verdicts = judged[key]
        rows.append({"what": key[0], "kernel": key[5], "device": key[1], "transport": key[2],
                     "workload": f"{key[3]}+{key[4]}us", "verdict": both_schedulers(verdicts),
                     **{t: f"{v[0] or '-'}: {v[1]}" for t, v in verdicts.items()}})
    return rows


def spinning_head(rows, lines):
    if not rows:
        return
    md_table(lines, "Spinning modes under single- and multi-threaded TCG",
             ("what", "kernel", "device", "transport", "workload", "verdict",
              "single-threaded", "multi-threaded"),
             [(r["what"], r["kernel"], r["device"], r["transport"], r["workload"],
               f"**{r['verdict']}**",
               r.get("single", "not run"), r.get("multi", "not run")) for r in rows])
    lines.append("\nA spinning vCPU holds single-threaded TCG for whole time slices; "
                 "multi-threaded TCG gives each vCPU a host thread (still sharing the host's "
                 "cores). A verdict stands only where both give it; each is judged on every "
                 "repetition (p99 ranges that do not overlap), with the matched control "
                 "(interrupts+matched: threaded-busy's spinning without its code) telling "
                 "the emulator's share.")


# --- where the run's time went -----------------------------------------------

def run_time(runs):
    """Wall time per run, experiment and device, from the cells' wall_s:
    what sizes a plan to the time a session has."""
    rows = []
    for run in runs:
        groups = defaultdict(list)
        for name in ("rr", "collapse", "on_off", "mc"):
            for c in run[name]:
                experiment = {"rr": "grid", "on_off": "on-off"}.get(name, name)
                groups[(experiment, c.get("device", "?"))].append(c)
        for (experiment, device), cells in sorted(groups.items()):
            walls = [c["wall_s"] for c in cells if c.get("wall_s") is not None]
            rows.append({"run": run["dir"], "experiment": experiment, "device": device,
                         "cells": len(cells), "wall_s": round(sum(walls), 1),
                         "per_cell_s": round(sum(walls) / len(walls), 1) if walls else None})
    return rows


# Which figures the emulator's scheduling shapes, so that bench.md says
# which of its figures a real machine would give otherwise.
EMULATOR_DEPENDENCE = (
    ("Depend on it", "latencies and every latency ratio between modes, achieved rates, "
     "saturation, the collapse verdicts, memcached's CPU %: under single-threaded TCG one host "
     "thread runs the vCPUs in turn, so a vCPU that spins (a busy-polling kthread, an "
     "application in busy poll, a spinner control) holds the others for a whole time slice; "
     "the spinning modes' latency and collapse verdicts stand only where single- and "
     "multi-threaded TCG agree (the table at the top)"),
    ("Partly", "per-request counts (polls, interrupts, softirqs, re-arms): how many packets "
     "arrive per interrupt follows the emulator's batching"),
    ("Do not", "NAPI core instructions per request for a given number of packets per poll "
     "(QEMU counts them exactly) and the NAPI kthreads' CPU time as a share of guest time"))


def emulator_lines(runs, lines):
    if not any(is_tcg(r) for r in runs):
        return
    lines.append("\n### Figures and the emulator's scheduling\n")
    for what, figures in EMULATOR_DEPENDENCE:
        lines.append(f"- {what}: {figures}.")


def run_time_lines(rows, lines):
    if not rows:
        return
    md_table(lines, "Run time (wall clock of the cells, set-up of each pair not included)",
             ("run", "experiment", "device", "cells", "wall s", "s per cell"),
             [(r["run"], r["experiment"], r["device"], r["cells"], fmt(r["wall_s"], 0),
               fmt(r["per_cell_s"])) for r in rows])
    total = sum(r["wall_s"] for r in rows)
    lines.append(f"\nAll cells: {sum(r['cells'] for r in rows)} in "
                 f"{total / 60:.1f} min.")


# --- memcached under load (seed 001: IRQ suspension) -------------------------

def mc_points(points):
    planned = planned_reps(points)
    groups = defaultdict(list)
    for p in points:
        if p.get("status") in ("ok", "error") and "variant" in p:
            groups[(p["device"], p["load"], p["variant"])].append(p)
    agg = {}
    for key, every in groups.items():
        ok = [p for p in every if p.get("status") == "ok"]
        good = [p for p in ok if not rep_failure(p)]
        lg = [p["load_gen"] for p in good]
        a = {"qps": med([x["achieved_qps"] for x in lg]),
             "avg": med([x["latency_us"]["avg"] for x in lg]),
             "p95": med([x["latency_us"]["p95"] for x in lg]),
             "p99": med([x["latency_us"]["p99"] for x in lg]),
             "p99_spread": spread([x["latency_us"]["p99"] for x in lg]),
             "lag_p99_us": med([(x.get("lag_us") or {}).get("p99") for x in lg]),
             "cpu": med([p.get("server_cpu_pct") for p in ok]),
             "cpu_us_per_query": med([p.get("memcached_cpu_us_per_query") for p in ok]),
             "errors": sum(p["load_gen"].get("errors", 0) + p["load_gen"].get("timeouts", 0)
                           for p in ok),
             "sent": sum(p["load_gen"].get("sent", 0) for p in ok),
             "saturated": sum(bool(x.get("saturated")) for x in lg) * 2 > len(lg),
             "irq_suspend_ms": med([p.get("irq_suspend_ms") for p in every]),
             "name": key[2], "reps_ok": len(good), "cannot_engage": None}
        a.update(rep_fields(every, planned))
        a["loss_frac"] = a["errors"] / a["sent"] if a["sent"] else None
        a["sut"] = counts_of(ok, "sut")
        a["system"] = counts_of(ok, "system")
        a["not_measured"] = not_measured(ok)
        a["window_flags"] = window_flags(ok)
        a["perf"] = seed_tables.perf_of(ok)
        a["loss"] = {k: sum((p.get("loss") or {}).get("sut", {}).get(k, 0)
                            for p in ok if isinstance((p.get("loss") or {}).get("sut"), dict))
                     for k in ("rx_drops", "tcp_retrans_segs")}
        agg[key] = a
    return agg


def load_key(load):
    return float("inf") if load == "MAX" else load


def mc_tables(run, agg, lines, summary):
    for device in sorted({k[0] for k in agg}):
        loads = sorted({k[1] for k in agg if k[0] == device}, key=load_key)
        lines.append(f"\n### memcached on {device} ({run_name(run)}): medians; "
                     "latency in us; cpu = server core busy % in the window (system-wide "
                     "view of that core), mc us/q = memcached's own CPU time per query; per "
                     "query over the measured window: SUT device RX interrupts (and their "
                     "inverse, queries per RX interrupt: the seed's packets per interrupt) "
                     "and RX re-arms (napi_complete_done() true), SUT RX polls "
                     "with work from softirq / the application, IRQ suspend events, share of "
                     "the window suspended, softirq RX polls while suspended (count); "
                     "system-wide (secondary) NET_RX softirqs and context switches\n")
        if is_tcg(run):
            lines.append(f"{TCG_NOTE}\n")
        lines.append("| testcase | load | n | qps | avglat | 95%lat | 99%lat (spread) | cpu | "
                     "mc us/q | SUT RX irq/q | q/RX irq | SUT RX re-arm/q | SUT polls sirq/app | "
                     "SUT susp ev/q | SUT susp % | sirq polls in susp | re-arms in susp | "
                     "sys softirq/q | sys ctxsw/q | errors | sat |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
                     "---|---|---|")
        reasons, flags, resumes = {}, [], []
        for load in loads:
            for (d, cell_load, variant), a in sorted(agg.items(),
                                                     key=lambda kv: variant_key(kv[0][2])):
                if d != device or cell_load != load:
                    continue
                s, y = a["sut"], a["system"]
                frac = s["suspended_frac"]
                rx = fmt(s["rx_irqs"], 3) if s["rxtx_irqs"] is None else \
                    f"rx+tx {fmt(s['rxtx_irqs'], 3)}"
                lines.append(
                    f"| {variant} | {load} | {reps_text(a)} | {fmt(a['qps'], 0)} | "
                    f"{fmt(a['avg'], 0)} | {fmt(a['p95'], 0)} | {fmt(a['p99'], 0)} "
                    f"({fmt(a['p99_spread'][0], 0)}..{fmt(a['p99_spread'][1], 0)}) | "
                    f"{fmt(a['cpu'], 0)} | {fmt(a['cpu_us_per_query'], 0)} | {rx} | "
                    f"{fmt(1 / s['rx_irqs'] if s['rx_irqs'] else None, 1)} | "
                    f"{fmt(s.get('rx_rearms'), 3)} | "
                    f"{fmt(s['rx_polls_softirq'], 3)}/{fmt(s['rx_polls_app'], 3)} | "
                    f"{fmt(s['suspend_events'], 3)} | "
                    f"{fmt(frac * 100 if frac is not None else None, 0)} | "
                    f"{fmt(s['softirq_polls_suspended'], 0)} | "
                    f"{fmt(s.get('rx_rearms_suspended'), 0)} | "
                    f"{fmt(y['net_rx_softirqs'], 3)} | {fmt(y['ctx_switches'], 2)} | "
                    f"{a['errors']}/{a['sent']} | {'yes' if a['saturated'] else 'no'} |")
                reasons.update(a["not_measured"])
                flags += [f"{variant}@{load} {f}" for f in a.get("window_flags", [])]
                if s.get("resumes_all_reps"):
                    resumes.append(f"{variant}@{load} " + ", ".join(
                        f"{why} {n}" for why, n in sorted(s["resumes_all_reps"].items())))
        if resumes:
            lines.append("\nIRQ suspension resumes by reason (napi_irq_resume, all "
                         "repetitions): " + "; ".join(resumes))
        not_measured_lines(reasons, lines)
        window_flag_lines(flags, lines)
        model_irqs_line(device, lines)
        mc_findings(device, loads, agg, lines, summary)


def variant_key(name):
    order = ["base", "defer", "fullbusy", "napibusy", "prefer", "suspend"]
    for i, prefix in enumerate(order):
        if name.startswith(prefix):
            digits = name[len(prefix):]
            return (i, int(digits) if digits.isdigit() else 0)
    return (len(order), 0)


def mc_findings(device, loads, agg, lines, summary):
    variants = sorted({k[2] for k in agg if k[0] == device}, key=variant_key)
    sustained = [load for load in loads if load != "MAX" and all(
        (device, load, v) in agg and not agg[(device, load, v)]["saturated"] and
        not agg[(device, load, v)]["errors"] for v in variants)]
    suspends = [v for v in variants if v.startswith("suspend")]
    defers = [v for v in variants if v.startswith("defer")]
    found = {"device": device, "highest_sustained_load": sustained[-1] if sustained else None}
    if sustained and suspends and (device, sustained[-1], "fullbusy") in agg:
        top, full = sustained[-1], agg[(device, sustained[-1], "fullbusy")]
        for s in suspends:
            a = agg[(device, top, s)]
            found[f"{s}_over_fullbusy_at_{top}"] = {
                k: ratio_value(a, full, "fullbusy", k) for k in ("qps", "p99")}
    low = loads[0] if loads else None
    for s in suspends:
        a = agg.get((device, low, s))
        if not a:
            continue
        for ref in defers + ["fullbusy"]:
            b = agg.get((device, low, ref))
            if b:
                found[f"{s}_cpu_over_{ref}_at_{low}"] = ratio_value(a, b, ref, "cpu")
    found["sut_rx_irqs_per_query"] = {f"{v}@{load}": agg[(device, load, v)]["sut"]["rx_irqs"]
                                      for load in loads for v in variants
                                      if (v == "base" or v.startswith(("defer", "suspend")))
                                      and (device, load, v) in agg}
    summary["mc_findings"].append(found)
    lines.append(f"\nFindings on {device}: " + json.dumps(found))


# --- the series' benchmark goals, pass/fail per device -----------------------

GOAL_THREADED = "threaded busy poll at the lowest rate"
GOAL_SUSPEND = "IRQ suspension at the saturated point"
GOAL_XSK = "IRQ suspension for AF_XDP at the lowest rate"
XSK_IRQ_RATIO = 0.2     # xsk-suspend's RX IRQs (re-arms) per request vs xsk-prefer's
GOAL_OFF = ("features off: NAPI core instructions ≤ base + 0.5 %, SUT counts within ± 0.5 % "
            "of the base, at the lowest rate")
# Devices whose interrupt counts cannot meet an IRQ goal, and why.
NO_IRQS = {"netdevsim": "netdevsim has no interrupts",
           "igb": "QEMU's 82576 model neither auto-masks a vector when it fires nor stays "
                  "quiet at throttle expiry (hw/net/igb_core.c): RX IRQs cannot show masking"}
# Devices whose model polls while suspended on IRQs the driver never
# re-armed: there the re-arms while suspended judge the suspension.
MODEL_POLLS = {"igb": "its RX IRQs, which the driver did not re-arm, each schedule a poll; a "
                      "real 82576 auto-masks the vector (EIAM) until the driver re-arms it"}
# Devices the base and the series do not run the same driver for.
NOT_LIKE_FOR_LIKE = {"netdevsim": "the series changes netdevsim's RX model (03-irq-suspend/0006 "
                                  "models RX interrupt masking): the base runs another driver"}
SATURATED_CPU = 95.0    # % busy of the server core in the window
OFF_TOLERANCE = 0.005   # features off: patched/base counts within 1 ± this,
INSN_TOLERANCE = 0.005  # and instructions at most 1 + this
# The series adds checks to the NAPI core: well under the base's count is
# not less work but work not counted (a CPU, a range or a clone missed).
# The emulator counts exactly; repetitions moved by 3 % at most (igb).
INSN_FLOOR = 0.95
# Worst first: a goal takes its worst criterion's status.
STATUS_ORDER = ("broken", "missed", "unresolved", "not measured", "n/a", "pass")


def worst(statuses):
    return min(statuses, key=STATUS_ORDER.index)


def span(values, nd=3):
    """VALUES as one figure, or their range over the repetitions; a NaN
    is shown, not compared away."""
    if not values or None in values:
        return "-"
    numbers = [v for v in values if not math.isnan(v)]
    if not numbers:
        return "NaN"
    lo, hi = fmt(min(numbers), nd), fmt(max(numbers), nd)
    text = lo if lo == hi else f"{lo}..{hi}"
    return text + ", NaN" if len(numbers) < len(values) else text


def sane_reps(a):
    """The repetitions of the aggregated cell A a goal can judge."""
    return [r for r in a["per_rep"] if not r["problem"]]


def sut_values(a, *keys):
    """Per sane repetition of A: the sum of its SUT counts KEYS (None
    where one is missing)."""
    return [sum_of(r["sut"], keys) for r in sane_reps(a)]


def broken_reps(a, name=""):
    """'[NAME ]rep N, M: why' for the repetitions of A that cannot count."""
    by_why = defaultdict(list)
    for r in a["per_rep"]:
        if r["problem"]:
            by_why[r["problem"]].append(str(r["rep"]))
    return [f"{name + ' ' if name else ''}rep {', '.join(reps)}: {why}"
            for why, reps in by_why.items()]


def judged_text(a):
    """n=repetitions judged/planned."""
    return f"n={len(sane_reps(a))}/{a['reps']}"


def unmeasured(label, why, values=True):
    """A criterion without a figure; VALUES empty: no repetition to judge."""
    why = (why or "no figure") if values else "no repetition to judge"
    return "not measured", f"{label}: not measured ({why})"


NOT_COUNTS = "a negative or NaN figure is no count"


def not_counts(values):
    """Whether VALUES hold a figure no count can be: counts and their
    ratios are never negative nor NaN; such a figure comes from a counter
    that went backwards or a division by nothing."""
    return any(math.isnan(v) or v < 0 for v in values)


def check(label, values, ok, limit, why=None, nd=3, tolerance=None, shown=None, miss_by=None):
    """One criterion judged on every repetition's VALUES: (status, text).
    It passes if every one passes, is missed if none does, unresolved if
    only some do or, given a TOLERANCE, they spread wider than it (noise
    that large cannot tell a miss) unless every one misses by more than
    that spread (MISS_BY(v): how far V is outside the limit); not
    measured (WHY) if a figure is missing. SHOWN replaces the values'
    range in the text."""
    if not values or None in values:
        return unmeasured(label, why, values)
    if not_counts(values):
        return "broken", (f"{label} {shown or span(values, nd)}: {NOT_COUNTS}")
    passed = [ok(v) for v in values]
    spread = max(values) - min(values)
    wide = tolerance is not None and spread > tolerance and not (
        miss_by is not None and min(miss_by(v) for v in values) > spread)
    status = "pass" if all(passed) else \
        "missed" if not any(passed) and not wide else "unresolved"
    prefix = {"pass": "", "missed": "MISSED ", "unresolved": "UNRESOLVED "}[status]
    return status, f"{prefix}{label} {shown or span(values, nd)} ({limit})"


def ratio_refusal(label, values, refs, why, ref_name):
    """Why VALUES / REFS (per repetition) can give no verdict, as a
    criterion, or None: a figure is missing, one is no count (negative
    or NaN), or a reference is under MIN_REF per request, too small to
    divide by (broken, never a pass)."""
    if not values or not refs or None in values + refs:
        return unmeasured(label, why, values and refs)
    # min() and max() would compare a NaN away.
    if not_counts(values + refs):
        return "broken", f"{label} {span(values)} of {ref_name} {span(refs)}: {NOT_COUNTS}"
    if min(refs) < MIN_REF:
        return "broken", (f"{label}: no ratio, {ref_name} {fmt(min(refs), 3)} per request "
                          f"(< {MIN_REF})")
    return None


def extremes(values, refs):
    """The smallest and the largest ratio of any repetition's value to
    any repetition's reference."""
    return [min(values) / max(refs), max(values) / min(refs)]


def goal_row(goal, device, where, checks, broken=()):
    """A goal is broken if a repetition it rests on is (BROKEN: 'rep N:
    why') or a ratio has no reference; else it takes its worst
    criterion's status. It passes only if every criterion does, and
    partially (saying which and why) if some do not apply to the device."""
    statuses = [status for status, _ in checks]
    if "pass" not in statuses:
        statuses.append("not measured")     # n/a alone shows nothing
    status = "broken" if broken else worst(statuses)
    if status == "broken":
        result = "broken: " + "; ".join(list(broken) + [t for s, t in checks if s == "broken"])
    elif status == "n/a":
        status, result = "partial", "pass (partial: " + "; ".join(
            t for s, t in checks if s == "n/a") + ")"
    else:
        result = status
    return {"goal": goal, "device": device, "where": where, "status": status, "result": result,
            "figures": "; ".join(text for _, text in checks)}


REARMS_LABEL = "SUT RX re-arms (napi_complete_done() true) per request"


def rearms_measured(a):
    values = sut_values(a, "rx_rearms")
    return bool(values) and None not in values


def irq_check(device, label, values, limit, why, rearms_judge=False):
    """The RX IRQ criterion; n/a where the device cannot show it, or
    where they were not counted and the re-arms (REARMS_JUDGE: measured,
    and judged beside it) can."""
    if device in NO_IRQS:
        return "n/a", f"{label}: n/a ({NO_IRQS[device]})"
    if rearms_judge and (not values or None in values):
        return "n/a", f"{label}: n/a (not measured: {why or 'no figure'}; the re-arms judge)"
    return check(label, values, lambda v: v <= limit, f"≤ {limit}", why)


def rx_irq_label(label, *cells):
    """LABEL, saying so where the RX IRQs of CELLS come from vectors RX
    and TX share (benchlib.window_counts() counts those as RX)."""
    if any(r["sut"].get("rxtx_irqs") is not None for a in cells for r in sane_reps(a)):
        return f"{label} (RX+TX vectors, counted as RX)"
    return label


def goal_threaded(device, rr_agg):
    """Threaded busy poll at the device's lowest rate, in every
    repetition: SUT RX polls with work from softirq or the application
    ≤ 0.02 per request, SUT RX re-arms ≤ 0.02 per request, SUT RX IRQs
    ≤ 0.02 per request (not on a device whose IRQs cannot show it, where
    the re-arms were measured), packets polled by the kthread = requests
    ± 1 %, nothing lost. One row per transport."""
    cells = {k: a for k, a in rr_agg.items() if k[0] == device and k[4] == "threaded-busy"}
    if not cells:
        return [goal_row(GOAL_THREADED, device, "-", [(
            "not measured", "threaded-busy was not run on this device (base kernel or --modes)")])]
    rows = []
    for transport in sorted({k[1] for k in cells}):
        key = min((k for k in cells if k[1] == transport), key=lambda k: (k[2], k[3]))
        a = cells[key]
        why, sane = a["not_measured"], sane_reps(a)
        checks = [
            check("SUT RX polls with work from softirq+app per request",
                  sut_values(a, "rx_polls_softirq", "rx_polls_app"), lambda v: v <= 0.02,
                  "≤ 0.02", why.get("polls")),
            # What the kernel controls, on every device; its IRQs too
            # where the device shows them.
            check(REARMS_LABEL, sut_values(a, "rx_rearms"), lambda v: v <= 0.02, "≤ 0.02",
                  why.get("rearms")),
        ]
        if device not in NO_IRQS or not rearms_measured(a):
            checks.append(irq_check(device, rx_irq_label("SUT RX IRQs per request", a),
                                    sut_values(a, "rx_irqs"), 0.02, why.get("irqs"),
                                    rearms_measured(a)))
        checks += [
            check("packets polled by the kthread per request", sut_values(a, "kthread_packets"),
                  lambda v: abs(v - 1) <= 0.01, "1 ± 0.01", why.get("polls")),
            check("lost", [r["lost"] if r["sent"] else None for r in sane], lambda v: v == 0,
                  "0", "nothing sent",
                  shown=f"{sum(r['lost'] for r in sane)}/{sum(r['sent'] for r in sane)}"),
        ]
        rows.append(goal_row(GOAL_THREADED, device,
                             f"{transport.upper()} {key[2]} pkt/s + {key[3]} us, {judged_text(a)}",
                             checks, broken_reps(a)))
    return rows


def suspended_polls_check(device, a, why):
    """No softirq RX poll while suspended in any repetition of A; n/a on
    a device in MODEL_POLLS where the re-arms were counted (the model's
    polls: the re-arms judge)."""
    polls = sut_values(a, "softirq_polls_suspended")
    if device in MODEL_POLLS and rearms_measured(a):
        return ("n/a", f"softirq RX polls while suspended {span(polls, 0)}: n/a "
                       f"(the model's: {MODEL_POLLS[device]})")
    return check("softirq RX polls while suspended", polls, lambda v: v == 0, "0", why, nd=0)


def xsk_ratio_check(label, a, b, key):
    """KEY per request of the xsk-suspend cell A ≤ XSK_IRQ_RATIO × that
    of the xsk-prefer cell B in every pair of repetitions; where B's are
    under MIN_REF, too few to divide by (a receiver that keeps calling
    keeps them low with prefer busy polling alone), A's must be too."""
    if not b:
        return unmeasured(label, "xsk-prefer not run at this rate")
    values, refs = sut_values(a, key), sut_values(b, key)
    what = {"rx_irqs": "irqs", "rx_rearms": "rearms"}.get(key, "polls")
    why = a["not_measured"].get(what) or b["not_measured"].get(what)
    if key == "rx_irqs" and (None in values + refs or not values) and rearms_measured(a):
        return "n/a", f"{label}: n/a (not measured: {why or 'no figure'}; the re-arms judge)"
    refusal = ratio_refusal(label, values, refs, why, "xsk-prefer's")
    if refusal and refusal[0] == "broken" and not not_counts(values + refs):
        return check(label, values, lambda v: v <= MIN_REF,
                     f"≤ {MIN_REF}: xsk-prefer's {span(refs)} is too few to divide by")
    return refusal or check(label, extremes(values, refs), lambda v: v <= XSK_IRQ_RATIO,
                            f"≤ {XSK_IRQ_RATIO} × {span(refs)}", shown=span(values))


def goal_xsk(device, rr_agg):
    """AF_XDP suspension (the extension) at the device's lowest rate, in
    every repetition: the NAPI suspended (suspend events) for ≥ 90 % of
    the window, no RX re-arm and no softirq RX poll while suspended (the
    model's on a device in MODEL_POLLS: n/a there where the re-arms were
    counted), softirq RX polls with work, RX IRQs and RX re-arms per
    request ≤ XSK_IRQ_RATIO × xsk-prefer's (see xsk_ratio_check(); the
    IRQs n/a where the device cannot show them), nothing lost. No row
    where neither AF_XDP mode ran."""
    cells = {k: a for k, a in rr_agg.items() if k[0] == device and k[4] == "xsk-suspend"}
    if not cells:
        if any(k[0] == device and k[4] == "xsk-prefer" for k in rr_agg):
            return [goal_row(GOAL_XSK, device, "-", [(
                "not measured", "xsk-suspend was not run on this device (base kernel or --modes)")])]
        return []
    key = min(cells, key=lambda k: (k[2], k[3]))
    a, b = cells[key], rr_agg.get(key[:4] + ("xsk-prefer",))
    why, sane = a["not_measured"], sane_reps(a)
    polls_check = suspended_polls_check(device, a, why.get("suspension"))
    label = "SUT softirq RX polls with work per request vs xsk-prefer's"
    if device in MODEL_POLLS and rearms_measured(a):
        work_polls = ("n/a", f"{label} {span(sut_values(a, 'rx_polls_softirq'))} vs "
                             f"{span(sut_values(b, 'rx_polls_softirq')) if b else '-'}: n/a "
                             f"(the model's: {MODEL_POLLS[device]})")
    else:
        work_polls = xsk_ratio_check(label, a, b, "rx_polls_softirq")
    frac = [v * 100 if v is not None else None for v in sut_values(a, "suspended_frac")]
    irqs = ("n/a", f"SUT RX IRQs per request: n/a ({NO_IRQS[device]})") if device in NO_IRQS \
        else xsk_ratio_check(rx_irq_label("SUT RX IRQs per request vs xsk-prefer's", a), a, b,
                             "rx_irqs")
    checks = [
        check("suspend events per request", sut_values(a, "suspend_events"), lambda v: v > 0,
              "> 0", why.get("suspension")),
        check("time suspended", frac, lambda v: v >= 90, "≥ 90 %", why.get("suspension"),
              shown=f"{span(frac, 1)} %"),
        check("SUT RX re-arms while suspended", sut_values(a, "rx_rearms_suspended"),
              lambda v: v == 0, "0", why.get("rearms") or why.get("suspension"), nd=0),
        polls_check,
        work_polls,
        irqs,
        xsk_ratio_check("SUT RX re-arms per request vs xsk-prefer's", a, b, "rx_rearms"),
        check("lost", [r["lost"] if r["sent"] else None for r in sane], lambda v: v == 0,
              "0", "nothing sent",
              shown=f"{sum(r['lost'] for r in sane)}/{sum(r['sent'] for r in sane)}"),
    ]
    return [goal_row(GOAL_XSK, device, f"XDP {key[2]} pkt/s + {key[3]} us, {judged_text(a)}",
                     checks, broken_reps(a) + (broken_reps(b, "xsk-prefer") if b else []))]


def saturated_point(device, mc_agg, variant):
    """The lowest load at which every repetition of VARIANT that has a
    figure kept the server core ≥ 95 % busy, or None."""
    def saturated(a):
        cpus = [r["cpu"] for r in a["per_rep"] if r["cpu"] is not None]
        return bool(cpus) and min(cpus) >= SATURATED_CPU
    loads = sorted((k[1] for k, a in mc_agg.items() if k[0] == device and k[2] == variant
                    and saturated(a)), key=load_key)
    return loads[0] if loads else None


def suspension_irq_check(device, a, b, defer, load):
    """(criterion, the defer cell's broken repetitions): SUT RX IRQs per
    query of the suspend cell A ≤ 0.1 × those of B, DEFER's at LOAD."""
    label = rx_irq_label(f"SUT RX IRQs per query vs {defer}'s", a)
    if device in NO_IRQS:
        return ("n/a", f"SUT RX IRQs per query: n/a ({NO_IRQS[device]})"), []
    if not b:
        return unmeasured(label, f"{defer} not run at load {load}"), []
    values, refs = sut_values(a, "rx_irqs"), sut_values(b, "rx_irqs")
    # Not counted on the device: the re-arms while suspended, judged
    # beside, can.
    rearms = sut_values(a, "rx_rearms_suspended")
    if values and None in values and rearms and None not in rearms:
        why = a["not_measured"].get("irqs") or "no figure"
        return ("n/a", f"{label}: n/a (not measured: {why}; the re-arms judge)"), \
            broken_reps(b, defer)
    criterion = ratio_refusal(label, values, refs, a["not_measured"].get("irqs") or
                              b["not_measured"].get("irqs"), f"{defer}'s") or \
        check(label, extremes(values, refs), lambda v: v <= 0.1, f"≤ 0.1 × {span(refs)}",
              shown=span(values))
    return criterion, broken_reps(b, defer)


def goal_suspension(device, mc_agg):
    """At the saturated point of each suspendX, in every repetition: SUT
    RX IRQs per query ≤ 0.1 × deferX's, suspended ≥ 90 % of the window,
    no softirq RX poll while suspended (on a device in MODEL_POLLS, the
    model's: n/a where the re-arms were counted), no RX re-arm while
    suspended."""
    suspends = sorted({k[2] for k in mc_agg if k[0] == device and k[2].startswith("suspend")},
                      key=variant_key)
    if not suspends:
        return [goal_row(GOAL_SUSPEND, device, "-", [(
            "not measured", "no suspendX variant was run on this device")])]
    rows = []
    for variant in suspends:
        defer = "defer" + variant[len("suspend"):]
        load = saturated_point(device, mc_agg, variant)
        if load is None:
            busiest = max(((a["cpu"], k[1]) for k, a in mc_agg.items()
                           if k[0] == device and k[2] == variant and a["cpu"] is not None),
                          default=(None, None), key=lambda x: x[0])
            rows.append(goal_row(GOAL_SUSPEND, device, variant, [(
                "not measured", f"no load kept the server core ≥ {SATURATED_CPU:.0f} % busy "
                f"(busiest: {fmt(busiest[0], 0)} % at load {busiest[1]})")]))
            continue
        a = mc_agg[(device, load, variant)]
        irq, defer_broken = suspension_irq_check(device, a, mc_agg.get((device, load, defer)),
                                                 defer, load)
        why = a["not_measured"].get("suspension")
        frac = [v * 100 if v is not None else None for v in sut_values(a, "suspended_frac")]
        polls_check = suspended_polls_check(device, a, why)
        checks = [irq,
                  check("time suspended", frac, lambda v: v >= 90, "≥ 90 %", why,
                        shown=f"{span(frac, 1)} %"),
                  polls_check,
                  check("SUT RX re-arms while suspended", sut_values(a, "rx_rearms_suspended"),
                        lambda v: v == 0, "0", a["not_measured"].get("rearms") or why, nd=0)]
        timeout = a.get("irq_suspend_ms")
        rows.append(goal_row(GOAL_SUSPEND, device,
                             f"{variant} at load {load}"
                             + (f", irq-suspend-timeout {timeout:g} ms" if timeout else "")
                             + f", {judged_text(a)}", checks,
                             broken_reps(a, variant) + defer_broken))
    return rows


def cell_text(key):
    """An rr cell's transport and workload."""
    return f"{key[1]} {key[2]}+{key[3]}us"


def off_cell(row, metric, label):
    """(status, text, deviation from 1) of patched/base METRIC in the
    cell of baseline row ROW, over every repetition of both kernels:
    instructions may only grow by INSN_TOLERANCE, counts may move either
    way by OFF_TOLERANCE."""
    key, new, base = row["key"], row["patched"], row["base"]
    where = f"{label} patched/base at {cell_text(key)}"
    why = why_no_ratio(new, base, "base", None)
    if why:
        return unmeasured(where, why) + (0,)
    values, refs = (sut_values(x, *BASELINE_SUMS[metric]) for x in (new, base))
    # Why a count is missing, as the cells recorded it (the instruction
    # counter: no plugin in the boot, a mark missing from the window).
    missing = "; ".join(sorted({f"{side}: {x['not_measured'][metric]}" for side, x in
                                (("patched", new), ("base", base))
                                if metric in x.get("not_measured", {})})) or None
    if metric == "napi_core_insns" and not missing:
        missing = ("no instruction counter in these boots: make bench loads "
                   "bench/qemu-plugin/napi_insn.so under TCG for the baseline plan")
    refused = ratio_refusal(where, values, refs, missing, "the base")
    if refused:
        return refused + (0,)
    ratios = extremes(values, refs)
    if metric == "napi_core_insns":
        # Rows of runs on disk know what each kernel counted.
        differ = "insn_functions" in row and insn_function_difference(row["insn_functions"])
        if differ:
            return "broken", f"{where}: {differ}", 0
        if min(ratios) < INSN_FLOOR:
            return "broken", (f"{where}: {span(ratios, 4)}, under {INSN_FLOOR} of the base: "
                              "not all of the series' work was counted"), 0
        return check(where, ratios, lambda v: v <= 1 + INSN_TOLERANCE, f"≤ {1 + INSN_TOLERANCE}",
                     tolerance=INSN_TOLERANCE, nd=4,
                     miss_by=lambda v: v - 1 - INSN_TOLERANCE) + (max(ratios) - 1,)
    return check(where, ratios, lambda v: abs(v - 1) <= OFF_TOLERANCE, f"1 ± {OFF_TOLERANCE}",
                 tolerance=OFF_TOLERANCE, nd=4,
                 miss_by=lambda v: abs(v - 1) - OFF_TOLERANCE) + (max(abs(v - 1) for v in ratios),)


def off_check(device, rows, metric, label):
    """One count's criterion over every cell: the worst cell's."""
    if metric == "rx_irqs" and device in NO_IRQS:
        return "n/a", f"{label}: n/a ({NO_IRQS[device]})"
    status, text, _ = min((off_cell(r, metric, label) for r in rows),
                          key=lambda c: (STATUS_ORDER.index(c[0]), -c[2]))
    return status, f"{text}, worst of {len(rows)} cells"


def off_irq_checks(device, rows):
    """The RX IRQ criterion of the features-off goal, and the RX
    re-arms' where the IRQs cannot judge (n/a on the device, or not
    counted) and the re-arms were counted: what the kernel controls."""
    irqs = off_check(device, rows, "rx_irqs", rx_irq_label(
        "SUT RX IRQs", *(r[side] for r in rows for side in ("base", "patched"))))
    rearms = off_check(device, rows, "rx_rearms", "SUT RX re-arms")
    if irqs[0] not in ("n/a", "not measured") or rearms[0] == "not measured":
        return [irqs]
    if irqs[0] == "not measured":
        irqs = ("n/a", f"{irqs[1]}; the re-arms judge")
    return [irqs, rearms]


def goal_off(device, baseline):
    """Interrupt mode, patched / base in the same run, the device's
    lowest-rate cells (above it TCG's batching makes the counts bimodal),
    every repetition: the instructions executed in the NAPI core per
    request at most 0.5 % above the base's, SUT RX polls with work, RX IRQs
    (the RX re-arms where those cannot judge) and NET_RX softirqs on the
    SUT's CPUs per request within ± 0.5 %.
    BASELINE: baseline_rows(), None without a base run."""
    if baseline is None:
        return goal_row(GOAL_OFF, device, "-", [(
            "not measured", "no base kernel in this run (make bench BASELINE=1)")])
    if device in NOT_LIKE_FOR_LIKE:
        return goal_row(GOAL_OFF, device, "-", [("n/a", f"n/a ({NOT_LIKE_FOR_LIKE[device]})")])
    rows = [r for r in baseline if r["key"][0] == device]
    rows = [r for r in rows if r["key"][2] == min(x["key"][2] for x in rows)]
    if not rows:
        return goal_row(GOAL_OFF, device, "-", [(
            "not measured", "no interrupt-mode cell on both kernels")])
    checks = [off_check(device, rows, metric, label) for metric, label in (
        ("napi_core_insns", "NAPI core instructions"),
        ("rx_polls_with_work", "SUT RX polls with work"),
        ("net_rx_softirqs_sut_cpus", "NET_RX softirqs on the SUT's CPUs"))]
    checks += off_irq_checks(device, rows)
    broken = [b for r in rows for side in ("base", "patched")
              for b in broken_reps(r[side], f"{side} {cell_text(r['key'])}")]
    return goal_row(GOAL_OFF, device, f"{len(rows)} interrupt-mode cells", checks, broken)


def goal_plans(run, bench):
    """The plan records of RUN's BENCH that goals judge: the latency
    grid's, not the collapse or on/off experiments'."""
    return [p for p in run["plan_records"] if p.get("bench") == bench
            and p.get("experiment", "grid") == "grid"]


def missing_results(runs):
    """What a run planned and has no result for, as [{"kernel", "plan",
    "bench", "device", "transport" (None: the whole device), "why",
    "modes" (rr: what the plans naming the device set out to run)}]: a
    device whose pair could not be set up (its skip record), a device
    its plan record names and no cell or skip record does (the run
    stopped before it), or a transport of the latency grid that the plans
    naming the device set out to run (where none does, that the run's
    other devices got) and it did not. The spinning plan's boots judge no
    goal."""
    out = []
    for run in runs:
        if run["plan"] == "spinning":
            continue
        for bench in ("rr", "mc"):
            cells = [c for c in run[bench] if c.get("status") in ("ok", "error")]
            ran = {c["device"] for c in cells}
            plans = goal_plans(run, bench)
            never = {d for p in plans for d in p.get("devices", [])} - ran - \
                {device for kind, device in run["skipped"] if kind == bench}
            here = []
            for (kind, device), error in sorted(run["skipped"].items()):
                if kind == bench and device not in ran:
                    here.append({"device": device, "transport": None,
                                 "why": f"{run['dir']}: {bench} set-up failed: {error}"[:160]})
            here += [{"device": device, "transport": None,
                      "why": f"{run['dir']}: {bench} planned, no cell recorded (the run "
                             "stopped before it)"} for device in sorted(never)]
            if bench == "rr":
                transports = {c["transport"] for c in cells} | \
                    {t for p in plans for t in p.get("transports", [])}
                planned = defaultdict(set)
                for p in plans:
                    for device in p.get("devices", []):
                        planned[device] |= set(p.get("transports", []))
                for device in sorted(ran):
                    expected = planned.get(device) or transports
                    here += [{"device": device, "transport": transport,
                              "why": f"{run['dir']}: no {transport.upper()} cell recorded "
                                     "(planned, or the run's other devices have them)"}
                             for transport in sorted(expected - {c["transport"] for c in cells
                                                                 if c["device"] == device})]
            for m in here:
                m.update(kernel=run["kernel"], plan=run["plan"], bench=bench)
                if bench == "rr":
                    m["modes"] = sorted({mode for p in plans if m["device"] in p.get("devices", [])
                                         for mode in p.get("modes", [])})
            out += here
    return out


def missing_rows(goal, device, gone, rows):
    """ROWS of GOAL on DEVICE with the results GONE (missing_results()):
    a device without any replaces them, a transport without any is a
    row of its own; each broken, saying why."""
    whole = [m["why"] for m in gone if m["transport"] is None]
    if whole:
        return [goal_row(goal, device, "-", [], whole)]
    return rows + [goal_row(goal, device, m["transport"].upper(), [], [m["why"]]) for m in gone]


def goals(rr_by_kernel, mc_by_kernel, baseline, missing=()):
    """The goal rows of each kernel's cells ({kernel label: aggregated
    cells}: one kernel's cell never stands for another's), a broken row
    for each planned device or transport without results (MISSING:
    missing_results()), and the features-off rows of the baseline."""
    missing = list(missing)
    kernels = sorted(set(rr_by_kernel) | set(mc_by_kernel) |
                     {m["kernel"] for m in missing if m["plan"] != "baseline"}) or [None]
    devices = sorted({k[0] for agg in list(rr_by_kernel.values()) + list(mc_by_kernel.values())
                      for k in agg} | {r["key"][0] for r in baseline or []} |
                     {m["device"] for m in missing})
    rows = []
    for kernel in kernels:
        rr_agg, mc_agg = rr_by_kernel.get(kernel, {}), mc_by_kernel.get(kernel, {})
        for device in devices:
            gone = [m for m in missing if m["plan"] != "baseline" and m["kernel"] == kernel
                    and m["device"] == device]
            here = (missing_rows(GOAL_THREADED, device, [m for m in gone if m["bench"] == "rr"],
                                 goal_threaded(device, rr_agg))
                    + missing_rows(GOAL_XSK, device, [m for m in gone if m["bench"] == "rr"
                                                      and "xsk-suspend" in m.get("modes", [])
                                                      and m["transport"] in (None, "xdp")],
                                   goal_xsk(device, rr_agg))
                    + missing_rows(GOAL_SUSPEND, device, [m for m in gone if m["bench"] == "mc"],
                                   goal_suspension(device, mc_agg)))
            rows += [dict(r, kernel=kernel) for r in here]
    for device in devices:
        gone = [m for m in missing if m["plan"] == "baseline" and m["device"] == device]
        rows += [dict(r, kernel="patched/base")
                 for r in missing_rows(GOAL_OFF, device, gone, [goal_off(device, baseline)])]
    return rows


def goal_lines(rows, lines):
    lines.append("## Goals, from this run\n")
    lines.append("| goal | kernel | device | where | result | figures |")
    lines.append("|---|---|---|---|---|---|")
    for r in rows:
        lines.append(f"| {r['goal']} | {r['kernel'] or '-'} | {r['device']} | {r['where']} | "
                     f"**{r['result']}** | {r['figures']} |")


# --- plots --------------------------------------------------------------------

def plots(top, rr_agg, mc_agg):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_report: matplotlib missing, no plots", file=sys.stderr)
        return []
    made = []
    combos = sorted({k[:2] for k in rr_agg})
    if combos:
        fig, axes = plt.subplots(len(combos), 1, figsize=(11, 3.6 * len(combos)), squeeze=False)
        for ax, (device, transport) in zip(axes[:, 0], combos):
            keys = sorted({k[2:4] for k in rr_agg if k[:2] == (device, transport)},
                          key=lambda w: WORKLOAD_ORDER.get(w, 99))
            modes = [m for m in MODE_ORDER if any(k[4] == m for k in rr_agg)]
            width = 0.8 / max(len(modes), 1)
            for i, m in enumerate(modes):
                xs, p50, p99 = [], [], []
                for j, w in enumerate(keys):
                    a = rr_agg.get((device, transport) + w + (m,))
                    if a and a["p50"] is not None:
                        xs.append(j + i * width)
                        p50.append(a["p50"])
                        p99.append(a["p99"])
                ax.bar(xs, p50, width, label=f"{m} p50")
                ax.scatter(xs, p99, marker="_", s=200, color="black")
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))])
            ax.set_xticklabels([f"{r} pps + {d} us" for r, d in keys])
            # Log scale: overloaded spinning modes under TCG reach seconds.
            ax.set_yscale("log")
            ax.set_ylabel("latency (us), bar p50, tick p99")
            ax.set_title(f"request/response latency, {device} {transport}")
            ax.legend(fontsize="small", ncol=3)
        fig.tight_layout()
        path = os.path.join(top, "rr_latency.png")
        fig.savefig(path, dpi=90)
        made.append(path)
    devices = sorted({k[0] for k in mc_agg})
    if devices:
        fig, axes = plt.subplots(len(devices), 2, figsize=(12, 4 * len(devices)), squeeze=False)
        for row, device in zip(axes, devices):
            for v in sorted({k[2] for k in mc_agg if k[0] == device}, key=variant_key):
                pts = sorted(((load, a) for (d, load, vv), a in mc_agg.items()
                              if d == device and vv == v and load != "MAX" and a["qps"] is not None),
                             key=lambda x: x[0])
                row[0].plot([a["qps"] for _, a in pts], [a["p99"] for _, a in pts], "o-", label=v)
                row[1].plot([load for load, _ in pts], [a["cpu"] for _, a in pts], "o-", label=v)
            row[0].set(xlabel="achieved QPS", ylabel="p99 latency (us)", yscale="log",
                       title=f"memcached p99 vs load, {device}")
            row[1].set(xlabel="target QPS", ylabel="server CPU busy %",
                       title=f"memcached CPU vs load, {device}")
            row[0].legend(fontsize="small")
        fig.tight_layout()
        path = os.path.join(top, "mc_load.png")
        fig.savefig(path, dpi=90)
        made.append(path)
    return made


def seed_table_lines(runs):
    """Seed 000's and seed 001's own tables (bench/seed_tables.py) for each
    run and device: what a run on two hosts is compared with."""
    lines = ["# The seeds' tables", "",
             "Seed 000: \"Add support to do threaded napi busy poll\" (net-next v4); "
             "seed 001: \"Suspend IRQs during application busy periods\" (net-next v3). "
             "Same layout as their cover letters; the figures are this run's."]
    for run in runs:
        if run["plan"] == "baseline":
            continue
        rr, mc = rr_cells(run["rr"]), mc_points(run["mc"])
        for device, transport in sorted({k[:2] for k in rr}):
            table = seed_tables.seed000_table(rr, device, transport, WORKLOAD_ORDER)
            if table:
                lines += ["", f"## Seed 000: {device}, {transport.upper()} ({run['dir']}, "
                          f"{run_name(run)})", ""]
                lines += ([TCG_NOTE, ""] if is_tcg(run) else []) + table
        for device in sorted({k[0] for k in mc}):
            blocks = seed_tables.seed001_blocks(mc, device, variant_key, load_key)
            if blocks:
                lines += ["", f"## Seed 001: memcached on {device} ({run['dir']}, "
                          f"{run_name(run)})", ""]
                lines += ([TCG_NOTE, ""] if is_tcg(run) else []) + blocks
    return lines


def main():
    top = sys.argv[1]
    runs = load_runs(top)
    if not runs:
        print(f"bench_report: no runs under {top}", file=sys.stderr)
        return 1
    # Rates are scaled to what the VM sustains: order rows by the seed's list.
    for run in runs:
        for c in run["rr"] + run["collapse"]:
            if "workload" in c:
                WORKLOAD_ORDER[(c["rate"], c["delay_us"])] = c["workload"]
    summary = {"runs": [], "rr": [], "baseline": [], "mc_findings": [], "collapse": [],
               "on_off": []}
    lines = []
    rc = 0
    # Keyed by kernel: two kernels' runs of one plan share cell keys.
    main_rr, main_mc = defaultdict(dict), defaultdict(dict)
    for run in runs:
        m = run["machine"]
        lines.append(f"- {run['dir']}: {run['label']} kernel {m.get('kernel', '?')}, plan "
                     f"{run['plan']}, {m.get('vcpus', '?')} vCPUs ({m.get('cpu_model', '?')}), "
                     f"accelerator {run['accel']}")
        cells = run["rr"] + run["collapse"] + run["on_off"] + run["mc"]
        errors = [c for c in cells if c.get("status") == "error"]
        ok = [c for c in cells if c.get("status") == "ok"]
        summary["runs"].append({"dir": run["dir"], "kernel": run["label"], "plan": run["plan"],
                                "accel": run["accel"], "machine": m, "problem": run["problem"],
                                "cells_ok": len(ok),
                                "cells_failed": len(errors),
                                "errors": [c.get("error") for c in errors][:20]})
        if errors:
            lines.append(f"  - {len(errors)} cells failed (shown in the tables), first: "
                         f"{errors[0].get('error')}")
        if run["problem"]:
            lines.append(f"  - no goal counts this run: {run['problem']}")
        if not ok:
            lines.append("  - no usable cell")
            rc = 1
        if is_tcg(run):
            lines.append(f"  - {TCG_NOTE}")
        if run["plan"] != "baseline":
            # The goals read the plans' own cells; the spinning plan's
            # boots serve the spinning modes' verdicts (spinning_rows()).
            if run["plan"] != "spinning":
                main_rr[run["kernel"]].update(rr_cells(run["rr"]))
                main_mc[run["kernel"]].update(mc_points(run["mc"]))
            rr_tables(run, rr_cells(run["rr"]), lines, summary)
            mc_tables(run, mc_points(run["mc"]), lines, summary)
            collapse_lines(run, rr_cells(run["collapse"]), lines, summary)
            on_off_lines(run, rr_cells(run["on_off"]), lines, summary)
    rr_ratio_lines(summary, lines)
    baseline = baseline_of(runs)
    baseline_lines(runs, baseline, lines, summary)
    insn_function_lines(runs, lines, summary)
    layout_lines(runs, lines)
    missing = missing_results(runs)
    if missing:
        # Planned and not measured: no goal of it can pass.
        lines.append("- planned without results: " + "; ".join(
            f"{m['kernel']} {m['device']}{' ' + m['transport'] if m['transport'] else ''} "
            f"({m['why']})" for m in missing))
        rc = 1
    summary["missing"] = missing
    summary["goals"] = goals(main_rr, main_mc, baseline, missing)
    summary["run_time"] = run_time(runs)
    run_time_lines(summary["run_time"], lines)
    emulator_lines(runs, lines)
    head = ["# napi-series benchmarks", ""]
    goal_lines(summary["goals"], head)
    collapse_head(summary["collapse"], head)
    summary["spinning"] = spinning_rows(runs)
    spinning_head(summary["spinning"], head)
    lines = head + ["", "## Runs", ""] + lines
    # One kernel's figures per plot: the patched one's where there are several.
    plotted = "patched" if "patched" in main_rr else min(main_rr, default=None)
    summary["plots"] = plots(top, main_rr.get(plotted, {}), main_mc.get(plotted, {}))
    with open(os.path.join(top, "bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(top, "bench.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    with open(os.path.join(top, "seed-tables.md"), "w") as f:
        f.write("\n".join(seed_table_lines(runs)) + "\n")
    print("\n".join(lines))
    print(f"\n(tables: {top}/bench.md, the seeds' own layout: {top}/seed-tables.md, "
          f"JSON: {top}/bench.json, plots: "
          f"{', '.join(summary['plots']) or 'none'})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
