#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the JSON lines of the bench runs under DIR (run*/rr.jsonl,
run*/mc.jsonl) into seed-style markdown tables (DIR/bench.md), one JSON
summary (DIR/bench.json) and plots (DIR/*.png). Every number is the
median over the repetitions; spread is min..max. Exit 1 when a run has
no usable cell.
"""

import glob
import json
import os
import statistics
import sys
from collections import defaultdict

PCTS = ("p5", "p50", "p95", "p99")


def load_runs(top):
    runs = []
    for d in sorted(glob.glob(os.path.join(top, "run*"))):
        run = {"dir": os.path.basename(d), "label": read(d, "kernel-label", "?"),
               "accel": read(d, "accel", "?"), "plan": os.path.basename(d).rsplit("-", 1)[-1]}
        try:
            with open(os.path.join(d, "machine.json")) as f:
                run["machine"] = json.load(f)
        except (OSError, ValueError):
            run["machine"] = {}
        for bench in ("rr", "mc"):
            run[bench] = []
            path = os.path.join(d, f"{bench}.jsonl")
            if os.path.exists(path):
                with open(path) as f:
                    run[bench] = [json.loads(line) for line in f if line.strip()]
        runs.append(run)
    return runs


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


def ratio(a, b):
    return round(a / b, 2) if a is not None and b else None


# --- request/response latency (issue: seed 000) -----------------------------

def rr_cells(cells):
    """(device, transport, rate, delay, mode) -> aggregated medians."""
    groups = defaultdict(list)
    for c in cells:
        if c.get("status") == "ok":
            groups[(c["device"], c["transport"], c["rate"], c["delay_us"], c["mode"])].append(c)
    agg = {}
    for key, cs in groups.items():
        # A cell without any reply has no latency, but its loss counts.
        lat = [c["client"]["latency_ns"] or {} for c in cs]
        cnt = [c["counters"] for c in cs]
        a = {p: med([x.get(p) / 1000 if x.get(p) is not None else None for x in lat])
             for p in PCTS + ("p999", "max")}
        a["p99_spread"] = [x / 1000 if x is not None else None
                           for x in spread([x.get("p99") for x in lat])]
        a["reps"] = len(cs)
        a["lost"] = sum(c["client"].get("lost", 0) for c in cs)
        a["sent"] = sum(c["client"].get("sent", 0) for c in cs)
        for k in ("net_rx_softirqs_per_req", "napi_polls_per_req", "ctx_switches_per_req",
                  "dev_irqs_per_req"):
            a[k] = med([x.get(k) for x in cnt])
        a["cpu_busy_pct"] = {cpu: med([x["cpu_busy_pct"].get(cpu) for x in cnt])
                             for cpu in cnt[0]["cpu_busy_pct"]}
        # XDP hook to application, from the XDP metadata stamp.
        for p in ("p50", "p99"):
            a[f"deliver_{p}"] = med([c["client"][f"deliver_{p}_ns"] / 1000 for c in cs
                                     if c["client"].get(f"deliver_{p}_ns") is not None])
        agg[key] = a
    return agg


def rr_tables(run, agg, lines, summary):
    modes = sorted({k[4] for k in agg}, key=MODE_ORDER.index)
    combos = sorted({k[:2] for k in agg})
    for device, transport in combos:
        lines.append(f"\n### {device}, {transport.upper()}: latency in us ({run['label']} kernel)\n")
        lines.append("| Experiment | " + " | ".join(modes) + " |")
        lines.append("|---|" + "---|" * len(modes))
        workloads = sorted({k[2:4] for k in agg if k[:2] == (device, transport)},
                           key=lambda w: WORKLOAD_ORDER.get(w, 99))
        for rate, delay in workloads:
            cells = [agg.get((device, transport, rate, delay, m)) for m in modes]
            lines.append(f"| {rate} pkt/s + {delay}us delay |" + " |" * len(modes))
            for p in PCTS:
                row = [f"{p}: {fmt(c[p])}" if c else "-" for c in cells]
                lines.append("| | " + " | ".join(row) + " |")
            row = [f"p99 spread {fmt(c['p99_spread'][0])}..{fmt(c['p99_spread'][1])}"
                   if c else "-" for c in cells]
            lines.append("| | " + " | ".join(row) + " |")
            row = [f"lost {c['lost']}/{c['sent']}" if c else "-" for c in cells]
            lines.append("| | " + " | ".join(row) + " |")
            if any(c and c["deliver_p50"] is not None for c in cells):
                row = [f"XDP→app p50/p99: {fmt(c['deliver_p50'])}/{fmt(c['deliver_p99'])}"
                       if c else "-" for c in cells]
                lines.append("| | " + " | ".join(row) + " |")
            ratios = {}
            thr = agg.get((device, transport, rate, delay, "threaded-busy"))
            for ref in ("interrupts", "busy-thread"):
                base = agg.get((device, transport, rate, delay, ref))
                if thr and base:
                    ratios[f"threaded_p99_over_{ref}_p99"] = ratio(thr["p99"], base["p99"])
            summary["rr"].append({"kernel": run["label"], "device": device, "transport": transport,
                                  "rate": rate, "delay_us": delay, "ratios": ratios,
                                  "modes": {m: agg.get((device, transport, rate, delay, m))
                                            for m in modes}})
        lines.append(f"\n{device}, {transport.upper()}: per request, medians "
                     "(NET_RX softirqs, NAPI polls, context switches, device IRQs; CPU busy %)\n")
        lines.append("| workload | mode | softirq/req | polls/req | ctxsw/req | irq/req | CPU% |")
        lines.append("|---|---|---|---|---|---|---|")
        for rate, delay in workloads:
            for m in modes:
                c = agg.get((device, transport, rate, delay, m))
                if c:
                    cpu = "/".join(fmt(v, 0) for v in c["cpu_busy_pct"].values())
                    lines.append(f"| {rate}+{delay}us | {m} | {fmt(c['net_rx_softirqs_per_req'], 2)} | "
                                 f"{fmt(c['napi_polls_per_req'], 2)} | "
                                 f"{fmt(c['ctx_switches_per_req'], 2)} | "
                                 f"{fmt(c['dev_irqs_per_req'], 2)} | {cpu} |")


MODE_ORDER = ["interrupts", "busy-inline", "busy-thread", "threaded-busy", "epoll-prefer",
              "epoll-suspend"]
WORKLOAD_ORDER = {}


def rr_ratio_lines(summary, lines):
    lines.append("\n### Threaded busy poll p99 relative to interrupts and to busy-thread\n")
    lines.append("| device | transport | workload | threaded/interrupts | threaded/busy-thread |")
    lines.append("|---|---|---|---|---|")
    for s in summary["rr"]:
        r = s["ratios"]
        if r:
            lines.append(f"| {s['device']} | {s['transport']} | {s['rate']}+{s['delay_us']}us | "
                         f"{fmt(r.get('threaded_p99_over_interrupts_p99'), 2)} | "
                         f"{fmt(r.get('threaded_p99_over_busy-thread_p99'), 2)} |")


def baseline_lines(runs, lines, summary):
    """Patched vs base, interrupt mode, from the baseline-plan runs."""
    by_label = {r["label"]: rr_cells(r["rr"]) for r in runs if r["plan"] == "baseline"}
    if "base" not in by_label or "patched" not in by_label:
        return
    lines.append("\n### Cost when off: patched / base, interrupt mode (1.00 = no cost)\n")
    lines.append("| device | transport | workload | p50 | p99 | softirq/req | ctxsw/req |")
    lines.append("|---|---|---|---|---|---|---|")
    metrics = ("p50", "p99", "net_rx_softirqs_per_req", "ctx_switches_per_req")
    rows = []
    for key, base in sorted(by_label["base"].items()):
        new = by_label["patched"].get(key)
        if not new:
            continue
        row = {k: ratio(new[k], base[k]) for k in metrics}
        rows.append(row)
        summary["baseline"].append({"device": key[0], "transport": key[1], "rate": key[2],
                                    "delay_us": key[3], "patched_over_base": row})
        lines.append(f"| {key[0]} | {key[1]} | {key[2]}+{key[3]}us | {fmt(row['p50'], 2)} | "
                     f"{fmt(row['p99'], 2)} | {fmt(row['net_rx_softirqs_per_req'], 2)} | "
                     f"{fmt(row['ctx_switches_per_req'], 2)} |")
    # One number per metric: the geometric mean over all cells.
    overall = {k: round(statistics.geometric_mean([r[k] for r in rows if r[k]]), 2)
               for k in metrics if any(r[k] for r in rows)}
    summary["baseline_geomean"] = overall
    lines.append("| all cells | | geometric mean | " +
                 " | ".join(fmt(overall.get(k), 2) for k in metrics) + " |")


# --- memcached under load (issue: seed 001) ---------------------------------

def mc_points(points):
    groups = defaultdict(list)
    for p in points:
        if p.get("status") == "ok":
            groups[(p["device"], p["load"], p["variant"])].append(p)
    agg = {}
    for key, ps in groups.items():
        lg = [p["load_gen"] for p in ps]
        cnt = [p["counters"] for p in ps]
        a = {"qps": med([x["achieved_qps"] for x in lg]),
             "avg": med([x["latency_us"]["avg"] for x in lg]),
             "p95": med([x["latency_us"]["p95"] for x in lg]),
             "p99": med([x["latency_us"]["p99"] for x in lg]),
             "p99_spread": spread([x["latency_us"]["p99"] for x in lg]),
             "cpu": med([p.get("server_cpu_pct") for p in ps]),
             "cpu_us_per_query": med([p.get("memcached_cpu_us_per_query") for p in ps]),
             "errors": sum(x.get("errors", 0) + x.get("timeouts", 0) for x in lg),
             "saturated": sum(bool(x.get("saturated")) for x in lg) * 2 > len(lg),
             "reps": len(ps)}
        for k in ("dev_irqs_per_req", "net_rx_softirqs_per_req", "napi_polls_per_query",
                  "ctx_switches_per_req"):
            a[k] = med([x.get(k) for x in cnt])
        agg[key] = a
    return agg


def load_key(load):
    return float("inf") if load == "MAX" else load


def mc_tables(run, agg, lines, summary):
    for device in sorted({k[0] for k in agg}):
        loads = sorted({k[1] for k in agg if k[0] == device}, key=load_key)
        lines.append(f"\n### memcached on {device} ({run['label']} kernel): medians; "
                     "latency in us, cpu = server core busy %, mc us/q = memcached's own "
                     "CPU time per query, per query: device IRQs, "
                     "NET_RX softirqs, NAPI polls, context switches\n")
        lines.append("| testcase | load | qps | avglat | 95%lat | 99%lat (spread) | cpu | "
                     "mc us/q | irq/q | softirq/q | polls/q | ctxsw/q | sat |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for load in loads:
            for (d, l, variant), a in sorted(agg.items(), key=lambda kv: variant_key(kv[0][2])):
                if d != device or l != load:
                    continue
                lines.append(
                    f"| {variant} | {load} | {fmt(a['qps'], 0)} | {fmt(a['avg'], 0)} | "
                    f"{fmt(a['p95'], 0)} | {fmt(a['p99'], 0)} ({fmt(a['p99_spread'][0], 0)}.."
                    f"{fmt(a['p99_spread'][1], 0)}) | {fmt(a['cpu'], 0)} | "
                    f"{fmt(a['cpu_us_per_query'], 0)} | "
                    f"{fmt(a['dev_irqs_per_req'], 3)} | {fmt(a['net_rx_softirqs_per_req'], 3)} | "
                    f"{fmt(a['napi_polls_per_query'], 3)} | {fmt(a['ctx_switches_per_req'], 2)} | "
                    f"{'yes' if a['saturated'] else 'no'} |")
        mc_findings(device, loads, agg, lines, summary)


def variant_key(name):
    order = ["base", "defer", "fullbusy", "napibusy", "suspend"]
    for i, prefix in enumerate(order):
        if name.startswith(prefix):
            digits = name[len(prefix):]
            return (i, int(digits) if digits.isdigit() else 0)
    return (len(order), 0)


def mc_findings(device, loads, agg, lines, summary):
    variants = sorted({k[2] for k in agg if k[0] == device}, key=variant_key)
    sustained = [l for l in loads if l != "MAX" and all(
        (device, l, v) in agg and not agg[(device, l, v)]["saturated"] and
        not agg[(device, l, v)]["errors"] for v in variants)]
    suspends = [v for v in variants if v.startswith("suspend")]
    defers = [v for v in variants if v.startswith("defer")]
    found = {"device": device, "highest_sustained_load": sustained[-1] if sustained else None}
    if sustained and suspends and (device, sustained[-1], "fullbusy") in agg:
        top, full = sustained[-1], agg[(device, sustained[-1], "fullbusy")]
        for s in suspends:
            a = agg[(device, top, s)]
            found[f"{s}_over_fullbusy_at_{top}"] = {"qps": ratio(a["qps"], full["qps"]),
                                                   "p99": ratio(a["p99"], full["p99"])}
    low = loads[0] if loads else None
    for s in suspends:
        a = agg.get((device, low, s))
        if not a:
            continue
        for ref in defers + ["fullbusy"]:
            b = agg.get((device, low, ref))
            if b:
                found[f"{s}_cpu_over_{ref}_at_{low}"] = ratio(a["cpu"], b["cpu"])
    found["irqs_per_query"] = {f"{v}@{l}": agg[(device, l, v)]["dev_irqs_per_req"]
                               for l in loads for v in variants
                               if (v == "base" or v.startswith(("defer", "suspend")))
                               and (device, l, v) in agg}
    summary["mc_findings"].append(found)
    lines.append(f"\nFindings on {device}: " + json.dumps(found))


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
                    if a:
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
                pts = sorted(((l, a) for (d, l, vv), a in mc_agg.items()
                              if d == device and vv == v and l != "MAX"), key=lambda x: x[0])
                row[0].plot([a["qps"] for _, a in pts], [a["p99"] for _, a in pts], "o-", label=v)
                row[1].plot([l for l, _ in pts], [a["cpu"] for _, a in pts], "o-", label=v)
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


def main():
    top = sys.argv[1]
    runs = load_runs(top)
    if not runs:
        print(f"bench_report: no runs under {top}", file=sys.stderr)
        return 1
    # Rates are scaled to what the VM sustains: order rows by the seed's list.
    for run in runs:
        for c in run["rr"]:
            if "workload" in c:
                WORKLOAD_ORDER[(c["rate"], c["delay_us"])] = c["workload"]
    summary = {"runs": [], "rr": [], "baseline": [], "mc_findings": []}
    lines = ["# napi-series benchmarks", ""]
    rc = 0
    main_rr, main_mc = {}, {}
    for run in runs:
        m = run["machine"]
        tcg = "tcg" in run["accel"]
        lines.append(f"- {run['dir']}: {run['label']} kernel {m.get('kernel', '?')}, plan "
                     f"{run['plan']}, {m.get('vcpus', '?')} vCPUs ({m.get('cpu_model', '?')}), "
                     f"accelerator {run['accel']}")
        errors = [c for c in run["rr"] + run["mc"] if c.get("status") == "error"]
        ok = [c for c in run["rr"] + run["mc"] if c.get("status") == "ok"]
        summary["runs"].append({"dir": run["dir"], "kernel": run["label"], "plan": run["plan"],
                                "accel": run["accel"], "machine": m, "cells_ok": len(ok),
                                "cells_failed": len(errors),
                                "errors": [c.get("error") for c in errors][:20]})
        if errors:
            lines.append(f"  - {len(errors)} cells failed, first: {errors[0].get('error')}")
        if not ok:
            lines.append("  - no usable cell")
            rc = 1
        if tcg:
            lines.append("  - under TCG (emulation) absolute times mean little: read the ratios "
                         "between modes and the per-request counts")
        if run["plan"] != "baseline":
            main_rr.update(rr_cells(run["rr"]))
            main_mc.update(mc_points(run["mc"]))
            rr_tables(run, rr_cells(run["rr"]), lines, summary)
            mc_tables(run, mc_points(run["mc"]), lines, summary)
    rr_ratio_lines(summary, lines)
    baseline_lines(runs, lines, summary)
    summary["plots"] = plots(top, main_rr, main_mc)
    with open(os.path.join(top, "bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(top, "bench.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    print("\n".join(lines))
    print(f"\n(tables: {top}/bench.md, JSON: {top}/bench.json, plots: "
          f"{', '.join(summary['plots']) or 'none'})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
